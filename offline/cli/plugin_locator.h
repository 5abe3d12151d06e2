// Where the dynamiccl command finds the plugin library it drives (show, replay).
#pragma once

#include <string>

namespace dynamiccl::cli {

// --plugin if given, else DYNAMICCL_PLUGIN_PATH, else the build tree's plugin, else next to the executable.
std::string locatePlugin(const std::string& explicitPath);

}  // namespace dynamiccl::cli
