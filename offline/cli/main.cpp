// dynamiccl: the offline toolkit (show, validate, ...). One subcommand per cmd_*.cpp file.
#include <CLI/CLI.hpp>

#include "offline/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"dynamiccl: offline toolkit of the DynamICCL NCCL tuner"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dynamiccl 0.1.0");
  dynamiccl::cli::addShowCommand(app);
  dynamiccl::cli::addValidateCommand(app);
  dynamiccl::cli::addIngestCommand(app);
  dynamiccl::cli::addDbCommand(app);
  dynamiccl::cli::addCalibrateCommand(app);
  dynamiccl::cli::addSimCommand(app);
  dynamiccl::cli::addReplayCommand(app);
  dynamiccl::cli::addTrainCommand(app);
  dynamiccl::cli::addPolicyEvalCommand(app);
  dynamiccl::cli::addCoordCommand(app);
  dynamiccl::cli::addOnlineEvalCommand(app);
  dynamiccl::cli::addTuneCommand(app);
  dynamiccl::cli::addCrossvalCommand(app);
  dynamiccl::cli::addExportCommand(app);
  dynamiccl::cli::addEnvCommand(app);
  dynamiccl::cli::addDemoCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
