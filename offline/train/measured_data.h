// Training rows from real measurements: interchange CSVs grouped by sim's replay (every measured
// arm of every point) and the hardware they were measured on, which a profile trained on them is for.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "offline/sim/sim.h"
#include "offline/train/dataset.h"

namespace dynamiccl::train {

// One row per measured arm: NCCL's own pick (resolved by NCCL's model) and every forced (algo,
// proto), all with NCCL's channel count, each weighing `weight`. Points whose shape `keep` rejects
// are left out (whole machines held out).
std::vector<Sample> measuredSamples(const measurements::ReplayData& data, float weight,
                                    const std::function<bool(const measurements::Shape&)>& keep = {});

// The hardware the points were measured on; an error when they span several machines or none.
Expected<ClusterHardware> measuredHardware(const measurements::ReplayData& data);

// Loads a normalized.csv into replay points; `platform` (a platform name), when not empty, is the
// hardware of every row whatever its system strings say.
Expected<measurements::ReplayData> loadReplayData(const std::string& csvPath, const std::string& platform = "");

// Whether a machine's name (a preset machine "h800x4" or a dataset's platform "l40s-pcie-2")
// starts with one of the prefixes.
bool machineMatches(const std::string& name, const std::vector<std::string>& prefixes);

}  // namespace dynamiccl::train
