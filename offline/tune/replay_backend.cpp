// Replayed dataset: each measured (collective, bytes) point of one communicator shape answers with
// its recorded repeats, every one a sample. Half-forced rows (only NCCL_ALGO or only NCCL_PROTO)
// stay their own arm; the configuration a rule would write for them is what NCCL's model says
// NCCL ran (sim/replay). A point without a default row is compared against the arm NCCL's model
// would pick there, or reported as undecidable.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "offline/model/model.h"
#include "offline/sim/sim.h"
#include "offline/tune/measurement_backend.h"

namespace dynamiccl::tune {
namespace {

std::string algoProtoLabel(const sim::Config& c) {
  return std::string(algoName(c.algo)) + "/" + std::string(protoName(c.proto));
}

class ReplayBackend final : public MeasurementBackend {
 public:
  ReplayBackend(sim::ReplayData data, const sim::Shape* shape, const std::string& group,
                const std::vector<sim::MeasuredPoint>& points, std::vector<std::string> notes,
                std::optional<ClusterHardware> hardware)
      : data_(std::move(data)), shape_(shape), notes_(std::move(notes)), hardware_(std::move(hardware)) {
    for (const sim::MeasuredPoint& p : points)
      if (p.group == group && p.system == shape_->system && p.nRanks == shape_->nRanks && p.nNodes == shape_->nNodes)
        arms_.insert_or_assign(std::make_pair(int(p.coll), p.bytes), armsOf(p));
  }
  std::string name() const override {
    return "replay " + shape_->system + " " + std::to_string(shape_->nRanks) + "r/" + std::to_string(shape_->nNodes) + "n";
  }
  int nRanks() const override { return shape_->nRanks; }
  int nNodes() const override { return shape_->nNodes; }
  int maxSamplesPerConfig() const override {
    size_t most = 1;
    for (const auto& [k, a] : arms_)
      if (a)
        for (const ConfigStats& s : *a) most = std::max(most, s.samples_us.size());
    return static_cast<int>(most);
  }
  bool recorded() const override { return true; }
  Expected<std::vector<ConfigStats>> recordedArms(const MeasureKey& k) const override {
    const auto it = arms_.find({int(k.coll), k.bytes});
    if (it == arms_.end()) return makeError("not measured");
    return it->second;
  }
  std::vector<std::string> dataNotes() const override { return notes_; }
  // The data records no algorithm for its default rows: NCCL's model says what NCCL ran, as
  // `dynamiccl replay` takes it when it judges a decision (forcing that is judged as the default).
  std::optional<Config> ncclDefaultRuns(const MeasureKey& k) const override {
    const sim::Config d = shape_->nccl->defaultConfig(k.coll, k.bytes);
    if (d.algo == Algo::Default) return std::nullopt;
    return Config{d.algo, d.proto, 0, 0};
  }
  policy::Provenance provenance() const override { return policy::Provenance::MeasuredOffline; }
  std::optional<ClusterHardware> measuredOn() const override { return hardware_; }
  std::vector<uint64_t> measurableSizes(Collective coll) const override {
    std::vector<uint64_t> out;
    for (const auto& [k, a] : arms_)
      if (k.first == int(coll)) out.push_back(k.second);
    return out;
  }
  bool available(const Config& c, const MeasureKey& k) const override { return find(c, k) != nullptr; }
  std::optional<double> expected_us(const Config& c, const MeasureKey& k) const override {
    const ConfigStats* s = find(c, k);
    return s ? std::optional<double>(s->median_us()) : std::nullopt;
  }
  // Every recorded repeat of the arm, however many are asked for: a dataset cannot measure more.
  Expected<std::vector<double>> measure(const Config& c, const MeasureKey& k, int, const JobKnobs&) override {
    const ConfigStats* s = find(c, k);
    if (!s) return makeError("replay: " + configLabel(c) + " not measured at " + std::to_string(k.bytes) + " B");
    return s->samples_us;
  }

 private:
  const ConfigStats* find(const Config& c, const MeasureKey& k) const {
    const auto it = arms_.find({int(k.coll), k.bytes});
    if (it == arms_.end() || !it->second) return nullptr;
    if (c.nChannels != 0 || c.chunkBytes != 0) return nullptr;  // no public data sweeps channels or chunks
    for (const ConfigStats& s : *it->second)
      if (s.config == c) return &s;
    return nullptr;
  }

  Expected<std::vector<ConfigStats>> armsOf(const sim::MeasuredPoint& p) const {
    std::vector<ConfigStats> out(1);
    bool haveDefault = false;
    for (const sim::MeasuredArm& a : p.arms) {
      if (!a.forced()) {
        out[0] = ConfigStats{keepDefault(), a.samples_us, a.label()};
        haveDefault = true;
        continue;
      }
      const sim::Config r = shape_->nccl->restrictedConfig(p.coll, p.bytes, a.forcedAlgo, a.forcedProto);
      if (r.algo == Algo::Default) continue;  // NCCL could not run it: nothing to choose
      out.push_back(ConfigStats{Config{r.algo, r.proto, 0, 0}, a.samples_us, a.label()});
    }
    if (haveDefault) return out;
    // No default row: NCCL's own pick per its model stands in, when that arm was measured.
    const sim::Config d = shape_->nccl->defaultConfig(p.coll, p.bytes);
    for (size_t i = 1; i < out.size(); ++i)
      if (out[i].config.algo == d.algo && out[i].config.proto == d.proto) {
        out[0] = ConfigStats{keepDefault(), out[i].samples_us, out[i].arm + " as NCCL's default (model: " +
                                                                   algoProtoLabel(d) + ")"};
        out.erase(out.begin() + static_cast<long>(i));
        return out;
      }
    if (d.algo == Algo::Default) return makeError("no default row, and NCCL's model has no choice here");
    return makeError("no default row, and " + algoProtoLabel(d) + " (NCCL's pick per its model) was not measured");
  }

  sim::ReplayData data_;
  const sim::Shape* shape_;
  std::vector<std::string> notes_;
  std::optional<ClusterHardware> hardware_;  // nullopt: unknown hardware (the rules stay unverified)
  std::map<std::pair<int, uint64_t>, Expected<std::vector<ConfigStats>>> arms_;
};

// The platform whose NCCL model stands in where no platform describes the data's system: it only
// reads half-forced rows and marks what NCCL's table would never run; no fact of it reaches a rule.
constexpr const char* kStandInPlatform = "dgx-h100";

bool matchesShape(const sim::ReplayPoint& p, const ReplayBackendOptions& o) {
  return (o.nRanks == 0 || p.shape->nRanks == o.nRanks) && (o.nNodes == 0 || p.shape->nNodes == o.nNodes);
}

}  // namespace

Expected<std::unique_ptr<MeasurementBackend>> makeReplayBackend(const ReplayBackendOptions& o) {
  auto rows = sim::loadMeasurements(o.csvPath);
  if (!rows) return makeError("replay backend: " + rows.error());
  auto data = sim::buildReplayData(rows->rows, o.system, o.platform);
  if (!data) return makeError("replay backend: " + data.error());
  std::vector<std::string> notes;
  bool standIn = false;
  if (o.platform.empty() &&
      std::none_of(data->points.begin(), data->points.end(), [&](const sim::ReplayPoint& p) { return matchesShape(p, o); })) {
    // Tuning from measurements needs no platform file: the data decides; a model only reads its rows.
    auto again = sim::buildReplayData(rows->rows, o.system, kStandInPlatform);
    if (again && std::any_of(again->points.begin(), again->points.end(),
                             [&](const sim::ReplayPoint& p) { return matchesShape(p, o); })) {
      for (const std::string& line : sim::describeSkipped(data->skipped))
        notes.push_back("no platform describes the data (" + line + "): NCCL's model of " + kStandInPlatform +
                        " stands in to read half-forced rows and NCCL's table; no fact of it reaches a rule");
      data = std::move(again);
      standIn = true;
    }
  }
  for (const auto& [why, n] : rows->skipped) notes.push_back(std::to_string(n) + " rows not read: " + why);
  for (const std::string& line : sim::describeSkipped(data->skipped)) notes.push_back(line);
  // The requested shape, or the one with most forced measurements (what tuning can use); one
  // environment variant (group) of it, since variants are not repeats of each other.
  std::map<std::pair<const sim::Shape*, std::string>, int> score;
  for (const sim::ReplayPoint& p : data->points)
    if ((o.nRanks == 0 || p.shape->nRanks == o.nRanks) && (o.nNodes == 0 || p.shape->nNodes == o.nNodes))
      score[{p.shape, p.group}] += 1 + static_cast<int>(p.forced_us.size()) * 4;
  const std::pair<const sim::Shape*, std::string>* best = nullptr;
  for (const auto& [s, n] : score)
    if (!best || n > score[*best]) best = &s;
  if (!best) {
    std::string why;
    for (const std::string& line : sim::describeSkipped(data->skipped)) why += "; " + line;
    return makeError("replay backend: no measurements match in " + o.csvPath + " (ranks " + std::to_string(o.nRanks) +
                     ", nodes " + std::to_string(o.nNodes) + ", system '" + o.system + "')" + why);
  }
  const sim::Shape* shape = best->first;
  // One shape per run, never others dropped without a word: each is named with how to tune it too.
  std::map<std::string, int> others;
  for (const sim::ReplayPoint& p : data->points)
    if (!(p.shape == shape && p.group == best->second))
      ++others[std::to_string(p.shape->nRanks) + "r/" + std::to_string(p.shape->nNodes) + "n of '" + p.group.substr(0, 48) + "'"];
  for (const auto& [what, keys] : others)
    notes.push_back("not tuned in this run: " + what + " (" + std::to_string(keys) + " keys): tune it with --nranks/"
                    "--nodes/--system, then `dynamiccl merge` the profiles into one");
  std::optional<ClusterHardware> hardware = o.declared;
  if (!hardware && !standIn) {
    hardware = model::clusterHardwareOf(shape->topology);
    hardware->source = o.platform.empty() ? "dataset system " + shape->system : "--measured-on " + o.platform;
  }
  if (!hardware)
    notes.push_back("unknown hardware: no platform describes '" + shape->system +
                    "' and no fingerprint was declared (`dynamiccl probe -o FILE` on the machine, then --fingerprint "
                    "FILE): the rules carry none, so the plugin tests them in the job before they count");
  const std::string group = best->second;
  std::vector<sim::Measurement> kept;
  for (const sim::Measurement& m : rows->rows)
    if (m.system == shape->system && m.group == group) kept.push_back(m);
  return std::unique_ptr<MeasurementBackend>(std::make_unique<ReplayBackend>(
      std::move(data.value()), shape, group, sim::groupRepeats(kept), std::move(notes), std::move(hardware)));
}

}  // namespace dynamiccl::tune
