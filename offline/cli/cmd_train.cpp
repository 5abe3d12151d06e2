// dynamiccl train: trains the learned policy (GRU over recent timings + MLP over the features) from
// simulator rollouts and the SQLite store, validates on held-out rows and held-out machines, and
// writes a profile whose "policy" key holds the weights the plugin evaluates with Eigen and, with
// --preset/--probe-host/fact flags, whose "fingerprint" declares the cluster it is for. The recipe
// is offline/train's (train::runTrainPlan); this file turns options into a plan and prints its report.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/cli/plot_runner.h"
#include "offline/cli/store_location.h"
#include "offline/cli/cluster_facts.h"
#include "offline/train/train.h"
#include "policy/policy.h"
#include "store/store.h"

namespace dynamiccl::cli {
namespace {

struct TrainCmdOptions {
  std::string db, out = "dynamiccl-policy.json", curve = "learning_curve.csv", png;
  std::vector<std::string> holdOut = {"h800"};
  std::vector<std::string> calibrateOn = train::defaultCalibrationPrefixes();
  std::vector<std::string> data;  // interchange CSVs of real measurements
  std::string measuredOn;         // the platform those were measured on, whatever their system strings say
  float realWeight = 4.0f;        // a measured row weighs this many simulated ones
  double confidence = 0.9;        // quantile of the held-out error the guard margin covers
  bool noConfidence = false;
  bool noStore = false;
  int keysPerSystem = 300;
  train::TrainOptions train;
  ClusterFactsOptions cluster;  // the "fingerprint" written: the cluster the profile is for
};

// The plan of these options: the declared cluster and the store are read before training, so a typo
// or a store that cannot be read does not cost the run.
Expected<train::TrainPlan> planOf(const TrainCmdOptions& o) {
  auto cluster = resolveClusterFacts(o.cluster);
  if (!cluster) return makeError(cluster.error());
  train::TrainPlan plan;
  const std::string db = storeOptions(o.db).path;
  if (!o.noStore && (db != store::defaultDatabasePath() || std::filesystem::exists(db))) {
    auto s = train::storeSamples(db);
    if (!s) return makeError(s.error() + " (--no-store trains without it)");
    plan.store = std::move(*s);
  }
  plan.holdOut = o.holdOut;
  plan.calibrateOn = o.calibrateOn;
  plan.confidence = !o.noConfidence;
  plan.confidenceQuantile = o.confidence;
  plan.measuredFiles = o.data;
  plan.measuredOn = o.measuredOn;
  plan.realWeight = o.realWeight;
  plan.keysPerSystem = o.keysPerSystem;
  plan.options = o.train;
  plan.fingerprint = *cluster;
  plan.profileName = "dynamiccl-learned-policy";
  plan.profileDescription = "DynamICCL learned policy; rules are generated per communicator from the network";
  plan.profilePath = o.out;
  plan.curvePath = o.curve;
  return plan;
}

std::string listOrNone(const std::vector<std::string>& machines) {
  return machines.empty() ? "(none)" : train::machineList(machines);
}

// What the fit will see: machines, rows and where they come from.
void printRows(const TrainCmdOptions& o, const train::TrainReport& r) {
  std::printf("machines: train %s\n          held out %s\n", train::machineList(r.trained).c_str(),
              listOrNone(r.heldOut).c_str());
  if (!o.noConfidence)
    std::printf("          calibration (error of predicted gains) %s\n", listOrNone(r.calibration).c_str());
  for (const train::MeasuredFileReport& f : r.measured)
    for (const std::string& line : f.skipped) std::printf("  %s: %s\n", f.path.c_str(), line.c_str());
  std::printf("simulator rollouts: %zu rows (%.0f%% of situations congested)\n", r.rolloutRows,
              r.congestedFraction * 100);
  for (const train::MeasuredFileReport& f : r.measured)
    std::printf("measured %s: %zu points; %zu rows trained on (weight %.1f each), %zu held out%s\n", f.path.c_str(),
                f.points, f.trainedRows, o.realWeight, f.heldOutRows,
                f.calibrates ? ", its calibration machines measure the error" : "");
  if (o.noStore) {
    std::printf("store: not used (--no-store)\n");
  } else if (!r.store) {
    std::printf("store: %s does not exist; simulator rollouts only\n", storeOptions(o.db).path.c_str());
  } else {
    std::printf(
        "store: %zu observations, %zu used (importance-weighted x %.1f), %zu skipped (%zu of unknown hardware, "
        "%zu symmetric-memory kernels)\n",
        r.store->read, r.store->used, o.realWeight, r.store->skipped, r.store->unknownHardware, r.store->symmetric);
  }
  std::printf("training on %zu rows, validating on %zu, held-out machines %zu rows; %d epochs on %d threads\n",
              r.trainRows, r.validationRows, r.heldOutRows, o.train.epochs, o.train.threads);
}

// The guard margin and per-key confidence measured on the calibration machines.
void printConfidence(const train::TrainReport& r) {
  if (!r.covarianceError.empty())
    std::printf("confidence: no last-layer covariance (%s); no per-key confidence\n", r.covarianceError.c_str());
  if (!r.confidenceError.empty())
    std::printf("confidence: not measured (%s); the guard stays off\n", r.confidenceError.c_str());
  if (!r.confidence) return;
  const train::Confidence& c = *r.confidence;
  std::printf(
      "confidence: held-out error of the predicted gain (quantile %.2f over %zu keys) %.3f in log -> "
      "guard margin %.3f: a rule only where its predicted gain exceeds x%.3f\n",
      c.quantile, c.gains.size(), c.logError, c.margin, std::exp(c.logError));
  if (c.covarianceScale > 0)
    std::printf(
        "confidence per key: the last layer's covariance scaled x%.3f so that %.3f of its standard "
        "deviations are that quantile of the error; a rule also needs a predicted gain beyond them\n",
        c.covarianceScale, r.keyErrorSigmas);
  else
    std::printf("confidence per key: none measurable; the margin alone guards\n");
  std::printf(
      "calibration on the calibration machines (gain = NCCL's time / the choice's; simulated, and measured "
      "where --data has them):\n%s",
      train::formatCalibration(train::calibrationBins(c.gains), "  ").c_str());
  if (const auto bins = train::confidenceBins(c.gains); !bins.empty())
    std::printf("%s", train::formatCalibration(bins, "  ", "z (sd of key)").c_str());
}

void printHeldOut(const train::TrainReport& r) {
  for (const train::HeldOutRatio& h : r.heldOutRatios)
    std::printf("held out %-18s congestion %.1f: simulated latency/best  policy %.3f  NCCL default %.3f\n",
                h.machine.c_str(), h.congestion, h.ratio.policyGeoMean, h.ratio.ncclGeoMean);
  if (!r.fingerprintError.empty())
    std::printf("no fingerprint from the measurements: %s\n", r.fingerprintError.c_str());
}

void printWritten(const TrainCmdOptions& o, const train::TrainReport& r) {
  std::printf("wrote %s (policy weights v%d) and %s\n", r.profilePath.c_str(), r.weightsVersion, o.curve.c_str());
  std::printf("its rules are learned, so unverified: the plugin applies them only with DYNAMICCL_TRUST=all\n");
  if (r.fingerprint)
    std::printf("fingerprint: %s\n", policy::clusterHardwareToJson(*r.fingerprint).c_str());
  else
    std::printf(
        "no fingerprint (--preset, --probe-host or --gpu-cc/--nvlink-gbps/--nics/--nic-gbps): multi-node "
        "communicators will not use the learned rules until it is declared (dynamiccl export --preset)\n");
  if (!o.png.empty()) {
    if (auto plotted = runPlotScript("plot_learning_curve.py", {o.curve, o.png}); plotted)
      std::printf("wrote %s\n", o.png.c_str());
    else
      std::printf("could not plot: %s\n", plotted.error().c_str());
  }
}

int run(const TrainCmdOptions& o) {
  if (auto loaded = train::loadTorchModule(); !loaded) {
    std::cerr << "dynamiccl train: " << loaded.error() << "\n";
    return 2;
  }
  auto plan = planOf(o);
  if (!plan) {
    std::cerr << "dynamiccl train: " << plan.error() << "\n";
    return 1;
  }
  plan->onRowsReady = [&o](const train::TrainReport& r) { printRows(o, r); };
  plan->onEpoch = [&o](const train::EpochStats& e) {
    std::printf("epoch %2d/%d  train %.4f  validation %.4f  held-out %.4f  (%.1f s)\n", e.epoch, o.train.epochs,
                e.trainLoss, e.validationLoss, e.heldOutLoss, e.seconds);
    std::fflush(stdout);
  };
  const train::TrainReport report = train::runTrainPlan(*plan);
  for (const std::string& m : report.unusableMachines) std::cerr << "skipping preset " << m << "\n";
  printConfidence(report);
  printHeldOut(report);
  if (report.failure != train::TrainFailure::None) {
    const bool ours = report.failure == train::TrainFailure::Input || report.failure == train::TrainFailure::Output;
    std::cerr << (ours ? "dynamiccl train: " : "") << report.error << "\n";
    return 1;
  }
  printWritten(o, report);
  return 0;
}

}  // namespace
void addTrainCommand(CLI::App& app) {
  auto o = std::make_shared<TrainCmdOptions>();
  CLI::App* cmd =
      app.add_subcommand("train", "train the learned policy (LibTorch) and write a profile with its weights");
  addPlatformOption(cmd);
  cmd->add_option("--db", o->db, "SQLite store of observations (default: DYNAMICCL_DB or the per-host path)");
  cmd->add_flag("--no-store", o->noStore, "train on simulator rollouts only");
  cmd->add_option("--hold-out", o->holdOut,
                  "machine name prefixes kept out of training, presets and measured platforms alike (default h800)");
  cmd->add_option("--calibrate-on", o->calibrateOn,
                  "machine name prefixes kept out of training to measure the error of predicted gains on "
                  "(default: the platforms whose \"train\" says \"calibrate\": true)");
  cmd->add_option("--confidence", o->confidence, "quantile of that error a rule's predicted gain must exceed")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--no-confidence", o->noConfidence, "no calibration: the network's choice applies everywhere");
  cmd->add_option("--data", o->data, "interchange CSV of real measurements to train on (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--measured-on", o->measuredOn,
                  "the platform the --data files were measured on, whatever their system strings say");
  cmd->add_option("--real-weight", o->realWeight, "weight of a measured row against a simulated one (default 4)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--epochs", o->train.epochs, "training epochs")->check(CLI::Range(1, 1000));
  cmd->add_option("--keys", o->keysPerSystem, "simulated situations per machine")->check(CLI::Range(10, 100000));
  cmd->add_option("--threads", o->train.threads, "LibTorch threads")->check(CLI::Range(1, 256));
  cmd->add_option("--seed", o->train.seed, "random seed");
  cmd->add_option("-o,--out", o->out, "profile to write");
  cmd->add_option("--curve", o->curve, "learning curve CSV to write");
  cmd->add_option("--png", o->png, "also plot the learning curve (python3 + matplotlib)");
  addClusterFactsOptions(cmd, o->cluster);
  cmd->callback([o] {
    if (int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
