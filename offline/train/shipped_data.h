// The measurements shipped with the project (offline/demo/data, installed under share/dynamiccl):
// what the demo replays and what policy-eval and the proposers evaluate on when given no other.
#pragma once

#include <string>

namespace dynamiccl::train {

// The folder of the shipped datasets, one <name>/normalized.csv each.
std::string shippedDatasetsDir();
// The L40S sweeps (l40s-pcie-cs244c): the demo's main job by default.
std::string embeddedDataset();

}  // namespace dynamiccl::train
