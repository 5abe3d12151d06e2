#include <CLI/CLI.hpp>

#include "offline/commands.h"

namespace dynamiccl::cli {
void addShowCommand(CLI::App& app) { app.add_subcommand("show", "(not yet)"); }
}  // namespace dynamiccl::cli
