// Each `dynamiccl` subcommand lives in its own cmd_<name>.cpp and registers itself here.
#pragma once

namespace CLI {
class App;
}

namespace dynamiccl::cli {
void addShowCommand(CLI::App& app);
void addValidateCommand(CLI::App& app);
void addIngestCommand(CLI::App& app);
void addDbCommand(CLI::App& app);
void addSimCommand(CLI::App& app);
void addReplayCommand(CLI::App& app);
void addTrainCommand(CLI::App& app);
void addTuneCommand(CLI::App& app);
void addExportCommand(CLI::App& app);
void addEnvCommand(CLI::App& app);
void addDemoCommand(CLI::App& app);
void addProbeCommand(CLI::App& app);
void addMergeCommand(CLI::App& app);
void addProfileCommand(CLI::App& app);
void addMeasurementCostCommand(CLI::App& app);
void addReportCommand(CLI::App& app);
}  // namespace dynamiccl::cli
