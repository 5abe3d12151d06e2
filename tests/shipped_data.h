// The measurements shipped in the source tree, so tests on them run in a fresh clone (no ../shared).
#pragma once

#include <string>

namespace dynamiccl::testing {

// The L40S PCIe dataset (2 and 4 GPUs), a copy of shared/data/l40s-pcie-cs244c/normalized.csv.
inline std::string shippedL40sCsv() {
  return std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";
}

}  // namespace dynamiccl::testing
