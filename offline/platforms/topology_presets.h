// Topology presets (the hardware the simulator and NCCL's model describe) and their JSON form.
// The presets are embedded here so no file is needed; offline/platforms/presets/*.json ship the same values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"

namespace dynamiccl::sim {

// Names: dgx-a100, dgx-h100, h800, l40s-pcie-2, l40s-pcie-4, gh200-slingshot, gb200-nvl72,
// dgx-b200, gb300-nvl72, gcp-a3mega.
std::vector<std::string> presetNames();
// A preset with nNodes nodes (1..512 or more; a multi-node NVLink domain counts trays as nodes).
Expected<model::Topology> preset(std::string_view name, int nNodes = 1);

// JSON: {"name":..., "computeCap":90, "nNodes":1, "gpusPerNode":8, ...} with model::Topology's
// field names; missing fields keep Topology's defaults, unknown fields are errors.
Expected<model::Topology> topologyFromJson(std::string_view text);
std::string topologyToJson(const model::Topology& topo);
// A preset name, or a path to a topology JSON file.
Expected<model::Topology> loadTopology(const std::string& presetOrPath, int nNodes = 1);

}  // namespace dynamiccl::sim
