// A synthetic dataset of a simulated cluster in the interchange CSV format (shared/data/README.md):
// what `dynamiccl sim --emit-csv` writes, for tools that want a dataset of hardware nobody measured.
#pragma once

#include <cstdint>
#include <ostream>

#include "offline/model/model.h"
#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

// Every collective at sizes 8 B..4 GiB: NCCL's default and each feasible (algo, proto) forced, one
// noisy sample each (seeded); the header first. Returns the rows written.
int writeSyntheticDataset(const Simulator& simulator, const model::NcclReference& nccl, uint64_t seed, std::ostream& out);

}  // namespace dynamiccl::sim
