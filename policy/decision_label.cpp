#include "policy/profile.h"

namespace dynamiccl::policy {

std::string decisionLabel(const Decision& d) {
  std::string s = d.keepsAlgoProto() ? "nccl-default"
                                     : std::string(algoName(d.algo)) + "/" + std::string(protoName(d.proto));
  if (d.nChannels > 0) s += " ch=" + std::to_string(d.nChannels);
  if (d.chunkBytes > 0) s += " chunk=" + sizeText(d.chunkBytes);
  return s;
}

std::string armLabel(const Decision& d) { return decisionLabel(Decision{d.algo, d.proto, 0, 0}); }

}  // namespace dynamiccl::policy
