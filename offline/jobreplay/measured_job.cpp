// A dataset's keys of one communicator shape, with every repeat of every measured configuration.
// Means and NCCL's default are sim::buildReplayData's (what `dynamiccl replay` judges by); the
// repeats come from sim::groupRepeats, each forced row resolved to what NCCL ran as buildReplayData does.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "offline/jobreplay/jobreplay.h"

namespace dynamiccl::jobreplay {
namespace {

using PointKey = std::tuple<std::string, int, int, int, uint64_t>;  // group, ranks, nodes, collective, bytes
using ShapeKey = std::tuple<std::string, int, int>;                  // group, ranks, nodes

bool sameArm(const sim::Config& a, Algo algo, Proto proto) { return a.algo == algo && a.proto == proto; }

// Pooled standard deviation of log(time) between repeats of one arm at one point.
void poolRepeatSpread(const std::vector<sim::MeasuredPoint>& points, MeasuredJob& job) {
  double ss = 0;
  int dof = 0;
  for (const sim::MeasuredPoint& p : points)
    for (const sim::MeasuredArm& a : p.arms) {
      if (a.samples_us.size() < 2) continue;
      double mean = 0;
      for (double t : a.samples_us) mean += std::log(t);
      mean /= static_cast<double>(a.samples_us.size());
      for (double t : a.samples_us) ss += (std::log(t) - mean) * (std::log(t) - mean);
      dof += static_cast<int>(a.samples_us.size()) - 1;
      ++job.repeatGroups;
    }
  if (dof > 0) job.repeatSigma = std::sqrt(ss / dof);
}

// Each configuration's noise: its repeats' spread, shrunk toward the spread of every repeat at its
// key and the two sizes either side (noise is relative, and a dataset's small sizes may spread far
// more than its large ones), else toward the dataset's.
void fitNoise(MeasuredJob& job) {
  constexpr int kNeighbours = 2;
  const int n = static_cast<int>(job.keys.size());
  for (int i = 0; i < n; ++i) {
    double ss = 0, dof = 0;
    for (int j = std::max(0, i - kNeighbours); j <= std::min(n - 1, i + kNeighbours); ++j) {
      if (job.keys[j].coll != job.keys[i].coll) continue;
      for (const MeasuredConfig& m : job.keys[j].measured) {
        if (m.samples_us.size() < 2) continue;
        double mean = 0;
        for (double t : m.samples_us) mean += std::log(t) / static_cast<double>(m.samples_us.size());
        for (double t : m.samples_us) ss += (std::log(t) - mean) * (std::log(t) - mean);
        dof += static_cast<double>(m.samples_us.size() - 1);
      }
    }
    const double local = dof > 0 ? std::sqrt(ss / dof) : job.repeatSigma;
    for (MeasuredConfig& m : job.keys[i].measured) m.sigma = fittedSigma(m.samples_us, local);
  }
}

// A forced arm of the configuration the model guesses NCCL picks is its own arm: NCCL may have chosen
// otherwise (its rows then differ beyond noise, as forcing Ring on a B200 whose NCCL ran NVLS). Within
// the repeats' noise of the default rows it is that configuration measured twice: folded away, so
// run-to-run noise is never offered as a gain. Returns how many were folded.
int foldTwinsOfTheDefault(MeasuredJob& job) {
  int folded = 0;
  for (JobKey& k : job.keys) {
    const MeasuredConfig& def = k.byDefault();
    for (auto it = k.measured.begin() + 1; it != k.measured.end();) {
      const double n1 = static_cast<double>(std::max<size_t>(1, def.samples_us.size()));
      const double n2 = static_cast<double>(std::max<size_t>(1, it->samples_us.size()));
      const double noise = std::max(0.02, 3 * job.repeatSigma * std::sqrt(1 / n1 + 1 / n2));
      if (it->forced && sameArm(it->config, def.config.algo, def.config.proto) &&
          std::abs(std::log(it->mean_us / def.mean_us)) <= noise) {
        it = k.measured.erase(it);
        ++folded;
      } else {
        ++it;
      }
    }
  }
  return folded;
}

// The key of one replay point: its measured configurations with their repeats; nullopt (and a
// note) when NCCL's default was not measured there. Only default rows are NCCL's default; a forced
// row is its own arm, even of the configuration NCCL's model guesses NCCL would pick.
std::optional<JobKey> makeKey(const sim::ReplayPoint& p, const sim::MeasuredPoint* repeats,
                              std::map<std::string, int>& unused) {
  JobKey k;
  k.coll = p.coll;
  k.bytes = p.bytes;
  k.ncclDefault = p.ncclDefault;
  k.costTable = p.shape->nccl->costTable(p.coll, p.bytes);
  if (p.default_us <= 0) {
    ++unused["keys without NCCL's default measured (no default rows: nothing to compare a choice with)"];
    return std::nullopt;
  }
  MeasuredConfig byDefault;
  byDefault.config = p.ncclDefault;
  byDefault.mean_us = p.default_us;
  std::map<std::pair<Algo, Proto>, MeasuredConfig> forced;
  for (const auto& [arm, t] : p.forced_us) forced[arm].mean_us = t;
  for (const sim::MeasuredArm& a : repeats ? repeats->arms : std::vector<sim::MeasuredArm>{}) {
    if (!a.forced()) {
      byDefault.samples_us.insert(byDefault.samples_us.end(), a.samples_us.begin(), a.samples_us.end());
      continue;
    }
    const sim::Config c = p.shape->nccl->restrictedConfig(p.coll, p.bytes, a.forcedAlgo, a.forcedProto);
    if (c.algo == Algo::Default) continue;  // buildReplayData skips these rows too
    if (auto it = forced.find({c.algo, c.proto}); it != forced.end())
      it->second.samples_us.insert(it->second.samples_us.end(), a.samples_us.begin(), a.samples_us.end());
  }
  if (byDefault.samples_us.empty()) byDefault.samples_us.push_back(byDefault.mean_us);
  byDefault.ncclChannels = p.shape->nccl->channels(p.ncclDefault.algo, p.ncclDefault.proto, p.bytes);
  k.measured.push_back(byDefault);
  // NCCL's table marks what it would never run here (e.g. LL128 over PCIe); a forced run may have
  // measured it, but no tuner can choose it: it stays out of the key.
  for (auto& [arm, mc] : forced) {
    if (!(k.costTable[int(arm.first)][int(arm.second)] >= 0)) {
      ++unused["measured configurations NCCL's cost table marks IGNORE (only forcing runs them)"];
      continue;
    }
    mc.config = sim::Config{arm.first, arm.second, 0, 0};
    mc.forced = true;
    mc.ncclChannels = p.shape->nccl->channels(arm.first, arm.second, p.bytes);
    if (mc.samples_us.empty()) mc.samples_us.push_back(mc.mean_us);
    k.measured.push_back(mc);
  }
  // Configurations never measured are IGNORE: the tuner can only pick what the data can time.
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q)
      if (!k.find(Algo(a), Proto(q), false)) k.costTable[a][q] = -1.0f;
  return k;
}

}  // namespace

const MeasuredConfig* JobKey::find(Algo algo, Proto proto, bool forcedByTuner) const {
  const MeasuredConfig* any = nullptr;
  for (const MeasuredConfig& m : measured)
    if (sameArm(m.config, algo, proto)) {
      if (m.forced == forcedByTuner) return &m;
      if (!any) any = &m;
    }
  return any;
}

const MeasuredConfig& JobKey::best() const {
  return *std::min_element(measured.begin(), measured.end(),
                           [](const MeasuredConfig& a, const MeasuredConfig& b) { return a.mean_us < b.mean_us; });
}

const MeasuredConfig& JobKey::bestChoosable() const {
  const MeasuredConfig* out = &measured.front();
  for (const MeasuredConfig& m : measured)
    if (m.mean_us < out->mean_us && !(m.forced && sameArm(m.config, ncclDefault.algo, ncclDefault.proto))) out = &m;
  return *out;
}

Expected<MeasuredJob> loadMeasuredJob(const std::string& csvPath, const ShapeChoice& choice) {
  auto loaded = sim::loadMeasurements(csvPath);
  if (!loaded) return makeError(loaded.error());
  auto data = sim::buildReplayData(loaded->rows);
  if (!data) return makeError(data.error());
  const std::vector<sim::MeasuredPoint> repeats = sim::groupRepeats(loaded->rows);
  std::map<PointKey, const sim::MeasuredPoint*> repeatsAt;
  for (const sim::MeasuredPoint& p : repeats) repeatsAt[{p.group, p.nRanks, p.nNodes, int(p.coll), p.bytes}] = &p;

  std::map<ShapeKey, std::vector<JobKey>> shapes;
  std::map<ShapeKey, const sim::Shape*> shapeOf;
  std::map<ShapeKey, std::map<std::string, int>> unused;  // per shape: what its keys could not use
  for (const sim::ReplayPoint& p : data->points) {
    const ShapeKey sk{p.group, p.shape->nRanks, p.shape->nNodes};
    if ((choice.nRanks && p.shape->nRanks != choice.nRanks) || (choice.nNodes && p.shape->nNodes != choice.nNodes) ||
        (!choice.system.empty() && p.group.find(choice.system) == std::string::npos))
      continue;
    const auto at = repeatsAt.find({p.group, p.shape->nRanks, p.shape->nNodes, int(p.coll), p.bytes});
    if (auto k = makeKey(p, at == repeatsAt.end() ? nullptr : at->second, unused[sk])) {
      shapes[sk].push_back(std::move(*k));
      shapeOf[sk] = p.shape;
    }
  }
  // The shape with the most keys that have something to choose among; ties: more ranks.
  const ShapeKey* pick = nullptr;
  auto choosable = [](const std::vector<JobKey>& keys) {
    return std::count_if(keys.begin(), keys.end(), [](const JobKey& k) { return k.measured.size() >= 2; });
  };
  for (const auto& [sk, keys] : shapes)
    if (!pick || choosable(keys) > choosable(shapes[*pick]) ||
        (choosable(keys) == choosable(shapes[*pick]) && std::get<1>(sk) > std::get<1>(*pick)))
      pick = &sk;
  if (!pick) {  // say why: what the matching rows could not give, and what was skipped before
    std::map<std::string, int> why;
    for (const auto& [sk, reasons] : unused)
      for (const auto& [reason, n] : reasons) why[reason] += n;
    std::string reasons;
    for (const auto& [reason, n] : why) reasons += "; " + std::to_string(n) + " " + reason;
    for (const std::string& line : sim::describeSkipped(data->skipped)) reasons += "; " + line;
    return makeError(csvPath + ": no measured shape matches (ranks " + std::to_string(choice.nRanks) + ", nodes " +
                     std::to_string(choice.nNodes) + ", system '" + choice.system + "')" + reasons);
  }

  MeasuredJob job;
  job.source = csvPath;
  job.system = std::get<0>(*pick);
  job.nRanks = std::get<1>(*pick);
  job.nNodes = std::get<2>(*pick);
  job.topology = shapeOf[*pick]->topology;
  job.keys = std::move(shapes[*pick]);
  std::sort(job.keys.begin(), job.keys.end(),
            [](const JobKey& a, const JobKey& b) { return std::tie(a.coll, a.bytes) < std::tie(b.coll, b.bytes); });
  poolRepeatSpread(repeats, job);
  fitNoise(job);
  const int twins = foldTwinsOfTheDefault(job);
  if (twins) job.notes.push_back(std::to_string(twins) + " forced configurations equal to NCCL's default by the model and within "
                                 "the repeats' noise of its rows: taken as the same configuration measured twice");
  for (const std::string& line : sim::describeSkipped(loaded->skipped)) job.notes.push_back(line);
  for (const std::string& line : sim::describeSkipped(data->skipped)) job.notes.push_back(line);
  for (const auto& [why, n] : unused[*pick]) job.notes.push_back(std::to_string(n) + " " + why);
  return job;
}

}  // namespace dynamiccl::jobreplay
