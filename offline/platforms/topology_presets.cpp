#include "offline/platforms/topology_presets.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dynamiccl::sim {

namespace {

using model::Topology;

// Bandwidths are unidirectional per GPU / per NIC in GB/s (1e9 B/s); sources are vendor specs.
Topology make(std::string name, int cc, int gpn, bool nvlink, bool nvswitch, double nvl, double pcie, int nics,
              double nicBw, bool nvls, int domain = 0, bool nicViaCpu = false, bool collnet = false) {
  Topology t;
  t.name = std::move(name);
  t.computeCap = cc;
  t.gpusPerNode = gpn;
  t.nvlink = nvlink;
  t.nvswitch = nvswitch;
  t.nvlinkBwPerGpu_GBps = nvl;
  t.pcieBw_GBps = pcie;
  t.nicsPerNode = nics;
  t.nicBw_GBps = nicBw;
  t.nvlsSupport = nvls;
  t.nvlDomainGpus = domain;
  t.nicViaCpu = nicViaCpu;
  t.collnetSupport = collnet;
  return t;
}

const std::vector<Topology>& presets() {
  static const std::vector<Topology> all = {
      // DGX-A100: NVLink3 12 links x 25 GB/s, NVSwitch (no multicast), 8 x 200 Gb/s HDR.
      make("dgx-a100", 80, 8, true, true, 300.0, 25.0, 8, 25.0, false),
      // DGX-H100: NVLink4 18 x 25 GB/s, NVSwitch with multicast (NVLS), 8 x 400 Gb/s NDR.
      make("dgx-h100", 90, 8, true, true, 450.0, 50.0, 8, 50.0, true),
      // The same nodes on a Quantum-2 NDR fabric with SHARP enabled (NCCL CollNet via the SHARP plugin).
      make("dgx-h100-sharp", 90, 8, true, true, 450.0, 50.0, 8, 50.0, true, 0, false, /*collnet=*/true),
      // H800 cluster: NVLink cut to 8 links (~200 GB/s, ~175 achievable, we take 175) and
      // 4 x 200 Gb/s NICs per node: 14:1 NVLink:NIC per GPU where NCCL's constants assume ~7:1.
      make("h800", 90, 8, true, true, 175.0, 50.0, 4, 25.0, true),
      // L40S over PCIe Gen4 x16 (~25 GB/s achievable), no NVLink, 2 x 100 Gb/s NICs.
      make("l40s-pcie-2", 89, 2, false, false, 0.0, 25.0, 2, 12.5, false),
      make("l40s-pcie-4", 89, 4, false, false, 0.0, 25.0, 2, 12.5, false),
      // GH200 quad nodes (Alps): NVLink4 6 links per GPU pair in a full mesh, i.e. 18 links and
      // 450 GB/s per GPU over its 3 peers (the field is the GPU's total, as model/ divides it by
      // the peers; 150 GB/s was one pair's share and capped single-node busbw at half the measured
      // ~340 GB/s), 4 x 200 Gb/s Slingshot-11 NICs.
      make("gh200-slingshot", 90, 4, true, false, 450.0, 64.0, 4, 25.0, false, 0, /*nicViaCpu=*/true),
      // GB200 NVL72: trays of 4 GPUs in one 72-GPU NVLink5 domain (900 GB/s per GPU), 4 x 400 Gb/s per tray.
      make("gb200-nvl72", 100, 4, true, true, 900.0, 64.0, 4, 50.0, true, 72),
      make("gb300-nvl72", 103, 4, true, true, 900.0, 64.0, 4, 100.0, true, 72),
      // DGX-B200: NVLink5 900 GB/s per GPU, 8 x 400 Gb/s.
      make("dgx-b200", 100, 8, true, true, 900.0, 64.0, 8, 50.0, true),
      // GCP A3 Mega: H100 HGX with 8 x 200 Gb/s GPUDirect-TCPXO NICs.
      make("gcp-a3mega", 90, 8, true, true, 450.0, 50.0, 8, 25.0, true),
  };
  return all;
}

}  // namespace

std::vector<std::string> presetNames() {
  std::vector<std::string> names;
  for (const Topology& t : presets()) names.push_back(t.name);
  return names;
}

Expected<Topology> preset(std::string_view name, int nNodes) {
  if (nNodes < 1) return makeError("preset " + std::string(name) + ": nodes must be >= 1");
  for (const Topology& t : presets())
    if (t.name == name) {
      Topology r = t;
      r.nNodes = nNodes;
      return r;
    }
  std::string known;
  for (const auto& n : presetNames()) known += (known.empty() ? "" : ", ") + n;
  return makeError("unknown preset '" + std::string(name) + "' (known: " + known + ")");
}

std::string topologyToJson(const Topology& t) {
  nlohmann::ordered_json j;
  j["name"] = t.name;
  j["computeCap"] = t.computeCap;
  j["nNodes"] = t.nNodes;
  j["gpusPerNode"] = t.gpusPerNode;
  j["nvlink"] = t.nvlink;
  j["nvswitch"] = t.nvswitch;
  j["nvlinkBwPerGpu_GBps"] = t.nvlinkBwPerGpu_GBps;
  j["pcieBw_GBps"] = t.pcieBw_GBps;
  j["nicsPerNode"] = t.nicsPerNode;
  j["nicBw_GBps"] = t.nicBw_GBps;
  j["nvlsSupport"] = t.nvlsSupport;
  j["collnetSupport"] = t.collnetSupport;
  j["amdCpu"] = t.amdCpu;
  j["nvlDomainGpus"] = t.nvlDomainGpus;
  j["nicViaCpu"] = t.nicViaCpu;
  j["ncclVersion"] = t.ncclVersion;
  if (t.ncclNicBw_GBps > 0) j["ncclNicBw_GBps"] = t.ncclNicBw_GBps;  // only where it differs from the wire rate
  return j.dump(2) + "\n";
}

Expected<Topology> topologyFromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("topology JSON: not a JSON object");
  Topology t;
  try {
    for (const auto& [key, v] : j.items()) {
      if (key == "name") t.name = v.get<std::string>();
      else if (key == "computeCap") t.computeCap = v.get<int>();
      else if (key == "nNodes") t.nNodes = v.get<int>();
      else if (key == "gpusPerNode") t.gpusPerNode = v.get<int>();
      else if (key == "nvlink") t.nvlink = v.get<bool>();
      else if (key == "nvswitch") t.nvswitch = v.get<bool>();
      else if (key == "nvlinkBwPerGpu_GBps") t.nvlinkBwPerGpu_GBps = v.get<double>();
      else if (key == "pcieBw_GBps") t.pcieBw_GBps = v.get<double>();
      else if (key == "nicsPerNode") t.nicsPerNode = v.get<int>();
      else if (key == "nicBw_GBps") t.nicBw_GBps = v.get<double>();
      else if (key == "nvlsSupport") t.nvlsSupport = v.get<bool>();
      else if (key == "collnetSupport") t.collnetSupport = v.get<bool>();
      else if (key == "amdCpu") t.amdCpu = v.get<bool>();
      else if (key == "nvlDomainGpus") t.nvlDomainGpus = v.get<int>();
      else if (key == "nicViaCpu") t.nicViaCpu = v.get<bool>();
      else if (key == "ncclVersion") t.ncclVersion = v.get<int>();
      else if (key == "ncclNicBw_GBps") t.ncclNicBw_GBps = v.get<double>();
      else return makeError("topology JSON: unknown field '" + key + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    return makeError(std::string("topology JSON: wrong type: ") + e.what());
  }
  if (t.nNodes < 1 || t.gpusPerNode < 1) return makeError("topology JSON: nNodes and gpusPerNode must be >= 1");
  if (t.nvlink ? t.nvlinkBwPerGpu_GBps <= 0 : t.pcieBw_GBps <= 0)
    return makeError("topology JSON: the GPUs' link bandwidth must be > 0");
  if (t.nicsPerNode < 0 || (t.nicsPerNode > 0 && t.nicBw_GBps <= 0))
    return makeError("topology JSON: NICs need a bandwidth > 0");
  return t;
}

Expected<Topology> loadTopology(const std::string& presetOrPath, int nNodes) {
  if (!std::filesystem::exists(presetOrPath)) return preset(presetOrPath, nNodes);
  std::ifstream in(presetOrPath);
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = topologyFromJson(ss.str());
  if (!t) return makeError(presetOrPath + ": " + t.error());
  if (nNodes > 1) t->nNodes = nNodes;
  return t;
}

}  // namespace dynamiccl::sim
