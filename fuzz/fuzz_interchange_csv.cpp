// libFuzzer target: the interchange CSV reader; rows it accepts must be re-read identically in
// count after formatInterchangeRow (the exporter's writer).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "offline/measurements/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace measurements = dynamiccl::measurements;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)measurements::looksLikeInterchangeCsv(text);
  auto rows = measurements::parseInterchangeCsv(text);
  if (!rows) return 0;
  std::string out(measurements::kInterchangeHeader);
  for (const auto& r : *rows) out += "\n" + measurements::formatInterchangeRow(r);
  auto again = measurements::parseInterchangeCsv(out);
  if (!again || again->size() != rows->size()) std::abort();  // writer/reader disagree
  return 0;
}
