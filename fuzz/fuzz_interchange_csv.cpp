// libFuzzer target: the interchange CSV reader; rows it accepts must be re-read identically in
// count after formatInterchangeRow (the exporter's writer).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "offline/ingest/ingest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ingest = dynamiccl::ingest;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ingest::looksLikeInterchangeCsv(text);
  auto rows = ingest::parseInterchangeCsv(text);
  if (!rows) return 0;
  std::string out(ingest::kInterchangeHeader);
  for (const auto& r : *rows) out += "\n" + ingest::formatInterchangeRow(r);
  auto again = ingest::parseInterchangeCsv(out);
  if (!again || again->size() != rows->size()) std::abort();  // writer/reader disagree
  return 0;
}
