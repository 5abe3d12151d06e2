// The platforms the offline tools know: every platform file of the built-in folder plus the files a
// user adds (`--platform FILE`). One registry per process serves the simulator, training, the demo,
// replay and the measurements' system-name mapping alike.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "offline/platforms/platform.h"

namespace dynamiccl::platforms {

class Registry {
 public:
  // Every *.json directly in `dir` (by file name), then `files` in order. A platform named like one
  // already there replaces it (a user's file overrides a built-in); any bad file fails the whole load.
  static Expected<Registry> load(const std::string& dir, const std::vector<std::string>& files = {});
  // Adds or replaces by name; refuses a system pattern another platform already has.
  Status add(Platform p);

  const Platform* find(std::string_view name) const;
  // The platform with the longest system pattern found in `system` (ties: the earlier platform);
  // nullptr when none matches.
  const Platform* forSystem(std::string_view system) const;
  std::vector<std::string> names() const;
  const std::vector<Platform>& all() const { return platforms_; }

 private:
  std::vector<Platform> platforms_;
};

// The built-in folder: $DYNAMICCL_PLATFORM_DIR when set, else offline/platforms of dataRoot().
std::string builtinPlatformDir();

// The process's registry: the built-in folder plus every file given to addPlatformFiles().
Expected<std::shared_ptr<const Registry>> registry();
// Adds user platform files to the process's registry; on error (naming the file) nothing changes.
Status addPlatformFiles(const std::vector<std::string>& files);

}  // namespace dynamiccl::platforms
