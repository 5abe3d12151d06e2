// One platform: a cluster the offline tools know, read from its own JSON file
// (offline/platforms/<name>.json): its node's topology, the dataset system names that mean it, and
// the calibration the simulator uses for it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"

namespace dynamiccl::platforms {

inline constexpr std::string_view kPlatformFormat = "dynamiccl-platform";
inline constexpr int kPlatformVersion = 1;
inline constexpr size_t kMaxPlatformFileBytes = 1 << 20;

// The simulator parameters of a platform: the first group of a committed calibration
// (offline/platforms/calibration/<dataset>.json) whose name starts with `group`.
struct CalibrationSource {
  std::string dataset;
  std::string group;
};

// A platform trained on (`dynamiccl train`, the demo, `policy-eval`): its machines are the platform at
// each node count, named "<platform>x<nodes>" ("dgx-h100x2").
struct TrainingMachines {
  std::vector<int> nodes;
  // Place in the list of training machines, smaller first; none: after those with one, in registry
  // order. The list's order is the order of the rollouts, so it shapes what is learned.
  std::optional<int> order;
  // A calibration hold-out: kept out of training, its machines measure the error of predicted gains
  // (the guard's margin); `dynamiccl train --calibrate-on` defaults to these.
  bool calibrate = false;
};

struct Platform {
  std::string name;
  std::string description;
  std::string source;                 // the public spec the numbers come from
  model::Topology topology;           // one node (nNodes 1); topology.name is the platform's name
  std::vector<std::string> systems;   // a dataset row whose system string contains one of these is this platform
  std::optional<CalibrationSource> calibration;  // nullopt: the simulator's default parameters
  std::optional<TrainingMachines> train;         // nullopt: not trained on
  std::string file;                   // where it was read ("" when parsed from text)
};

// {"format": "dynamiccl-platform", "version": 1, "name", "description", "source", "systems": [...],
//  "calibration": {"dataset", "group"} | null, "train": {"nodes": [...], "order", "calibrate"} (optional),
//  "topology": {model::Topology's fields but name and nNodes}}.
// Unknown keys, wrong types and impossible topologies are errors naming the key.
Expected<Platform> platformFromJson(std::string_view text);
std::string platformToJson(const Platform& p);
// A regular file of at most kMaxPlatformFileBytes; errors name the file.
Expected<Platform> loadPlatformFile(const std::string& path);

}  // namespace dynamiccl::platforms
