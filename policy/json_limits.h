// Bounds every JSON text the policy reads before a parser sees it: nlohmann's parser is iterative,
// but dump(), comparison and copying recurse, so a deeply nested value would exhaust the stack.
#pragma once

#include <string_view>

#include "features/features.h"

namespace dynamiccl::policy {

// Our formats nest at most 5 levels (profile > policy > tensors > tensor > data); 64 leaves room.
inline constexpr int kMaxJsonDepth = 64;

// Refuses text over maxBytes or with arrays/objects nested deeper than maxDepth (linear, no recursion).
Status checkJsonLimits(std::string_view text, uint64_t maxBytes, int maxDepth = kMaxJsonDepth);

}  // namespace dynamiccl::policy
