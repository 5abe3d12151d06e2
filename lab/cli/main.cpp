// dynamiccl-lab: what we judge the product with, beside it (simulator calibration, cross-validation,
// policy and online evaluation, the simulated demo). Users run `dynamiccl`; nothing here is in it.
#include <CLI/CLI.hpp>

#include "lab/cli/commands.h"
#include "offline/cli/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"dynamiccl-lab: the lab of the DynamICCL NCCL tuner (calibrate, crossval, policy-eval, online-eval, the simulated demo)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dynamiccl-lab 0.1.0");
  app.option_defaults()->always_capture_default();
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + " (see --help)\n"; });
  dynamiccl::cli::addCalibrateCommand(app);
  dynamiccl::cli::addCrossvalCommand(app);
  dynamiccl::cli::addPolicyEvalCommand(app);
  dynamiccl::cli::addOnlineEvalCommand(app);
  dynamiccl::cli::addDemoCommand(app);
  return dynamiccl::cli::runCommandLine(app, argc, argv, "dynamiccl-lab");
}
