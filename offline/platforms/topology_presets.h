// Presets: the topologies of the registry's platforms (offline/platforms/<name>.json and --platform
// files) at a node count, and model::Topology's JSON form.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"

namespace dynamiccl::sim {

// The registry's platform names (empty when the platform folder does not load).
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
