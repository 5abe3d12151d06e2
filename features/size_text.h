// The one way sizes are written in tables, logs and plots (scripts/plot_sizes.py follows the same rule).
#pragma once

#include <cstdint>
#include <string>

namespace dynamiccl {

// "8 B", "512K", "1.5M", "4G" (K = 1024 bytes): a whole number of the largest unit when exact, else one decimal.
std::string sizeText(uint64_t bytes);

// The sizes [minBytes, maxBytes]: "1K..<2K" when maxBytes + 1 is a whole unit (a bucket), else "1K..1.5K";
// "1K.." when maxBytes is the largest size.
std::string sizeRangeText(uint64_t minBytes, uint64_t maxBytes);

}  // namespace dynamiccl
