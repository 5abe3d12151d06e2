// Replayed dataset: each measured (collective, bytes) point of one communicator shape answers with
// its recorded repeats, every one a sample. An arm is a configuration: rows forced at two channel
// counts are two arms (the configuration carries the count), never repeats of one; a dataset whose
// rows force no count says so ("channels: not stated"). Half-forced rows (only NCCL_ALGO or only NCCL_PROTO)
// stay their own arm; the configuration a rule would write for them is what NCCL's model says
// NCCL ran (sim/replay). A forced row is its own arm whatever a model guesses NCCL would pick, and
// a point without a default row is undecidable: no vs-default figure is made up.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "offline/model/model.h"
#include "offline/sim/sim.h"
#include "offline/tune/measurement_backend.h"

namespace dynamiccl::tune {
namespace {

class ReplayBackend final : public MeasurementBackend {
 public:
  ReplayBackend(std::shared_ptr<const measurements::ReplayData> data, const measurements::Shape* shape, const std::string& group,
                const std::vector<measurements::MeasuredPoint>& points, std::vector<std::string> notes,
                std::optional<ClusterHardware> hardware)
      : data_(std::move(data)), shape_(shape), group_(group), notes_(std::move(notes)), hardware_(std::move(hardware)) {
    for (const measurements::ReplayPoint& p : data_->points)
      if (p.shape == shape_ && p.group == group_) settled_[{int(p.coll), p.bytes}] = &p;
    for (const measurements::MeasuredPoint& p : points)
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
  // What the default rows ran where the settlement makes its forced twin the same arm (a quoted TUNING
  // line, a pick the runs cannot tell from the default rows, the forced arm they match): no candidate.
  std::optional<Config> ncclDefaultRuns(const MeasureKey& k) const override {
    const measurements::ReplayPoint* p = settled(k.coll, k.bytes);
    if (p && p->isDefaultsTwin(Config{p->ncclDefault.algo, p->ncclDefault.proto, 0, 0}))
      return Config{p->ncclDefault.algo, p->ncclDefault.proto, 0, 0};
    return std::nullopt;
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
    if (!s) return makeError("replay: " + decisionLabel(c) + " not measured at " + std::to_string(k.bytes) + " B");
    return s->samples_us;
  }

 private:
  const measurements::ReplayPoint* settled(Collective coll, uint64_t bytes) const {
    const auto it = settled_.find({int(coll), bytes});
    return it == settled_.end() ? nullptr : it->second;
  }

  const ConfigStats* find(const Config& c, const MeasureKey& k) const {
    const auto it = arms_.find({int(k.coll), k.bytes});
    if (it == arms_.end() || !it->second) return nullptr;
    for (const ConfigStats& s : *it->second)
      if (s.config == c) return &s;
    return nullptr;
  }

  // NCCL's default first. Where the settlement makes a forced arm the default's twin, its runs are
  // more runs of NCCL's configuration (often from the session the other forced arms ran in), not a
  // candidate: a gain over the default must show against them too.
  Expected<std::vector<ConfigStats>> armsOf(const measurements::MeasuredPoint& p) const {
    std::vector<ConfigStats> out(1);
    bool haveDefault = false;
    std::vector<double> twinRuns;
    const measurements::ReplayPoint* settledPoint = settled(p.coll, p.bytes);
    for (const measurements::MeasuredArm& a : p.arms) {
      if (!a.forced()) {
        out[0] = ConfigStats{keepDefault(), a.samples_us, a.label()};
        out[0].statedSumSquares = a.statedSumSquares;
        out[0].statedDof = a.statedDof;
        haveDefault = true;
        continue;
      }
      const sim::Config r = shape_->nccl->restrictedConfig(p.coll, p.bytes, a.forcedAlgo, a.forcedProto);
      if (r.algo == Algo::Default) continue;  // NCCL could not run it: nothing to choose
      const Config arm{r.algo, r.proto, a.forcedChannels, a.forcedChunk};
      if (settledPoint && settledPoint->isDefaultsTwin(arm)) {
        twinRuns.insert(twinRuns.end(), a.samples_us.begin(), a.samples_us.end());
        continue;
      }
      ConfigStats s{arm, a.samples_us, a.label()};
      s.statedSumSquares = a.statedSumSquares;
      s.statedDof = a.statedDof;
      out.push_back(std::move(s));
    }
    if (haveDefault && !twinRuns.empty()) {
      out[0].samples_us.insert(out[0].samples_us.end(), twinRuns.begin(), twinRuns.end());
      out[0].arm += " + its forced twin";
    }
    if (haveDefault) return out;
    return makeError("no default row (NCCL's own choice was not measured; " + std::to_string(out.size() - 1) +
                     " forced arm(s) were): no figure against NCCL's default");
  }

  std::shared_ptr<const measurements::ReplayData> data_;
  const measurements::Shape* shape_;
  std::string group_;
  std::vector<std::string> notes_;
  std::optional<ClusterHardware> hardware_;  // nullopt: unknown hardware (the rules stay unverified)
  std::map<std::pair<int, uint64_t>, const measurements::ReplayPoint*> settled_;  // this shape's points, as settled
  std::map<std::pair<int, uint64_t>, Expected<std::vector<ConfigStats>>> arms_;
};

bool matchesShape(const measurements::ReplayPoint& p, const ReplayBackendOptions& o) {
  return (o.nRanks == 0 || p.shape->nRanks == o.nRanks) && (o.nNodes == 0 || p.shape->nNodes == o.nNodes);
}

// One (shape, environment variant) of the data and how much tuning can use it.
struct Candidate {
  const measurements::Shape* shape = nullptr;
  std::string group;
  int score = 0;
};

std::string shapeName(const measurements::Shape& s, const std::string& group) {
  return std::to_string(s.nRanks) + "r/" + std::to_string(s.nNodes) + "n of '" + group.substr(0, 48) + "'";
}

struct LoadedReplay {
  std::vector<measurements::Measurement> rows;
  std::shared_ptr<const measurements::ReplayData> data;
  std::vector<std::string> notes;
  std::vector<Candidate> candidates;  // matching the options, the most forced measurements first
};

Expected<LoadedReplay> loadReplay(const ReplayBackendOptions& o) {
  auto rows = measurements::loadMeasurements(o.csvPath);
  if (!rows) return makeError("replay backend: " + rows.error());
  auto data = measurements::buildReplayData(rows->rows, o.system, o.platform);
  if (!data) return makeError("replay backend: " + data.error());
  LoadedReplay out;
  for (const std::string& line : data->notes) out.notes.push_back(line);
  for (const auto& [why, n] : rows->skipped) out.notes.push_back(std::to_string(n) + " rows not read: " + why);
  for (const std::string& line : measurements::describeSkipped(data->skipped)) out.notes.push_back(line);
  std::map<std::pair<const measurements::Shape*, std::string>, int> score;
  for (const measurements::ReplayPoint& p : data->points)
    if (matchesShape(p, o)) score[{p.shape, p.group}] += 1 + static_cast<int>(p.forced_us.size()) * 4;
  for (const auto& [s, n] : score) out.candidates.push_back({s.first, s.second, n});
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  if (out.candidates.empty()) {
    std::string why;
    for (const std::string& line : measurements::describeSkipped(data->skipped)) why += "; " + line;
    return makeError("replay backend: no measurements match in " + o.csvPath + " (ranks " + std::to_string(o.nRanks) +
                     ", nodes " + std::to_string(o.nNodes) + ", system '" + o.system + "')" + why);
  }
  out.rows = std::move(rows->rows);
  out.data = std::make_shared<const measurements::ReplayData>(std::move(data.value()));
  return out;
}

std::unique_ptr<MeasurementBackend> backendOf(const LoadedReplay& l, const Candidate& c, std::vector<std::string> notes,
                                              const ReplayBackendOptions& o) {
  std::optional<ClusterHardware> hardware = o.declared;
  if (!hardware && c.shape->standIn.empty()) {
    hardware = model::clusterHardwareOf(c.shape->topology);
    hardware->source = o.platform.empty() ? "dataset system " + c.shape->system : "--measured-on " + o.platform;
  }
  if (!hardware)
    notes.push_back("unknown hardware: no platform describes '" + c.shape->system +
                    "' and no fingerprint was declared (`dynamiccl probe -o FILE` on the machine, then --fingerprint "
                    "FILE): the rules carry none, so the plugin tests them in the job before they count");
  std::vector<measurements::Measurement> kept;
  std::set<int> counts;
  int reported = 0;
  for (const measurements::Measurement& m : l.rows)
    if (m.system == c.shape->system && m.group == c.group && m.nRanks == c.shape->nRanks && m.nNodes == c.shape->nNodes) {
      kept.push_back(m);
      if (m.forcedChannels > 0) counts.insert(m.forcedChannels);
      reported += m.reportedChannels > 0;
    }
  if (counts.empty())
    notes.push_back("channels: not stated (no row forces a channel count" +
                    std::string(reported ? "; " + std::to_string(reported) + " rows report the count NCCL chose" : "") +
                    "): every arm runs at NCCL's own count");
  else {
    std::string list;
    for (int n : counts) list += (list.empty() ? "" : ",") + std::to_string(n);
    notes.push_back("channels: rows force " + std::to_string(counts.size()) + " counts (" + list +
                    "): each count is an arm of its own, never a repeat of another");
  }
  return std::make_unique<ReplayBackend>(l.data, c.shape, c.group, measurements::groupRepeats(kept), std::move(notes),
                                         std::move(hardware));
}

}  // namespace

Expected<std::unique_ptr<MeasurementBackend>> makeReplayBackend(const ReplayBackendOptions& o) {
  auto l = loadReplay(o);
  if (!l) return makeError(l.error());
  // The requested shape, or the one with most forced measurements (what tuning can use); one
  // environment variant (group) of it, since variants are not repeats of each other.
  const Candidate& best = l->candidates.front();
  std::vector<std::string> notes = l->notes;
  // One shape per backend, never others dropped without a word: each is named with how to tune it too.
  std::map<std::string, int> others;
  for (const measurements::ReplayPoint& p : l->data->points)
    if (!(p.shape == best.shape && p.group == best.group)) ++others[shapeName(*p.shape, p.group)];
  for (const auto& [what, keys] : others)
    notes.push_back("not tuned in this run: " + what + " (" + std::to_string(keys) + " keys): tune it with --ranks/"
                    "--nodes/--system, then `dynamiccl merge` the profiles into one");
  return backendOf(*l, best, std::move(notes), o);
}

Expected<std::vector<std::unique_ptr<MeasurementBackend>>> makeReplayBackends(const ReplayBackendOptions& o) {
  auto l = loadReplay(o);
  if (!l) return makeError(l.error());
  std::vector<std::unique_ptr<MeasurementBackend>> out;
  std::set<std::pair<int, int>> shapes;
  std::vector<std::string> notes = l->notes;
  // Variants of one shape (e.g. NVLS on and off) answer the same calls: one profile holds one of them.
  for (const Candidate& c : l->candidates)
    if (shapes.count({c.shape->nRanks, c.shape->nNodes}))
      notes.push_back("not tuned in this run: " + shapeName(*c.shape, c.group) +
                      ", a second system or variant of a shape tuned here (one profile answers a call once): tune "
                      "it with --system into a profile of its own");
    else
      shapes.insert({c.shape->nRanks, c.shape->nNodes});
  shapes.clear();
  for (const Candidate& c : l->candidates)
    if (shapes.insert({c.shape->nRanks, c.shape->nNodes}).second)
      out.push_back(backendOf(*l, c, out.empty() ? notes : std::vector<std::string>{}, o));
  return out;
}

std::vector<Collective> measuredCollectives(const MeasurementBackend& b) {
  if (!b.recorded()) return {Collective::AllReduce};
  std::vector<Collective> out;
  for (int c = 0; c < kNumCollectives; ++c)
    if (!b.measurableSizes(static_cast<Collective>(c)).empty()) out.push_back(static_cast<Collective>(c));
  return out.empty() ? std::vector<Collective>{Collective::AllReduce} : out;
}

}  // namespace dynamiccl::tune
