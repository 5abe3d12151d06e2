// The "policy" weights from a tree nlohmann has already parsed (the profile reader's one pass).
#pragma once

#include <nlohmann/json.hpp>

#include "policy/network_weights.h"

namespace dynamiccl::policy {

// As parsePolicyWeights(text), for the value already parsed; validates before returning.
Expected<PolicyWeights> parsePolicyWeights(const nlohmann::json& doc);

}  // namespace dynamiccl::policy
