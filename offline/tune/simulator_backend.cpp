// Adapter to sim/: the only file of tune/ that knows the simulator's types.
#include <fstream>
#include <sstream>

#include "offline/model/model.h"
#include "offline/sim/sim.h"
#include "offline/tune/measurement_backend.h"

namespace dynamiccl::tune {
namespace {

class SimulatorBackend final : public MeasurementBackend {
 public:
  SimulatorBackend(model::Topology topo, sim::SimParams params, model::NcclReference ref, uint64_t seed,
                   abi::PickRule rule)
      : sim_(topo, params), ref_(std::move(ref)), noise_(seed), rule_(rule) {}
  std::string name() const override { return "simulator " + sim_.topology().name; }
  int nRanks() const override { return sim_.topology().nRanks(); }
  int nNodes() const override { return sim_.topology().nNodes; }
  std::optional<ClusterHardware> measuredOn() const override { return model::clusterHardwareOf(sim_.topology()); }

  bool available(const Config& c, const MeasureKey& k) const override {
    if (c.keepsAlgoProto()) return ref_.defaultConfig(k.coll, k.bytes).algo != Algo::Default;
    // NCCL never runs an entry it marked IGNORE, whatever the tuner writes.
    const model::CostTable table = ref_.costTable(k.coll, k.bytes);
    if (table[int(c.algo)][int(c.proto)] < 0) return false;
    return sim_.feasible(k.coll, toSim(c, k));
  }
  std::optional<int> ncclChannels(const Config& c, const MeasureKey& k) const override {
    if (c.keepsAlgoProto()) return ref_.defaultConfig(k.coll, k.bytes).nChannels;
    return ref_.channels(c.algo, c.proto, k.bytes);
  }
  std::optional<double> expected_us(const Config& c, const MeasureKey& k) const override {
    if (!available(c, k)) return std::nullopt;
    return sim_.time_us(k.coll, k.bytes, toSim(c, k));
  }
  Expected<std::vector<double>> measure(const Config& c, const MeasureKey& k, int iterations, const JobKnobs&) override {
    if (!available(c, k)) return makeError("simulator: " + decisionLabel(c) + " not runnable here");
    const sim::Config sc = toSim(c, k);
    std::vector<double> out;
    out.reserve(iterations);
    for (int i = 0; i < iterations; ++i) out.push_back(sim_.sample_us(k.coll, k.bytes, sc, noise_));
    return out;
  }

 private:
  // Keep-default resolves to NCCL's choice; 0 channels/chunk resolve to NCCL's values, other
  // channel counts to what the targeted release runs.
  sim::Config toSim(const Config& c, const MeasureKey& k) const {
    if (c.keepsAlgoProto()) return ref_.defaultConfig(k.coll, k.bytes);
    return ref_.resolve(c, k.bytes, rule_);
  }
  sim::Simulator sim_;
  model::NcclReference ref_;
  sim::NoiseSource noise_;
  abi::PickRule rule_;
};

}  // namespace

Expected<std::unique_ptr<MeasurementBackend>> makeSimulatorBackend(const SimulatorBackendOptions& o) {
  auto topo = sim::loadTopology(o.topology, o.nNodes);
  if (!topo) return makeError("simulator backend: " + topo.error());
  sim::SimParams params;
  if (!o.paramsPath.empty()) {
    auto text = readRegularFile(o.paramsPath, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
    if (!text) return makeError("simulator backend: " + text.error());
    auto p = sim::paramsFromJson(*text);
    if (!p) return makeError("simulator backend: " + o.paramsPath + ": " + p.error());
    params = p.value();
  }
  auto ref = model::NcclReference::create(topo.value());
  if (!ref) return makeError("simulator backend: " + ref.error());
  return std::unique_ptr<MeasurementBackend>(
      std::make_unique<SimulatorBackend>(topo.value(), params, std::move(ref.value()), o.seed, o.ncclRule));
}

}  // namespace dynamiccl::tune
