// What both tools' main() do with their subcommands registered: the conventions, the parse, and the
// output flushed (a failed write to standard output fails the command).
#pragma once

namespace CLI {
class App;
}

namespace dynamiccl::cli {
// name: the tool, for its one line when standard output cannot be written.
int runCommandLine(CLI::App& app, int argc, char** argv, const char* name);
}  // namespace dynamiccl::cli
