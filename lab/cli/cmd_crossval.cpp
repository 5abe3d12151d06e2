// dynamiccl-lab crossval: what a profile tuned from measurements does at sizes and shapes it never
// saw (leave-one-size-out, leave-one-shape-out), judged on the held-out measurements.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "lab/cli/commands.h"
#include "offline/cli/cli.h"
#include "offline/files/files.h"
#include "lab/crossval/crossval.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli {
namespace {

struct CrossvalCmdOptions {
  std::string data, system, platform, csv = "crossval.csv", plot = "crossval.png";
  double minGain = 0.01, confidence = 0.95, switchPenalty = 0.02;
  int pool = 2;
  bool noShapes = false, noPlot = false, quiet = false;
};

int run(const CrossvalCmdOptions& o) {
  tune::CrossvalOptions co;
  co.csvPath = o.data;
  co.system = o.system;
  co.platform = o.platform;
  co.rule.minGain = o.minGain;
  co.rule.confidence = o.confidence;
  co.rule.poolNeighbours = o.pool;
  co.rule.switchPenalty = o.switchPenalty;
  co.leaveOneShapeOut = !o.noShapes;
  auto r = tune::crossValidate(co);
  if (!r) return std::cerr << "crossval: " << r.error() << "\n", 1;
  for (const std::string& n : r->notes) std::printf("  note: %s\n", n.c_str());
  std::printf("measured: every figure is a ratio of medians of the dataset's runs (each run one measurement, none "
              "resampled); NCCL's default is its default rows plus the forced runs of its settled configuration\n");
  if (!o.quiet)
    for (const tune::CrossvalPoint& p : r->points) {
      std::printf("  %-19s %-6s on %-6s %-13s %10s  %-28s", p.mode.c_str(), p.trainedOn.c_str(), p.shape.c_str(),
                  std::string(collectiveName(p.coll)).c_str(), sizeText(p.bytes).c_str(),
                  decisionLabel(p.chosen).c_str());
      if (p.judged)
        std::printf(" chosen/default %.3f  chosen/best %.3f  on %d vs %d runs%s\n", p.vsDefault, p.vsBest,
                    p.chosenRuns, p.defaultRuns, p.slowerBeyondNoise ? "  <-- slower than default beyond noise" : "");
      else
        std::printf(" unjudged (not measured here)\n");
    }
  std::printf("%-19s %6s %6s %5s %9s %9s %9s %9s %s\n", "mode", "points", "judged", "rules", "gm c/def", "worst",
              "gm c/best", "worst", "slower beyond noise");
  for (const tune::CrossvalModeSummary& m : r->summary)
    std::printf("%-19s %6d %6d %5d %9.4f %9.3f %9.4f %9.3f %d\n", m.mode.c_str(), m.points, m.judged, m.rules,
                m.geomeanVsDefault, m.worstVsDefault, m.geomeanVsBest, m.worstVsBest, m.slowerBeyondNoise);
  if (auto s = files::writeFile(o.csv, tune::crossvalCsv(*r)); !s) return std::cerr << "crossval: " << s.error() << "\n", 1;
  std::printf("wrote %s\n", o.csv.c_str());
  if (!o.noPlot) {
    if (auto plotted = runPlotScript("plot_crossval.py", {o.csv, o.plot}); !plotted)
      return std::cerr << "crossval: " << plotted.error() << "\n", 1;
    std::printf("wrote %s\n", o.plot.c_str());
  }
  return 0;
}

}  // namespace

void addCrossvalCommand(CLI::App& app) {
  auto o = std::make_shared<CrossvalCmdOptions>();
  CLI::App* cmd = app.add_subcommand("crossval", "Leave-one-size-out and leave-one-shape-out on measured data");
  cmd->add_option("--data", o->data, "interchange CSV (a dataset's normalized.csv)")->required();
  cmd->add_option("--system", o->system, "system substring filter");
  cmd->add_option("--measured-on", o->platform, "the platform the dataset was measured on, whatever its system strings say");
  cmd->add_option("--min-gain", o->minGain, "rule: the confidence bound on chosen/default must be below 1 - this")
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--confidence", o->confidence, "rule: confidence of the one-sided bound")->check(CLI::Range(0.5, 0.9999));
  cmd->add_option("--pool", o->pool, "rule: neighbouring sizes either side that may pool noise and evidence")
      ->check(CLI::Range(0, 8));
  cmd->add_option("--switch-penalty", o->switchPenalty, "smoothing: regret a change of configuration must repay");
  cmd->add_option("--csv", o->csv, "per-point CSV");
  cmd->add_option("--plot", o->plot, "plot (PNG) of chosen/default per size and mode");
  cmd->add_flag("--no-shapes", o->noShapes, "skip leave-one-shape-out");
  cmd->add_flag("--no-plot", o->noPlot, "no PNG");
  cmd->add_flag("--quiet", o->quiet, "summary only");
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
