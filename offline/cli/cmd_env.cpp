// dynamiccl env: the environment a job script needs to run with a tuned profile (plugin, profile
// path, per-job knobs NCCL_NTHREADS / NCCL_BUFFSIZE); run from an installed prefix, also the loader
// path to that prefix's plugin.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/platforms/platforms.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli {
namespace {

struct EnvCmdOptions {
  std::string in, profilePath, plugin = "dynamiccl";
};

int run(const EnvCmdOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.in, ec))
    return std::cerr << "env: " << o.in << " is a directory; give a tune report (dynamiccl tune -o) or a profile JSON\n", 1;
  // A report or profile is a JSON object; a CSV (or anything else) is said in a line, not by the JSON reader.
  std::ifstream in(o.in);
  if (char first = 0; in >> first && first != '{')
    return std::cerr << "env: " << o.in << " is not JSON; give a tune report (dynamiccl tune -o) or a profile JSON\n", 1;
  auto report = tune::loadReportFile(o.in);
  if (!report) return std::cerr << "env: " << report.error() << "\n", 1;
  // The plugin reads the profile JSON; a tune report is one too only through `export`.
  std::string path = o.profilePath;
  const bool isReport = !report->backend.empty();
  std::filesystem::path guess = std::filesystem::absolute(o.in);
  if (isReport) guess.replace_extension(".profile.json");
  if (path.empty()) path = guess.string();
  std::cout << "# " << report->profile.rules.size() << " rules from " << o.in << "\n";
  if (isReport && o.profilePath.empty()) std::cout << "# write the profile first: dynamiccl export " << o.in << " -o " << path << "\n";
  for (const std::string& r : report->jobKnobs.reasons) std::cout << "# " << r << "\n";
  std::cout << tune::envScript(report->jobKnobs.knobs, path, o.plugin);
  // NCCL resolves a plugin name (not a path) on the loader path: the installed lib folder.
  if (const platforms::DataRoot root = platforms::dataRoot(); !root.prefix.empty()) {
    std::cout << "# installed in " << root.prefix << " (data: " << root.path << ")\n";
    std::cout << "export LD_LIBRARY_PATH=" << root.libDir << "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n";
  }
  return 0;
}

}  // namespace

void addEnvCommand(CLI::App& app) {
  auto o = std::make_shared<EnvCmdOptions>();
  CLI::App* cmd = app.add_subcommand("env", "Print the exports a job script needs for a tuned profile");
  cmd->add_option("input", o->in, "tune report (dynamiccl tune -o) or profile JSON")->required();
  cmd->add_option("--profile-path", o->profilePath, "profile JSON the job will read (default: the input)");
  cmd->add_option("--plugin", o->plugin, "NCCL_TUNER_PLUGIN value");
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
