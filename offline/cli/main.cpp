// dynamiccl: the offline toolkit (show, validate, ...). One subcommand per cmd_*.cpp file; the lab's
// commands (calibrate, crossval, policy-eval, online-eval) are dynamiccl-lab's (lab/).
#include <CLI/CLI.hpp>

#include "offline/cli/command_line.h"
#include "offline/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"dynamiccl: offline toolkit of the DynamICCL NCCL tuner"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dynamiccl 0.1.0");
  app.option_defaults()->always_capture_default();  // every subcommand's --help shows its defaults
  // A bad value is one line: what is wrong, and where help is.
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + " (see --help)\n"; });
  dynamiccl::cli::addShowCommand(app);
  dynamiccl::cli::addValidateCommand(app);
  dynamiccl::cli::addIngestCommand(app);
  dynamiccl::cli::addDbCommand(app);
  dynamiccl::cli::addSimCommand(app);
  dynamiccl::cli::addReplayCommand(app);
  dynamiccl::cli::addTrainCommand(app);
  dynamiccl::cli::addTuneCommand(app);
  dynamiccl::cli::addExportCommand(app);
  dynamiccl::cli::addEnvCommand(app);
  dynamiccl::cli::addDemoCommand(app);
  dynamiccl::cli::addProbeCommand(app);
  dynamiccl::cli::addMergeCommand(app);
  dynamiccl::cli::addProfileCommand(app);
  dynamiccl::cli::addMeasurementCostCommand(app);
  dynamiccl::cli::addReportCommand(app);
  return dynamiccl::cli::runCommandLine(app, argc, argv, "dynamiccl");
}
