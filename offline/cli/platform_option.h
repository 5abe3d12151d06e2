// --platform FILE (repeatable) for the commands that take a preset or read datasets: a user's own
// platform file (offline/platforms/README.md) joins the built-in ones before the command runs.
#pragma once

namespace CLI {
class App;
}

namespace dynamiccl::cli {

// A file that does not load stops the command with one line naming the file and the problem.
void addPlatformOption(CLI::App* cmd);

}  // namespace dynamiccl::cli
