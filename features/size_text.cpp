#include "features/size_text.h"

#include <cstdio>
#include <limits>

namespace dynamiccl {
namespace {

bool isWholeUnit(uint64_t b) { return b < 1024 || b % 1024 == 0; }

}  // namespace

std::string sizeText(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"K", "M", "G", "T", "P", "E"};
  int u = 0;
  uint64_t whole = bytes / 1024;
  double x = static_cast<double>(bytes) / 1024.0;
  bool exact = bytes % 1024 == 0;
  while (whole >= 1024 && u < 5) {
    exact = exact && whole % 1024 == 0;
    whole /= 1024, x /= 1024.0, ++u;
  }
  if (!exact && x >= 1023.95 && u < 5) x /= 1024.0, ++u;  // never "1024.0K": one more unit
  char buf[32];
  if (exact) std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(whole), kUnits[u]);
  else std::snprintf(buf, sizeof buf, "%.1f%s", x, kUnits[u]);
  return buf;
}

std::string sizeRangeText(uint64_t minBytes, uint64_t maxBytes) {
  if (maxBytes == std::numeric_limits<uint64_t>::max()) return sizeText(minBytes) + "..";
  const bool bucket = maxBytes > minBytes || maxBytes + 1 == 2 * minBytes;  // a one-byte bucket too: [1, 2)
  if (bucket && isWholeUnit(maxBytes + 1)) return sizeText(minBytes) + "..<" + sizeText(maxBytes + 1);
  return sizeText(minBytes) + ".." + sizeText(maxBytes);
}

}  // namespace dynamiccl
