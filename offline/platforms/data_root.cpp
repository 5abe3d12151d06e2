#include "offline/platforms/data_root.h"

#include <filesystem>
#include <system_error>

namespace dynamiccl::platforms {

DataRoot dataRoot() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path prefix = exe.parent_path().parent_path();
    const fs::path installed = prefix / DYNAMICCL_INSTALL_DATADIR / "dynamiccl";
    if (fs::is_directory(installed / "offline" / "platforms", ec))
      return {installed.string(), prefix.string(), (prefix / DYNAMICCL_INSTALL_LIBDIR).string()};
  }
  return {DYNAMICCL_SOURCE_DIR, "", ""};
}

}  // namespace dynamiccl::platforms
