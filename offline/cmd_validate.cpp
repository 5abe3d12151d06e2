#include <CLI/CLI.hpp>

#include "offline/commands.h"

namespace dynamiccl::cli {
void addValidateCommand(CLI::App& app) { app.add_subcommand("validate", "(not yet)"); }
}  // namespace dynamiccl::cli
