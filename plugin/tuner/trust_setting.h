// DYNAMICCL_TRUST: whether rules without verified evidence may change NCCL's choice (the one place
// the plugin reads it).
#pragma once

#include <string>

#include "policy/policy.h"

namespace dynamiccl::plugin {

struct TrustSetting {
  policy::Trust trust = policy::Trust::Verified;
  std::string invalid;  // the unusable value, when set to something other than verified|all
  bool operator==(const TrustSetting&) const = default;
};

// "verified" (default) or "all"; any other value keeps verified and is reported in `invalid`.
TrustSetting trustFromEnvironment();

}  // namespace dynamiccl::plugin
