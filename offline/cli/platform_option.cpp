#include "offline/cli/platform_option.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "offline/platforms/platforms.h"

namespace dynamiccl::cli {

void addPlatformOption(CLI::App* cmd) {
  cmd->add_option_function<std::vector<std::string>>(
      "--platform",
      [](const std::vector<std::string>& files) {
        if (auto added = platforms::addPlatformFiles(files); !added) throw CLI::ValidationError("--platform", added.error());
      },
      "a platform file of your own (repeatable; a name already known replaces that platform)");
}

}  // namespace dynamiccl::cli
