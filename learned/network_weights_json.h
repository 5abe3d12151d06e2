// The "policy" weights from a tree nlohmann has already parsed (the profile reader's one pass).
#pragma once

#include <nlohmann/json.hpp>

#include "learned/network_weights.h"

namespace dynamiccl::learned {

// As parsePolicyWeights(text), for the value already parsed; validates before returning.
Expected<PolicyWeights> parsePolicyWeights(const nlohmann::json& doc);

}  // namespace dynamiccl::learned
