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

// The key of one replay point: its measured configurations with their repeats; nullopt (and a
// note) when NCCL's default was not measured there.
std::optional<JobKey> makeKey(const sim::ReplayPoint& p, const sim::MeasuredPoint* repeats,
                              std::map<std::string, int>& unused) {
  JobKey k;
  k.coll = p.coll;
  k.bytes = p.bytes;
  k.ncclDefault = p.ncclDefault;
  k.costTable = p.shape->nccl->costTable(p.coll, p.bytes);
  std::map<std::pair<Algo, Proto>, MeasuredConfig> byArm;
  const std::pair<Algo, Proto> def{p.ncclDefault.algo, p.ncclDefault.proto};
  if (p.default_us > 0) byArm[def].mean_us = p.default_us;
  for (const auto& [arm, t] : p.forced_us)
    if (arm != def || p.default_us <= 0) byArm[arm].mean_us = t;
  if (!byArm.count(def)) {
    ++unused["keys without NCCL's default measured"];
    return std::nullopt;
  }
  for (const sim::MeasuredArm& a : repeats ? repeats->arms : std::vector<sim::MeasuredArm>{}) {
    std::pair<Algo, Proto> arm = def;
    if (a.forced()) {
      const sim::Config c = p.shape->nccl->restrictedConfig(p.coll, p.bytes, a.forcedAlgo, a.forcedProto);
      if (c.algo == Algo::Default) continue;  // buildReplayData skips these rows too
      arm = {c.algo, c.proto};
      if (arm == def && p.default_us > 0) continue;  // the default's time is its own rows' (as replay judges)
    }
    if (auto it = byArm.find(arm); it != byArm.end())
      it->second.samples_us.insert(it->second.samples_us.end(), a.samples_us.begin(), a.samples_us.end());
  }
  // NCCL's table marks what it would never run here (e.g. LL128 over PCIe); a forced run may have
  // measured it, but no tuner can choose it: it stays out of the key.
  for (auto& [arm, mc] : byArm) {
    const bool inTable = k.costTable[int(arm.first)][int(arm.second)] >= 0;
    if (!inTable && arm != def) {
      ++unused["measured configurations NCCL's cost table marks IGNORE (only forcing runs them)"];
      continue;
    }
    mc.config = arm == def ? p.ncclDefault : sim::Config{arm.first, arm.second, 0, 0};
    mc.ncclChannels = p.shape->nccl->channels(arm.first, arm.second, p.bytes);
    if (mc.samples_us.empty()) mc.samples_us.push_back(mc.mean_us);
    if (arm == def) k.measured.insert(k.measured.begin(), mc);
    else k.measured.push_back(mc);
  }
  // Configurations never measured are IGNORE: the tuner can only pick what the data can time.
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q)
      if (!k.find(Algo(a), Proto(q))) k.costTable[a][q] = -1.0f;
  return k;
}

}  // namespace

const MeasuredConfig* JobKey::find(Algo algo, Proto proto) const {
  for (const MeasuredConfig& m : measured)
    if (sameArm(m.config, algo, proto)) return &m;
  return nullptr;
}

const MeasuredConfig& JobKey::best() const {
  return *std::min_element(measured.begin(), measured.end(),
                           [](const MeasuredConfig& a, const MeasuredConfig& b) { return a.mean_us < b.mean_us; });
}

std::string configLabel(const sim::Config& c) {
  if (c.algo == Algo::Default) return "default";
  return std::string(algoName(c.algo)) + "/" + std::string(protoName(c.proto));
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
  if (!pick) return makeError(csvPath + ": no measured shape matches (ranks " + std::to_string(choice.nRanks) +
                              ", nodes " + std::to_string(choice.nNodes) + ", system '" + choice.system + "')");

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
  for (const std::string& line : sim::describeSkipped(loaded->skipped)) job.notes.push_back(line);
  for (const std::string& line : sim::describeSkipped(data->skipped)) job.notes.push_back(line);
  for (const auto& [why, n] : unused[*pick]) job.notes.push_back(std::to_string(n) + " " + why);
  return job;
}

}  // namespace dynamiccl::jobreplay
