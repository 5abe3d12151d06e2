// AMD GPUs from the kernel's KFD topology in sysfs (/sys/class/kfd/kfd/topology/nodes/N/properties and
// io_links/M/properties, "key value" lines), read at run time: the plugin and `dynamiccl probe` need no
// HIP or ROCm library, as NVML is dlopen'ed. Under a root directory so tests can use a fake tree.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "features/regular_file.h"
#include "features/topology_fingerprint.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

// The KFD link type of XGMI (the kernel's CRAT_IOLINK_TYPE_XGMI); max_bandwidth is in MB/s.
constexpr int64_t kXgmiLinkType = 11;
constexpr uint64_t kMaxPropertiesBytes = 64 * 1024;  // a properties file is a few hundred bytes

std::map<std::string, int64_t> readProperties(const fs::path& p) {
  std::map<std::string, int64_t> out;
  auto text = readRegularFile(p.string(), kMaxPropertiesBytes);
  if (!text.ok()) return out;
  std::istringstream in(*text);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) out[key] = value;
  return out;
}

}  // namespace

std::optional<KfdGpus> readKfdGpus(const std::string& sysRoot) {
  try {
    const fs::path nodes = fs::path(sysRoot) / "class/kfd/kfd/topology/nodes";
    std::error_code ec;
    std::map<int64_t, std::map<std::string, int64_t>> gpus;  // KFD node id -> its properties
    for (const auto& node : fs::directory_iterator(nodes, ec)) {
      int64_t id = -1;
      try {
        id = std::stoll(node.path().filename().string());
      } catch (...) {
        continue;
      }
      auto props = readProperties(node.path() / "properties");
      if (props["simd_count"] > 0 && props["gfx_target_version"] > 0) gpus[id] = std::move(props);  // CPU nodes have no SIMDs
    }
    if (gpus.empty()) return std::nullopt;
    KfdGpus out;
    out.count = static_cast<int>(gpus.size());
    const auto& [firstId, first] = *gpus.begin();
    const int64_t v = first.at("gfx_target_version");  // 90402 -> gfx942, 90500 -> gfx950
    std::ostringstream arch;
    arch << "gfx" << v / 10000 << std::hex << (v / 100 % 100) << (v % 100);
    out.arch = arch.str();
    // The first GPU's XGMI links to other GPUs: the node's scale-up fabric, as NVLink is NVIDIA's.
    for (const auto& link : fs::directory_iterator(nodes / std::to_string(firstId) / "io_links", ec)) {
      auto p = readProperties(link.path() / "properties");
      if (p["type"] != kXgmiLinkType || !gpus.contains(p["node_to"])) continue;
      ++out.xgmiLinks;
      out.xgmiBwPerGpu_GBps += static_cast<double>(p["max_bandwidth"]) / 1000.0;
    }
    return out;
  } catch (...) {
    return std::nullopt;  // an unreadable tree says nothing
  }
}

}  // namespace dynamiccl
