// Presets and the stand-in ground truth (see sim_adapter.h for why this file exists).
#include "train/sim_adapter.h"

#include <algorithm>
#include <cmath>

namespace dynamiccl::train {
namespace {

model::Topology make(std::string name, int cc, int nodes, int gpus, double nvlink, int nics, double nicBw,
                     bool nvswitch = true, bool nvls = true) {
  model::Topology t;
  t.name = std::move(name);
  t.computeCap = cc;
  t.nNodes = nodes;
  t.gpusPerNode = gpus;
  t.nvlink = nvlink > 0;
  t.nvswitch = nvswitch && t.nvlink;
  t.nvlinkBwPerGpu_GBps = nvlink > 0 ? nvlink : 450.0;
  t.nicsPerNode = nics;
  t.nicBw_GBps = nicBw;
  t.nvlsSupport = nvls && t.nvswitch && cc >= 90;
  if (!t.nvlink) t.pcieBw_GBps = 24.0;
  return t;
}

// Share of an algorithm's bandwidth term that crosses the network (0 on one node).
double networkShare(Algo a, int nNodes) {
  if (nNodes <= 1) return 0.0;
  switch (a) {
    case Algo::Ring: return 1.0;
    case Algo::Tree: return 0.8;
    case Algo::NvlsTree: return 0.6;
    case Algo::Pat: return 1.0;
    default: return 0.5;
  }
}

}  // namespace

std::vector<model::Topology> presetTopologies() {
  std::vector<model::Topology> out;
  for (int n : {1, 2, 4}) out.push_back(make("dgx-a100x" + std::to_string(n), 80, n, 8, 300, 8, 25, true, false));
  for (int n : {1, 2, 4, 8}) out.push_back(make("dgx-h100x" + std::to_string(n), 90, n, 8, 450, 8, 50));
  // H800: 400 GB/s NVLink, 8 x 200 Gb/s NICs -> 16:1 per GPU, about twice what NCCL's constants assume.
  for (int n : {2, 4, 8}) out.push_back(make("h800x" + std::to_string(n), 90, n, 8, 400, 8, 25));
  for (int n : {1, 2}) out.push_back(make("l40s-pciex" + std::to_string(n), 89, n, 4, 0, 1, 12.5, false, false));
  for (int n : {2, 8}) out.push_back(make("gh200-slingshotx" + std::to_string(n), 90, n, 4, 450, 4, 25, false, false));
  model::Topology nvl72 = make("gb200-nvl72", 100, 18, 4, 900, 4, 50);
  nvl72.nvlDomainGpus = 72;
  out.push_back(nvl72);
  out.push_back(make("dgx-b200x2", 100, 2, 8, 900, 8, 50));
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

Expected<SimSystem> SimSystem::make(const model::Topology& topo) {
  auto graphs = model::approximateGraphs(topo);
  if (!graphs) return makeError(topo.name + ": " + graphs.error());
  auto nccl = model::NcclModel::build(*graphs);
  if (!nccl) return makeError(topo.name + ": " + nccl.error());
  SimSystem s;
  s.topo_ = topo;
  s.nccl_ = std::move(*nccl);
  // The fingerprint as the plugin would see it on that machine (NVML + sysfs agree with the preset).
  CommShape shape{.commId = 0, .nRanks = graphs->nRanks, .nNodes = graphs->nNodes,
                  .minRanksPerNode = topo.nvlDomainGpus ? topo.nvlDomainGpus : topo.gpusPerNode,
                  .maxRanksPerNode = topo.nvlDomainGpus ? topo.nvlDomainGpus : topo.gpusPerNode};
  HostSources host;
  host.nics = SysfsNics{topo.nicsPerNode, topo.nicBw_GBps, "preset"};
  host.nvml = NvmlInfo{topo.gpusPerNode, topo.computeCap, 0, topo.nvlink ? topo.nvlinkBwPerGpu_GBps : 0.0};
  s.fp_ = buildFingerprint(shape, host);
  s.fp_.ranksPerNode = topo.gpusPerNode;
  return s;
}

policy::Decision SimSystem::ncclDefault(Collective coll, uint64_t nBytes) const {
  const model::DefaultChoice c = nccl_.defaultChoice(coll, nBytes);
  return policy::Decision{c.algo, c.proto, 0, 0};
}

double SimSystem::predicted_us(Collective coll, uint64_t nBytes, const policy::Decision& d0) const {
  const policy::Decision d = d0.keepsAlgoProto() ? ncclDefault(coll, nBytes) : d0;
  if (d.algo == Algo::Default) return -1.0;
  return nccl_.costTable(coll, nBytes)[static_cast<int>(d.algo)][static_cast<int>(d.proto)];
}

std::optional<double> SimSystem::trueLatency_us(Collective coll, uint64_t nBytes, const policy::Decision& d0,
                                                double congestion) const {
  policy::Decision d = d0;
  if (d.keepsAlgoProto()) {
    d = ncclDefault(coll, nBytes);
    d.nChannels = d0.nChannels;
  }
  if (d.algo == Algo::Default) return std::nullopt;
  const double model_us = predicted_us(coll, nBytes, d);
  const double bw = nccl_.bandwidth_GBps(coll, d.algo, d.proto);
  if (!(model_us >= 0) || !(bw > 0)) return std::nullopt;
  double bwTerm_us = static_cast<double>(nBytes) / (1000.0 * bw);
  double lat_us = std::max(0.5, model_us - bwTerm_us);
  const int nNodes = std::max(1, fp_.nNodes);
  const double share = networkShare(d.algo, nNodes);
  // NCCL's constants assume ~7:1 NVLink:NIC; beyond that the network share is slower than modelled.
  const double ratio = fp_.nvlinkToNicRatio();
  if (share > 0 && ratio > 7.0) bwTerm_us *= 1.0 + share * (std::pow(ratio / 7.0, 0.8) - 1.0);
  if (nNodes > 1 && d.proto == Proto::LL128) bwTerm_us *= 1.25;  // LL128 over the network underdelivers
  if (nNodes >= 4 && d.algo == Algo::Tree) lat_us *= 1.3;        // deeper trees wait on stragglers
  if (d.proto == Proto::LL) lat_us *= 0.9;
  // Channels: fewer than NCCL's count cut the bandwidth and save a little launch/sync latency.
  const int ncclChannels = std::max(1, nccl_.defaultChannels(d.algo, d.proto, nBytes));
  if (d.nChannels > 0) {
    const int used = std::min(d.nChannels, ncclChannels);
    bwTerm_us *= std::pow(static_cast<double>(ncclChannels) / used, 0.85);
    lat_us = std::max(0.5, lat_us - 0.08 * (ncclChannels - used));
  }
  // Congestion from other jobs slows what crosses the network, in bandwidth and in latency.
  bwTerm_us *= 1.0 + congestion * share;
  lat_us += congestion * share * 6.0;
  return lat_us + bwTerm_us;
}

double measurementNoise(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 0.03);
  return std::exp(n(rng));
}

}  // namespace dynamiccl::train
