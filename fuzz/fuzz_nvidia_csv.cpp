// libFuzzer target: NVIDIA's example tuner CSV reader (NCCL_TUNER_CONFIG_FILE), read and re-written.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "policy/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = dynamiccl::policy::parseNvidiaCsv(text);
  if (!profile) return 0;
  auto again = dynamiccl::policy::parseNvidiaCsv(dynamiccl::policy::profileToNvidiaCsv(*profile));
  if (!again || again->rules.size() != profile->rules.size()) std::abort();  // writer/reader disagree
  return 0;
}
