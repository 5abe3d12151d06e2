// Each `dynamiccl-lab` subcommand lives in its own cmd_<name>.cpp and registers itself here.
#pragma once

namespace CLI {
class App;
}

namespace dynamiccl::cli {
void addCalibrateCommand(CLI::App& app);
void addCrossvalCommand(CLI::App& app);
void addPolicyEvalCommand(CLI::App& app);
void addOnlineEvalCommand(CLI::App& app);
void addDemoCommand(CLI::App& app);  // the simulated demo
}  // namespace dynamiccl::cli
