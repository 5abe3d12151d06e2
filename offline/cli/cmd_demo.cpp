// dynamiccl demo: the main job, runnable on a fresh machine without a GPU. By default on real
// measurements (the embedded L40S sweeps, offline/demo/demo_measured.cpp): a simulated profile is
// verified in a job replayed through the real plugin and judged against NCCL's default and the
// measured best. The simulated cluster's demo is the lab's (`dynamiccl-lab demo`, lab/cli/cmd_demo.cpp).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/files/files.h"
#include "offline/demo/demo.h"
#include "offline/cli/plot_runner.h"
#include "offline/cli/plugin_locator.h"
#include "policy/policy.h"

namespace dynamiccl::cli {
namespace {

using demo::DemoOptions;

int fail(const std::string& what) {
  std::cerr << "demo: " << what << "\n";
  return 1;
}

// The PNGs of outDir, as the last step's status says it.
std::string plot(const DemoOptions& o, const std::string& outDir) { return demoPlots(o.noPlots, outDir); }

int run(const DemoOptions& o) {
  namespace fs = std::filesystem;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return fail("cannot create " + o.out + ": " + ec.message());
  demo::printWrapped(std::string("dynamiccl demo") + (o.quick ? " (quick)" : "") + ", on measurements: output in " + o.out +
                     "/", "", "    ");
  const int rc =
      demo::runMeasured(o, locatePlugin(o.plugin), [&o](const std::string& dir) { return plot(o, dir); });
  if (rc == 0)
    demo::printWrapped(demo::textf("done in %.1f s; files in %s/",
                                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                   o.out.c_str()),
                       "", "    ");
  return rc;
}

}  // namespace

void addDemoCommand(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "The main job (no GPU needed): a simulated profile verified in a job replayed through the real plugin on real "
      "measurements (embedded L40S sweeps), judged against NCCL's default and the measured best (the simulated "
      "cluster's demo: dynamiccl-lab demo)");
  addPlatformOption(cmd);
  cmd->add_option("--data", o->data,
                  "normalized.csv: the measurements the job replays (default: the embedded L40S sweeps)");
  cmd->add_option("--ranks", o->ranks, "the dataset's communicator shape by ranks (default: most measured configurations)")
      ->check(CLI::Range(2, 512));
  cmd->add_option("--system", o->system, "the dataset's communicator shape by its system text (a substring; default: any)");
  cmd->add_option("--iterations", o->iterations, "passes of the replayed job over its keys (default 4000, --quick 1000)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--jobs", o->jobs,
                  "measured: jobs run one after another on the same store, each the next job of the one before "
                  "(default 2)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--db", o->db, "SQLite store of observations to train from as well");
  cmd->add_option("--out", o->out, "output folder");
  cmd->add_option("--plugin", o->plugin, "plugin library (default: the build tree's)");
  cmd->add_option("--seed", o->seed, "seed (simulator noise, TPE, training)");
  cmd->add_flag("--quick", o->quick, "smaller budgets (what the test runs)");
  cmd->add_flag("--verbose", o->verbose, "print each candidate and each verdict (always in tuned.json, verdicts.txt)");
  cmd->add_flag("--no-plots", o->noPlots, "skip the PNGs");
  cmd->add_flag("--online", o->online,
                "measured job: online learning too (DYNAMICCL_ONLINE=1), exploring arms the simulator did not propose");
  cmd->add_flag("--learned", o->learned,
                "measured job: the learned network's profile (trained with the dataset's machine held out) instead of "
                "the simulator's, its proposals verified in the job");
  cmd->add_option("--train-data", o->trainData,
                  "--learned: other machines' normalized.csv to train on too (the replayed machine's rows are skipped)");
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
