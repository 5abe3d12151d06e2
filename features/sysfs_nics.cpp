// NIC count and speed from sysfs: /sys/class/infiniband/*/ports/*/rate ("400 Gb/sec (4X NDR)")
// and /sys/class/net/*/speed (Mb/s), under a root directory so tests can use a fake tree.
#include <filesystem>
#include <fstream>
#include <string>

#include "features/topology_fingerprint.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> readFirstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// Leading number of a sysfs value; nullopt when there is none.
std::optional<double> leadingNumber(const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    return used > 0 ? std::optional<double>(v) : std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

SysfsNics infinibandNics(const fs::path& root) {
  SysfsNics out;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator(root / "class/infiniband", ec)) {
    double best = 0.0;
    std::error_code ec2;
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec2)) {
      auto rate = readFirstLine(port.path() / "rate");
      if (!rate) continue;
      if (auto gbps = leadingNumber(*rate); gbps && *gbps > 0) best = std::max(best, *gbps / 8.0);
    }
    if (best > 0) {
      ++out.count;
      out.speed_GBps = std::max(out.speed_GBps, best);
    }
  }
  if (out.count) out.source = "infiniband";
  return out;
}

SysfsNics ethernetNics(const fs::path& root) {
  SysfsNics out;
  std::error_code ec;
  for (const auto& nic : fs::directory_iterator(root / "class/net", ec)) {
    // Physical NICs have a device link; lo, bridges and veths do not.
    if (!fs::exists(nic.path() / "device")) continue;
    auto speed = readFirstLine(nic.path() / "speed");  // reading fails (EINVAL) for a down link
    if (!speed) continue;
    if (auto mbps = leadingNumber(*speed); mbps && *mbps > 0) {
      ++out.count;
      out.speed_GBps = std::max(out.speed_GBps, *mbps / 8000.0);
    }
  }
  if (out.count) out.source = "net";
  return out;
}

}  // namespace

SysfsNics readSysfsNics(const std::string& sysRoot) {
  try {
    SysfsNics ib = infinibandNics(sysRoot);
    return ib.count ? ib : ethernetNics(sysRoot);
  } catch (...) {
    return {};  // an unreadable tree says nothing
  }
}

}  // namespace dynamiccl
