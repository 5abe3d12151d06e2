#include "offline/tune/config.h"

namespace dynamiccl::tune {

std::string formatBytes(uint64_t b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + units[u];
}

std::string configLabel(const Config& c) {
  if (c.keepsAlgoProto()) return "nccl-default";
  std::string s = std::string(algoName(c.algo)) + "/" + std::string(protoName(c.proto));
  s += c.nChannels > 0 ? " ch=" + std::to_string(c.nChannels) : " ch=nccl";
  s += c.chunkBytes > 0 ? " chunk=" + formatBytes(c.chunkBytes) : " chunk=nccl";
  return s;
}

}  // namespace dynamiccl::tune
