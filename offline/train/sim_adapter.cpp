// Named machines over the platforms, each platform's calibrated parameters, and the ground truth.
#include "offline/train/sim_adapter.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <mutex>

#include "offline/sim/sim.h"
#include "offline/platforms/platforms.h"

namespace dynamiccl::train {
namespace {

std::string machineName(const platforms::Platform& p, int nodes) { return p.name + "x" + std::to_string(nodes); }

// The platforms whose file marks them for training, in their order (stable: registry order among equals).
std::vector<const platforms::Platform*> trainingPlatforms(const platforms::Registry& registry) {
  std::vector<const platforms::Platform*> out;
  for (const platforms::Platform& p : registry.all())
    if (p.train) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const platforms::Platform* a, const platforms::Platform* b) {
    return a->train->order.value_or(INT_MAX) < b->train->order.value_or(INT_MAX);
  });
  return out;
}

}  // namespace

std::vector<model::Topology> presetTopologies() {
  auto registry = platforms::registry();
  if (!registry) return {};
  std::vector<model::Topology> out;
  for (const platforms::Platform* p : trainingPlatforms(**registry))
    for (int nodes : p->train->nodes) {
      model::Topology t = p->topology;
      t.nNodes = nodes;
      t.name = machineName(*p, nodes);
      out.push_back(std::move(t));
    }
  return out;
}

std::optional<model::Topology> findPreset(const std::string& name) {
  for (const auto& t : presetTopologies())
    if (t.name == name) return t;
  return std::nullopt;
}

std::vector<model::Topology> presetsMatching(const std::vector<std::string>& prefixes, bool keepMatching) {
  std::vector<model::Topology> out;
  for (const auto& t : presetTopologies()) {
    bool match = false;
    for (const auto& p : prefixes) match |= !p.empty() && t.name.rfind(p, 0) == 0;
    if (match == keepMatching) out.push_back(t);
  }
  return out;
}

std::string simPresetOf(const model::Topology& topo) {
  if (auto registry = platforms::registry())
    for (const platforms::Platform* p : trainingPlatforms(**registry))
      for (int nodes : p->train->nodes)
        if (topo.name == machineName(*p, nodes)) return p->name;
  return topo.name;  // a sim/ preset itself (replay shapes carry the preset's name)
}

CalibratedParams calibratedParams(const std::string& simPreset) {
  // Files are read once per process: training builds every machine, evaluation many more.
  static std::mutex mutex;
  static std::map<std::string, CalibratedParams> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(simPreset); it != cache.end()) return it->second;
  CalibratedParams out{sim::SimParams{}, "defaults (no calibration for " + simPreset + ")"};
  auto known = platforms::registry();
  const platforms::Platform* platform = known ? (*known)->find(simPreset) : nullptr;
  if (platform && platform->calibration)
    if (auto cal = sim::calibrationFor(*platform))
      out = {cal->params, cal->dataset + ": " + cal->group.substr(0, 40)};
  cache.emplace(simPreset, out);
  return out;
}

TopologyFingerprint fingerprintOf(const model::Topology& topo) {
  const int perNode = topo.nvlDomainGpus ? topo.nvlDomainGpus : topo.gpusPerNode;
  CommShape shape{.commId = 0, .nRanks = topo.nRanks(), .nNodes = topo.nNodes, .minRanksPerNode = perNode,
                  .maxRanksPerNode = perNode};
  HostSources host;
  host.nics = SysfsNics{topo.nicsPerNode, topo.nicBw_GBps, "preset"};
  host.nvml = NvmlInfo{topo.gpusPerNode, topo.computeCap, 0, topo.nvlink ? topo.nvlinkBwPerGpu_GBps : 0.0};
  TopologyFingerprint fp = buildFingerprint(shape, host);
  fp.ranksPerNode = topo.gpusPerNode;
  return fp;
}

Expected<SimSystem> SimSystem::make(const model::Topology& topo) {
  const CalibratedParams cal = calibratedParams(simPresetOf(topo));
  auto ref = model::NcclReference::create(topo);
  if (!ref) return makeError(topo.name + ": " + ref.error());
  SimSystem s(topo, cal.params);
  s.ref_ = std::make_shared<const model::NcclReference>(std::move(*ref));
  s.calibration_ = cal.source;
  s.fp_ = fingerprintOf(topo);
  return s;
}

policy::Decision SimSystem::ncclDefault(Collective coll, uint64_t nBytes) const {
  const sim::Config c = ref_->defaultConfig(coll, nBytes);
  return policy::Decision{c.algo, c.proto, 0, 0};
}

double SimSystem::predicted_us(Collective coll, uint64_t nBytes, const policy::Decision& d0) const {
  const policy::Decision d = d0.keepsAlgoProto() ? ncclDefault(coll, nBytes) : d0;
  if (d.algo == Algo::Default || d.proto == Proto::Default) return -1.0;
  return ref_->costTable(coll, nBytes)[static_cast<int>(d.algo)][static_cast<int>(d.proto)];
}

sim::Config SimSystem::toSimConfig(Collective coll, uint64_t nBytes, const policy::Decision& d) const {
  sim::Config c = ref_->defaultConfig(coll, nBytes);
  if (!d.keepsAlgoProto()) c = sim::Config{d.algo, d.proto, 0, 0};
  c.nChannels = d.nChannels;  // 0: NCCL's own count for the (algo, proto) that runs
  c.chunkBytes = d.chunkBytes;
  return ref_->resolve(c, nBytes);
}

std::optional<double> SimSystem::trueLatency_us(Collective coll, uint64_t nBytes, const policy::Decision& d,
                                                double congestion) const {
  if (!(predicted_us(coll, nBytes, d) >= 0)) return std::nullopt;  // NCCL marked it IGNORE
  const sim::Config c = toSimConfig(coll, nBytes, d);
  if (!sim_.feasible(coll, c)) return std::nullopt;
  double t;
  if (congestion > 0 && topo_.nNodes > 1) {
    // Other jobs on the network: less of the NIC bandwidth, slower network hops and message
    // completions; NVLink unaffected.
    sim::SimParams p = sim_.params();
    p.interBwEff /= 1.0 + congestion;
    p.interHopScale *= 1.0 + congestion;
    p.netStepFloor_us *= 1.0 + congestion;
    t = sim::Simulator(topo_, p).time_us(coll, nBytes, c);
  } else {
    t = sim_.time_us(coll, nBytes, c);
  }
  if (!(t > 0) || !std::isfinite(t)) return std::nullopt;
  return t;
}

double measurementNoise(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 0.03);
  return std::exp(n(rng));
}

}  // namespace dynamiccl::train
