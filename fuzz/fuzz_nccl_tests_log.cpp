// libFuzzer target: the nccl-tests log reader (and the TUNING lines inside logs). The first input
// line is the path hint, since the reader also takes collective/ranks/forced algo from the path.
#include <cstdint>
#include <string_view>

#include "offline/ingest/ingest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view hint = nl == std::string_view::npos ? std::string_view{} : input.substr(0, nl);
  const std::string_view text = nl == std::string_view::npos ? input : input.substr(nl + 1);
  auto log = dynamiccl::ingest::parseNcclTestsLog(text, hint);
  for (const auto& t : log.tuning) (void)t.nChannels();
  (void)dynamiccl::ingest::parseTuningLine(text);
  return 0;
}
