// libFuzzer target: our JSON profile reader must reject bad input with an error, never crash, and
// what it accepts must survive its own writer (profileToJson output parses back).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "policy/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = dynamiccl::policy::parseProfileJson(text);
  if (!profile) return 0;
  auto again = dynamiccl::policy::parseProfileJson(dynamiccl::policy::profileToJson(*profile));
  if (!again || again->rules.size() != profile->rules.size()) std::abort();  // writer/reader disagree
  return 0;
}
