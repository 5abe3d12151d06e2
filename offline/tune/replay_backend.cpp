// Replayed dataset: each measured (collective, bytes) point of one communicator shape answers with
// its recorded time; NCCL_ALGO/NCCL_PROTO-forced rows are resolved to what NCCL ran (sim/replay).
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
  ReplayBackend(sim::ReplayData data, const sim::Shape* shape) : data_(std::move(data)), shape_(shape) {
    for (const sim::ReplayPoint& p : data_.points)
      if (p.shape == shape_) points_[{int(p.coll), p.bytes}] = &p;
  }
  std::string name() const override {
    return "replay " + shape_->system + " " + std::to_string(shape_->nRanks) + "r/" + std::to_string(shape_->nNodes) + "n";
  }
  int nRanks() const override { return shape_->nRanks; }
  int nNodes() const override { return shape_->nNodes; }
  int maxSamplesPerConfig() const override { return 1; }
  policy::Provenance provenance() const override { return policy::Provenance::MeasuredOffline; }
  std::optional<ClusterHardware> measuredOn() const override {
    ClusterHardware hw = model::clusterHardwareOf(shape_->topology);
    hw.source = "dataset system " + shape_->system;
    return hw;
  }
  std::vector<uint64_t> measurableSizes(Collective coll) const override {
    std::vector<uint64_t> out;
    for (const auto& [k, p] : points_)
      if (k.first == int(coll)) out.push_back(k.second);
    return out;
  }
  bool available(const Config& c, const MeasureKey& k) const override { return lookup(c, k) > 0; }
  std::optional<double> expected_us(const Config& c, const MeasureKey& k) const override {
    const double t = lookup(c, k);
    return t > 0 ? std::optional<double>(t) : std::nullopt;
  }
  // A dataset holds one mean per configuration: every call returns that one value.
  Expected<std::vector<double>> measure(const Config& c, const MeasureKey& k, int, const JobKnobs&) override {
    const double t = lookup(c, k);
    if (t <= 0) return makeError("replay: " + configLabel(c) + " not measured at " + std::to_string(k.bytes) + " B");
    return std::vector<double>{t};
  }

 private:
  double lookup(const Config& c, const MeasureKey& k) const {
    const auto it = points_.find({int(k.coll), k.bytes});
    if (it == points_.end()) return -1;
    const sim::ReplayPoint& p = *it->second;
    if (c.keepsAlgoProto()) {
      if (p.default_us > 0) return p.default_us;
      const auto f = p.forced_us.find({p.ncclDefault.algo, p.ncclDefault.proto});
      return f != p.forced_us.end() ? f->second : -1;
    }
    if (c.nChannels != 0 || c.chunkBytes != 0) return -1;  // no public data sweeps channels or chunks
    const auto f = p.forced_us.find({c.algo, c.proto});
    return f != p.forced_us.end() ? f->second : -1;
  }
  sim::ReplayData data_;
  const sim::Shape* shape_;
  std::map<std::pair<int, uint64_t>, const sim::ReplayPoint*> points_;
};

}  // namespace

Expected<std::unique_ptr<MeasurementBackend>> makeReplayBackend(const ReplayBackendOptions& o) {
  auto rows = sim::loadMeasurements(o.csvPath);
  if (!rows) return makeError("replay backend: " + rows.error());
  auto data = sim::buildReplayData(rows->rows, o.system);
  if (!data) return makeError("replay backend: " + data.error());
  // The requested shape, or the one with most forced measurements (what tuning can use).
  std::map<const sim::Shape*, int> score;
  for (const sim::ReplayPoint& p : data->points)
    if ((o.nRanks == 0 || p.shape->nRanks == o.nRanks) && (o.nNodes == 0 || p.shape->nNodes == o.nNodes))
      score[p.shape] += 1 + static_cast<int>(p.forced_us.size()) * 4;
  const sim::Shape* best = nullptr;
  for (const auto& [s, n] : score)
    if (!best || n > score[best]) best = s;
  if (!best) return makeError("replay backend: no measurements match in " + o.csvPath);
  return std::unique_ptr<MeasurementBackend>(std::make_unique<ReplayBackend>(std::move(data.value()), best));
}

}  // namespace dynamiccl::tune
