#include "offline/cli/plugin_locator.h"

#include <unistd.h>

#include <filesystem>

#include "offline/harness/harness.h"

namespace dynamiccl::cli {

std::string locatePlugin(const std::string& explicitPath) {
  namespace fs = std::filesystem;
  if (!explicitPath.empty()) return explicitPath;
  if (auto p = harness::pluginPathFromEnv()) return *p;
  const std::string name = "libnccl-tuner-dynamiccl.so";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& dir : {exe.parent_path().parent_path() / "plugin", exe.parent_path().parent_path() / "lib",
                                exe.parent_path()})
      if (fs::exists(dir / name, ec)) return (dir / name).string();
  }
  return std::string(DYNAMICCL_PLUGIN_DIR) + "/" + name;
}

}  // namespace dynamiccl::cli
