#include "policy/json_limits.h"

#include <string>

namespace dynamiccl::policy {

Status checkJsonLimits(std::string_view text, uint64_t maxBytes, int maxDepth) {
  if (text.size() > maxBytes)
    return makeError("JSON text is " + std::to_string(text.size()) + " bytes, over the " + std::to_string(maxBytes) +
                     " byte limit");
  int depth = 0;
  bool inString = false, escaped = false;
  for (const char c : text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return makeError("JSON nests deeper than " + std::to_string(maxDepth) + " levels; refused unread");
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to refuse
    }
  }
  return Ok{};
}

}  // namespace dynamiccl::policy
