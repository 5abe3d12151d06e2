// dynamiccl-lab calibrate: fit the simulator to shared/data/*/normalized.csv (or check the committed
// fit with --check), print MAPE and forced-config agreement per dataset, optionally plot.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "lab/cli/commands.h"
#include "offline/cli/cli.h"
#include "offline/files/files.h"
#include "lab/calibrate/calibrate.h"
#include "offline/sim/sim.h"

namespace dynamiccl::cli {
namespace {

struct CalibrateCmdOptions {
  std::string dataDir, outDir, plotsDir, only;
  bool check = false, fresh = false;
  int iterations = 700, restarts = 3;
};

Status writePredictions(const std::string& path, const std::vector<sim::RowPrediction>& preds,
                        const std::string& dataset, bool append) {
  auto file = files::OutputFile::open(path, append ? files::OutputFile::Mode::Append : files::OutputFile::Mode::Truncate);
  if (!file) return makeError(file.error());
  std::ostream& out = (*file)->stream();
  if (!append) out << "dataset,group,collective,nranks,nnodes,bytes,config,forced,measured_us,predicted_us\n";
  for (const auto& p : preds) {
    std::string group = p.row.group;
    for (char& c : group)
      if (c == ',' || c == '"') c = ' ';
    out << dataset << "," << group << "," << collectiveName(p.row.coll) << "," << p.row.nRanks << ","
        << p.row.nNodes << "," << p.row.bytes << "," << algoNcclName(p.config.algo) << "/"
        << protoNcclName(p.config.proto) << "," << (p.row.forced() ? 1 : 0) << "," << p.row.time_us << ","
        << p.predicted_us << "\n";
  }
  return (*file)->close();
}

// One dataset's line (MAPE, agreement, noise floor, rows skipped) and its groups'.
void printCalibration(const std::string& name, const sim::DatasetCalibration& cal) {
  int skipped = 0;
  std::string why;
  for (const auto& [reason, n] : cal.skipped) {
    skipped += n;
    why += (why.empty() ? "" : "; ") + reason + ": " + std::to_string(n);
  }
  char agree[32] = "-", within[32] = "-";
  if (cal.agreementPoints) {
    std::snprintf(agree, sizeof agree, "%.0f%%/%.0f%% of %d", 100.0 * cal.agreementExact / cal.agreementPoints,
                  100.0 * cal.agreement(), cal.agreementPoints);
    std::snprintf(within, sizeof within, "%.1f%%", 100.0 * cal.agreementWithinNoise / cal.agreementPoints);
  }
  char floor[40] = "-";
  if (cal.floorMape >= 0) std::snprintf(floor, sizeof floor, "%.1f%% (%d)", 100 * cal.floorMape, cal.floorRows);
  std::printf("%-32s %6d %7.1f%% %16s %10s %16s  %d (%s)\n", name.c_str(), cal.rows, 100 * cal.mape, agree, within,
              floor, skipped, why.c_str());
  for (const auto& g : cal.groups)
    std::printf("    %-70.70s %5d rows  MAPE %5.1f%%\n", g.group.c_str(), g.rows, 100 * g.mape);
}

int run(const CalibrateCmdOptions& o) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(o.dataDir)) {
    std::cerr << "calibrate: --data-dir " << o.dataDir << " is not a directory\n";
    return 1;
  }
  const std::string calDir = o.outDir.empty() ? sim::defaultCalibrationDir() : o.outDir;
  std::string predsCsv;
  if (!o.plotsDir.empty()) {
    fs::create_directories(o.plotsDir);
    predsCsv = (fs::path(o.plotsDir) / "calibration_predictions.csv").string();
  }
  std::printf("%-32s %6s %8s %16s %10s %16s  %s\n", "dataset", "rows", "MAPE", "agree exact/tie", "within 5%",
              "floor (rows)", "skipped");
  bool first = true;
  for (const std::string& dir : sim::datasetDirs(o.dataDir, o.only)) {
    const std::string name = fs::path(dir).filename().string();
    const std::string calFile = (fs::path(calDir) / (name + ".json")).string();
    auto calibrated = sim::calibrateDatasetDir({dir, calFile, o.check, o.fresh, o.iterations, o.restarts, !predsCsv.empty()});
    if (!calibrated) return std::cerr << "calibrate " << calibrated.error() << "\n", 1;
    printCalibration(name, calibrated->calibration);
    if (!o.check) {
      fs::create_directories(calDir);
      if (auto s = files::writeFile(calFile, sim::calibrationToJson(calibrated->calibration)); !s)
        return std::cerr << "calibrate: " << s.error() << "\n", 1;
    }
    if (!predsCsv.empty())
      if (auto s = writePredictions(predsCsv, calibrated->predictions, name, !first); !s)
        return std::cerr << "calibrate: " << s.error() << "\n", 1;
    first = false;
  }
  std::printf("agreement: how often the simulator's best forced configuration is the measured best: exactly, or\n"
              "within the dataset's repeat noise (a tie); within 5%%: its pick measured within 5%% of the best.\n");
  std::printf("floor: over points measured more than once (repeats, environment variants), the MAPE of the best\n"
              "single time per point; no model that predicts one time per point can do better on those rows.\n");
  if (!predsCsv.empty()) {
    if (auto plotted = runPlotScript("plot_calibration.py", {predsCsv, o.plotsDir}); !plotted) {
      std::cerr << "calibrate: " << plotted.error() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace

void addCalibrateCommand(CLI::App& app) {
  auto o = std::make_shared<CalibrateCmdOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit the simulator to measured data; print MAPE and agreement");
  addPlatformOption(cmd);
  cmd->add_option("--data-dir", o->dataDir, "shared/data (folders with normalized.csv)")->required();
  cmd->add_option("--out", o->outDir, "where to write <dataset>.json (default: offline/platforms/calibration of the source tree)");
  cmd->add_option("--plots", o->plotsDir, "write predicted-vs-measured PNGs (and their CSV) here");
  cmd->add_option("--dataset", o->only, "only this dataset folder");
  cmd->add_flag("--check", o->check, "evaluate the committed parameters instead of fitting");
  cmd->add_flag("--fresh", o->fresh, "fit from the simulator's defaults, not from the parameters already in --out");
  cmd->add_option("--iterations", o->iterations, "Nelder-Mead iterations per restart");
  cmd->add_option("--restarts", o->restarts, "Nelder-Mead restarts");
  cmd->callback([o] {
    if (const int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
