// `dynamiccl-lab online-eval`: the online learner's loop per key, 10k calls, against the static
// profile and NCCL's default, in the calibrated simulator and (--data) on real measurements
// resampled by sim::MeasuredEnvironment. Prints exploration cost, final ratio to the best and the
// recovery after an injected drift; writes a CSV trace and plots it (scripts/plot_online_eval.py).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "lab/cli/commands.h"
#include "offline/cli/cli.h"
#include "offline/files/files.h"
#include "lab/eval/eval.h"
#include "policy/policy.h"
#include "learner/learner.h"
#include "offline/sim/sim.h"
#include "offline/train/train.h"

namespace dynamiccl::cli {
namespace {

struct OnlineEvalOptions {
  std::string preset = "dgx-h100", out = "online_eval.csv", png = "online_eval.png", data;
  int nodes = 1;
  uint64_t calls = 10000, epoch = 500;
  bool noModelPrior = false, uncalibrated = false;
};

using eval::KeyWorld;
using eval::KeyResult;

void printTable(const std::vector<KeyWorld>& keys, const OnlineEvalOptions& o, std::ostream& trace) {
  std::printf("%-28s %12s %12s %12s %13s %15s\n", "key", "explore_cost", "online/best", "static/best", "default/best",
              "recovery_calls");
  double worst = 0;
  for (const KeyWorld& w : keys) {
    const KeyResult r = eval::evalKey(w, {o.calls, o.epoch, o.noModelPrior}, trace);
    worst = std::max(worst, r.exploreShare);
    std::printf("%-28s %11.3f%% %12.4f %12.4f %13.4f %15lld\n", w.label.c_str(), 100 * r.exploreShare, r.finalRatio,
                r.staticFinalRatio, r.defaultFinalRatio, static_cast<long long>(r.recoveryCalls));
  }
  std::printf("worst exploration cost %.3f%% of collective time (target <= %.0f%%)\n", 100 * worst,
              100 * learner::OnlineConfig{}.exploreTimeShare);
}

int run(const OnlineEvalOptions& o) {
  auto topo = sim::preset(o.preset, o.nodes);
  if (!topo) return std::cerr << "online-eval: " << topo.error() << "\n", 1;
  const train::CalibratedParams cal =
      o.uncalibrated ? train::CalibratedParams{sim::SimParams{}, "defaults (--uncalibrated)"} : train::calibratedParams(o.preset);
  const sim::Simulator s(*topo, cal.params);
  auto ref = model::NcclReference::create(*topo);
  if (!ref) return std::cerr << "online-eval: " << ref.error() << "\n", 1;
  auto traceFile = files::OutputFile::open(o.out);
  if (!traceFile) return std::cerr << "online-eval: " << traceFile.error() << "\n", 1;
  std::ostream& trace = (*traceFile)->stream();
  trace << "source,key,call,online_ratio,static_ratio,default_ratio\n";
  std::printf("%llu calls per key, epoch %llu, drift: the static choice becomes 2x slower at call %llu; prior for "
              "untried arms: %s\n",
              static_cast<unsigned long long>(o.calls), static_cast<unsigned long long>(o.epoch),
              static_cast<unsigned long long>(o.calls / 2),
              o.noModelPrior ? "2x slower (--no-model-prior)" : "NCCL's cost table");
  std::printf("== simulator: %s x%d (calibration %s)\n", o.preset.c_str(), o.nodes, cal.source.c_str());
  printTable(eval::simulatedKeys(s, *ref), o, trace);
  if (!o.data.empty()) {
    auto loaded = measurements::loadMeasurements(o.data);
    if (!loaded) return std::cerr << "online-eval: " << loaded.error() << "\n", 1;
    auto data = measurements::buildReplayData(loaded->rows);
    if (!data) return std::cerr << "online-eval: " << data.error() << "\n", 1;
    const std::vector<KeyWorld> keys = eval::measuredKeys(*data);
    std::printf("== measurements: %s (resampled with MeasuredEnvironment; %zu keys; arms = measured configs NCCL's table allows)\n",
                o.data.c_str(), keys.size());
    if (keys.empty()) std::printf("no point has three measured configurations: nothing to learn among\n");
    else printTable(keys, o, trace);
  }
  if (auto s = (*traceFile)->close(); !s) return std::cerr << "online-eval: " << s.error() << "\n", 1;
  std::printf("trace: %s\n", o.out.c_str());
  if (!o.png.empty()) {
    if (auto plotted = runPlotScript("plot_online_eval.py", {o.out, o.png}); !plotted)
      return std::cerr << "online-eval: " << plotted.error() << "\n", 1;
    if (!std::filesystem::exists(o.png) || std::filesystem::file_size(o.png) == 0)
      return std::cerr << "online-eval: the plot script did not write " << o.png << "\n", 1;
    std::printf("plot: %s\n", o.png.c_str());
  }
  return 0;
}

}  // namespace

void addOnlineEvalCommand(CLI::App& app) {
  auto o = std::make_shared<OnlineEvalOptions>();
  auto* cmd = app.add_subcommand("online-eval",
                                 "online learning in the simulator and on measurements: exploration cost, ratio to best, drift recovery");
  addPlatformOption(cmd);
  cmd->add_option("--preset", o->preset, "topology preset");
  cmd->add_option("--nodes", o->nodes, "nodes of the preset")->check(CLI::Range(1, 512));
  cmd->add_option("--data", o->data, "also replay on a normalized.csv (shared/data/<dataset>/normalized.csv)");
  cmd->add_option("--out", o->out, "CSV trace");
  cmd->add_option("--png", o->png, "plot of the trace (scripts/plot_online_eval.py); empty: none");
  cmd->add_option("--calls", o->calls, "calls per key")->check(CLI::Range(1000, 10000000));
  cmd->add_option("--epoch", o->epoch, "calls per table version")->check(CLI::Range(10, 1000000));
  cmd->add_flag("--no-model-prior", o->noModelPrior, "assume untried arms 2x slower instead of NCCL's cost table");
  cmd->add_flag("--uncalibrated", o->uncalibrated, "simulator defaults instead of offline/platforms/calibration");
  cmd->callback([o] {
    if (int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
