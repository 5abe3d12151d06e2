// libFuzzer target: the interchange CSV reader; rows it accepts must be re-read identically in
// count after formatInterchangeRow (the exporter's writer).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "offline/measurements/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace sim = dynamiccl::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sim::looksLikeInterchangeCsv(text);
  auto rows = sim::parseInterchangeCsv(text);
  if (!rows) return 0;
  std::string out(sim::kInterchangeHeader);
  for (const auto& r : *rows) out += "\n" + sim::formatInterchangeRow(r);
  auto again = sim::parseInterchangeCsv(out);
  if (!again || again->size() != rows->size()) std::abort();  // writer/reader disagree
  return 0;
}
