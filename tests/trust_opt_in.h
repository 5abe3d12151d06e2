// For tests of the plugin's mechanics on hand-written rules without evidence: they opt in to
// unverified rules as a user would (DYNAMICCL_TRUST=all); tests/trust_test.cpp checks the default.
#pragma once

#include <cstdlib>

namespace dynamiccl::testing {

inline const bool kTrustAllRules = (setenv("DYNAMICCL_TRUST", "all", 1), true);

}  // namespace dynamiccl::testing
