#include "plugin/tuner/trust_setting.h"

#include <cstdlib>

namespace dynamiccl::plugin {

TrustSetting trustFromEnvironment() {
  TrustSetting s;
  const char* v = std::getenv("DYNAMICCL_TRUST");
  if (!v || !*v) return s;
  if (auto t = policy::parseTrust(v)) s.trust = *t;
  else s.invalid = v;
  return s;
}

}  // namespace dynamiccl::plugin
