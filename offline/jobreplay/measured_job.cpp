// A dataset's keys of one communicator shape, with every repeat of every measured configuration.
// Medians, repeats, their fitted noise and what NCCL's default rows ran are measurements::buildReplayData's
// (what `dynamiccl replay` and `tune --backend replay` judge by): one settlement for every judge.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "offline/jobreplay/jobreplay.h"

namespace dynamiccl::jobreplay {
namespace {

using ShapeKey = std::tuple<std::string, int, int>;                  // group, ranks, nodes

bool sameArm(const sim::Config& a, Algo algo, Proto proto, int nChannels = 0) {
  return a.algo == algo && a.proto == proto && a.nChannels == nChannels && a.chunkBytes == 0;
}

// The key of one replay point: its measured configurations with their repeats; nullopt (and a
// note) when NCCL's default was not measured there. Only default rows are NCCL's default; a forced
// row is its own arm, even of the configuration NCCL's model guesses NCCL would pick, unless the
// settlement found it the same arm (a TUNING line, or runs that cannot tell it from the default rows).
std::optional<JobKey> makeKey(const measurements::ReplayPoint& p, std::map<std::string, int>& unused) {
  JobKey k;
  k.coll = p.coll;
  k.bytes = p.bytes;
  k.ncclDefault = p.ncclDefault;
  k.defaultSettledBy = p.defaultSettledBy;
  k.defaultChannels = p.defaultChannels;
  k.costTable = p.costTable();
  if (p.default_us <= 0) {
    ++unused["keys without NCCL's default measured (no default rows: nothing to compare a choice with)"];
    return std::nullopt;
  }
  MeasuredConfig byDefault;
  // The default rows ran NCCL's own channel count and chunk: the arm at count 0, as forced arms are keyed.
  byDefault.config = sim::Config{p.ncclDefault.algo, p.ncclDefault.proto, 0, 0};
  byDefault.mean_us = p.default_us;
  byDefault.samples_us = p.default_samples_us;
  byDefault.sigma = p.default_sigma;
  byDefault.ncclChannels = p.defaultChannels > 0 ? p.defaultChannels
                                                 : p.shape->nccl->channels(p.ncclDefault.algo, p.ncclDefault.proto, p.bytes);
  k.measured.push_back(byDefault);
  for (const auto& [arm, t] : p.forced_us) {
    if (p.isDefaultsTwin(arm)) continue;  // the default's arm again
    // NCCL's table marks what it would never run here (e.g. LL128 over PCIe); a forced run may have
    // measured it, but no tuner can choose it: it stays out of the key.
    if (!(k.costTable[int(arm.algo)][int(arm.proto)] >= 0)) {
      ++unused["measured configurations NCCL's cost table marks IGNORE (only forcing runs them)"];
      continue;
    }
    MeasuredConfig mc;
    mc.config = arm;  // at the channel count its rows forced (0: NCCL's own), never pooled with another
    mc.forced = true;
    mc.mean_us = t;
    mc.samples_us = p.forced_samples_us.at(arm);
    mc.sigma = p.forced_sigma.at(arm);
    mc.ncclChannels = p.shape->nccl->channels(arm.algo, arm.proto, p.bytes);
    k.measured.push_back(mc);
  }
  // Configurations never measured are IGNORE: the tuner can only pick what the data can time (a pair
  // measured only at forced counts runs at the nearest of them: JobKey::run).
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q)
      if (!k.measuredPair(Algo(a), Proto(q))) k.costTable[a][q] = -1.0f;
  return k;
}

}  // namespace

int MeasuredJob::keysSettled(measurements::DefaultSettledBy c) const {
  return static_cast<int>(
      std::count_if(keys.begin(), keys.end(), [c](const JobKey& k) { return k.defaultSettledBy == c; }));
}

const MeasuredConfig* JobKey::find(Algo algo, Proto proto, bool forcedByTuner, int nChannels) const {
  const MeasuredConfig* any = nullptr;
  for (const MeasuredConfig& m : measured)
    if (sameArm(m.config, algo, proto, nChannels)) {
      if (m.forced == forcedByTuner) return &m;
      if (!any) any = &m;
    }
  return any;
}

bool JobKey::measuredPair(Algo algo, Proto proto) const {
  return std::any_of(measured.begin(), measured.end(), [&](const MeasuredConfig& m) {
    return m.config.algo == algo && m.config.proto == proto && m.config.chunkBytes == 0;
  });
}

JobKey::Run JobKey::run(Algo algo, Proto proto, bool forcedByTuner, int tunerChannels, abi::PickRule rule) const {
  const MeasuredConfig* own = find(algo, proto, forcedByTuner);  // at the host's own count
  std::vector<const MeasuredConfig*> counted;                    // the pair at forced counts
  for (const MeasuredConfig& m : measured)
    if (m.config.algo == algo && m.config.proto == proto && m.config.nChannels > 0 && m.config.chunkBytes == 0)
      counted.push_back(&m);
  if (counted.empty() || (own && tunerChannels <= 0)) {
    if (!own) return {};
    return {own, abi::channelsRun(rule, tunerChannels, own->ncclChannels > 0 ? own->ncclChannels : std::max(tunerChannels, 1))};
  }
  const int hostOwn = own && own->ncclChannels > 0 ? own->ncclChannels
                      : defaultChannels > 0        ? defaultChannels
                                                   : counted.front()->ncclChannels;
  const int want = std::max(1, abi::channelsRun(rule, tunerChannels, std::max(hostOwn, 1)));
  if (own && !own->forced && want == hostOwn) return {own, hostOwn};  // the default again
  std::vector<int> counts;
  for (const MeasuredConfig* m : counted) counts.push_back(m->config.nChannels);
  const int ran = measurements::nearestMeasuredCount(counts, want);
  for (const MeasuredConfig* m : counted)
    if (m->config.nChannels == ran) return {m, ran};
  return {};
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

const MeasuredConfig& JobKey::bestEstablished() const {
  return *std::min_element(measured.begin(), measured.end(),
                           [](const MeasuredConfig& a, const MeasuredConfig& b) { return a.draw_us() < b.draw_us(); });
}

int MeasuredJob::withholdGains(const std::function<bool(const JobKey&, const MeasuredConfig&)>& established) {
  int withheld = 0;
  for (JobKey& k : keys)
    for (size_t i = 1; i < k.measured.size(); ++i) {
      MeasuredConfig& m = k.measured[i];
      m.withheld_us = 0;
      if (m.mean_us < k.byDefault().mean_us && !established(k, m)) m.withheld_us = k.byDefault().mean_us, ++withheld;
    }
  return withheld;
}

Expected<MeasuredJob> loadMeasuredJob(const std::string& csvPath, const ShapeChoice& choice) {
  auto loaded = measurements::loadMeasurements(csvPath);
  if (!loaded) return makeError(loaded.error());
  auto data = measurements::buildReplayData(loaded->rows);
  if (!data) return makeError(data.error());

  std::map<ShapeKey, std::vector<JobKey>> shapes;
  std::map<ShapeKey, const measurements::Shape*> shapeOf;
  std::map<ShapeKey, std::map<std::string, int>> unused;  // per shape: what its keys could not use
  for (const measurements::ReplayPoint& p : data->points) {
    const ShapeKey sk{p.group, p.shape->nRanks, p.shape->nNodes};
    if ((choice.nRanks && p.shape->nRanks != choice.nRanks) || (choice.nNodes && p.shape->nNodes != choice.nNodes) ||
        (!choice.system.empty() && p.group.find(choice.system) == std::string::npos))
      continue;
    if (auto k = makeKey(p, unused[sk])) {
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
    for (const std::string& line : measurements::describeSkipped(data->skipped)) reasons += "; " + line;
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
  job.repeatSigma = data->repeatSigma;
  job.repeatGroups = data->repeatGroups;
  using measurements::DefaultSettledBy;
  if (const int n = job.keysSettled(DefaultSettledBy::Stated))
    job.notes.push_back(std::to_string(n) + " keys where the default rows quote NCCL's TUNING line: NCCL's choice is what "
                        "it said it ran, and forcing that configuration is the same arm");
  if (const int n = job.keysSettled(DefaultSettledBy::Confirmed))
    job.notes.push_back(std::to_string(n) + " forced configurations equal to NCCL's default by the model whose runs "
                        "cannot be told from the default rows: the same configuration measured twice");
  const int matched = job.keysSettled(DefaultSettledBy::Matched);
  const int unforced = job.keysSettled(DefaultSettledBy::Unforced);
  if (matched + unforced)
    job.notes.push_back(std::to_string(matched + unforced) + " keys where the forced runs of the configuration NCCL's "
                        "model picks differ from the default rows beyond noise: NCCL ran something else there, so that "
                        "configuration is an arm the job can test, and NCCL's choice is the forced configuration the "
                        "default rows match within noise (" + std::to_string(matched) + ") or one no row forced (" +
                        std::to_string(unforced) + ")");
  if (const int n = job.keysSettled(DefaultSettledBy::Refuted))
    job.notes.push_back(std::to_string(n) + " keys where the model's pick differs from the default rows beyond noise but "
                        "every configuration NCCL's table allows was forced and none matches them: the model's pick stays "
                        "NCCL's choice, so its forced runs cannot be tested apart from it");
  for (const std::string& line : data->notes)
    if (line.find("'" + shapeOf[*pick]->system + "'") != std::string::npos) job.notes.push_back(line);
  job.standIn = shapeOf[*pick]->standIn;
  for (const std::string& line : measurements::describeSkipped(loaded->skipped)) job.notes.push_back(line);
  for (const std::string& line : measurements::describeSkipped(data->skipped)) job.notes.push_back(line);
  for (const auto& [why, n] : unused[*pick]) job.notes.push_back(std::to_string(n) + " " + why);
  return job;
}

}  // namespace dynamiccl::jobreplay
