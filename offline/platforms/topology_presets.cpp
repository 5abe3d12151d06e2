#include "offline/platforms/topology_presets.h"

#include "offline/platforms/registry.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dynamiccl::sim {

using model::Topology;

std::vector<std::string> presetNames() {
  auto r = platforms::registry();
  return r ? (*r)->names() : std::vector<std::string>{};
}

Expected<Topology> preset(std::string_view name, int nNodes) {
  if (nNodes < 1) return makeError("preset " + std::string(name) + ": nodes must be >= 1");
  auto r = platforms::registry();
  if (!r) return makeError("platforms: " + r.error());
  if (const platforms::Platform* p = (*r)->find(name)) {
    Topology t = p->topology;
    t.nNodes = nNodes;
    return t;
  }
  std::string known;
  for (const auto& n : (*r)->names()) known += (known.empty() ? "" : ", ") + n;
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
  auto text = readRegularFile(presetOrPath, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
  if (!text) return makeError(text.error());
  auto t = topologyFromJson(*text);
  if (!t) return makeError(presetOrPath + ": " + t.error());
  if (nNodes > 1) t->nNodes = nNodes;
  return t;
}

}  // namespace dynamiccl::sim
