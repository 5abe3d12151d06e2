#include "offline/tune/config.h"

namespace dynamiccl::tune {

std::string configLabel(const Config& c) {
  if (c.keepsAlgoProto()) return "nccl-default";
  std::string s = std::string(algoName(c.algo)) + "/" + std::string(protoName(c.proto));
  s += c.nChannels > 0 ? " ch=" + std::to_string(c.nChannels) : " ch=nccl";
  s += c.chunkBytes > 0 ? " chunk=" + sizeText(c.chunkBytes) : " chunk=nccl";
  return s;
}

}  // namespace dynamiccl::tune
