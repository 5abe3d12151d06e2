#include "offline/cli/command_line.h"

#include <CLI/CLI.hpp>

#include <iostream>

#include "offline/cli/value_checks.h"
#include "offline/files/files.h"

namespace dynamiccl::cli {

int runCommandLine(CLI::App& app, int argc, char** argv, const char* name) {
  applyConventions(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc != 0 ? rc : (files::flushStdout() ? 0 : 1);  // --help into a full disk fails too
  }
  if (auto s = files::flushStdout(); !s) return std::cerr << name << ": " << s.error() << "\n", 1;
  return 0;
}

}  // namespace dynamiccl::cli
