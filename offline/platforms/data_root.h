// Where the offline tools' data files live (platform files, calibrations, example profiles, plot
// scripts): the one place that knows the installed layout and the source tree.
#pragma once

#include <string>

namespace dynamiccl::platforms {

struct DataRoot {
  std::string path;    // holds offline/platforms, offline/platforms/calibration, profiles, scripts
  std::string prefix;  // the install prefix when installed; empty when running from the build tree
  std::string libDir;  // <prefix>/lib (the plugin) when installed; empty otherwise
};

// <exe>/../share/dynamiccl when the running program is installed (that folder holds
// offline/platforms), else the source tree this program was built from.
DataRoot dataRoot();

}  // namespace dynamiccl::platforms
