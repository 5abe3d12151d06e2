// Demo step 3: a short LibTorch training run of the learned policy on simulator rollouts of every
// preset machine except the demo's own (held out, so the replay shows generalisation), written as
// a profile whose "policy" key the plugin evaluates, declaring the "fingerprint" of the hardware it is
// for: the simulated preset's, or with --data the machine the dataset was measured on. The recipe
// is offline/train's (train::runTrainPlan), the same `dynamiccl train` runs; this step picks the
// demo's machines and budget and turns the report into its notes. Skipped when this build has no LibTorch.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "offline/demo/demo_steps.h"
#include "offline/train/train.h"
#include "policy/policy.h"

namespace dynamiccl::cli::demo {
namespace {

std::string countsLine(const std::string& what, size_t a, size_t b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu observations, %zu used", what.c_str(), a, b);
  return buf;
}

// The demo's plan: the recipe's for held-out machines, its own machine (and the replayed dataset's)
// held out, a smaller budget with --quick, the store and other machines' measurements when given.
train::TrainPlan planOf(const DemoOptions& o, const std::string& outDir, std::vector<std::string> holdOut) {
  train::TrainPlan plan = train::heldOutPlan(std::move(holdOut), o.trainData, outDir);
  if (o.quick) plan.keysPerSystem = 30, plan.options.epochs = 1;
  plan.options.seed = o.seed;
  plan.onEpoch = [epochs = plan.options.epochs](const train::EpochStats& e) {
    std::printf("      epoch %d/%d  train %.4f  validation %.4f  held-out %.4f  (%.1f s)\n", e.epoch, epochs,
                e.trainLoss, e.validationLoss, e.heldOutLoss, e.seconds);
    std::fflush(stdout);
  };
  return plan;
}

// The rows the report says were assembled, as the demo's notes: machines, the store, measured files.
void addRowNotes(const train::TrainPlan& plan, const train::TrainReport& r, const std::string& storeNote,
                 std::vector<std::string>& notes) {
  notes.push_back("trained on " + train::machineList(r.trained) + "; held out " +
                  (r.heldOut.empty() ? std::string("(none)") : train::machineList(r.heldOut)));
  if (!storeNote.empty()) notes.push_back(storeNote);
  for (const train::MeasuredFileReport& f : r.measured) {
    char line[512];
    std::snprintf(line, sizeof line, "measured %s: %zu points; %zu rows trained on (weight %.1f each), %zu held out",
                  f.path.c_str(), f.points, f.trainedRows, plan.realWeight, f.heldOutRows);
    notes.push_back(line);
  }
}

// The network's simulated latency over the best on each held-out machine, uncongested and congested.
void addHeldOutNotes(const train::TrainReport& r, std::vector<std::string>& notes) {
  for (size_t i = 0; i + 1 < r.heldOutRatios.size(); i += 2) {
    const train::HeldOutRatio &calm = r.heldOutRatios[i], &busy = r.heldOutRatios[i + 1];
    char line[256];
    std::snprintf(line, sizeof line,
                  "held out %s, simulated latency/best (congestion %.0f / %.0f): policy %.3f / %.3f, NCCL default "
                  "%.3f / %.3f",
                  calm.machine.c_str(), calm.congestion, busy.congestion, calm.ratio.policyGeoMean,
                  busy.ratio.policyGeoMean, calm.ratio.ncclGeoMean, busy.ratio.ncclGeoMean);
    notes.push_back(line);
  }
}

// The guard the calibration machines set, or why there is none.
std::string confidenceNote(const train::TrainReport& r) {
  if (!r.confidence)
    return "no confidence measured (" + r.confidenceError + "): the network's choice applies everywhere";
  const bool measured = std::any_of(r.measured.begin(), r.measured.end(),
                                    [](const train::MeasuredFileReport& f) { return f.calibrates; });
  char line[300];
  std::snprintf(line, sizeof line,
                "guard margin %.3f from the error of predicted gains on %s (quantile %.2f, %zu keys, %s); "
                "per-key confidence: covariance scale %.3f (0: none)",
                r.confidence->margin, train::machineList(r.calibration).c_str(), r.confidence->quantile,
                r.confidence->gains.size(), measured ? "simulated and measured" : "simulated",
                r.confidence->covarianceScale);
  return line;
}

}  // namespace

LearnedProfile trainProfile(const DemoOptions& o, const std::string& outDir,
                            const std::optional<ClusterHardware>& forHardware) {
  LearnedProfile out;
  if (auto loaded = train::loadTorchModule(); !loaded) {
    out.skipped = loaded.error();
    return out;
  }
  // The cluster the profile is for: the dataset's machine with --data, else the simulated preset.
  std::vector<std::string> holdOut = {o.preset};
  std::optional<ClusterHardware> hardware;
  std::string noHardware;  // why the replayed data names no hardware
  if (!o.data.empty()) {
    auto data = train::loadReplayData(o.data);
    if (!data) return out.skipped = data.error(), out;
    for (const auto& shape : data->shapes) holdOut.push_back(shape->topology.name);  // never trained on what it replays
    if (forHardware)
      hardware = *forHardware;
    else if (auto hw = train::measuredHardware(*data))
      hardware = *hw;
    else
      noHardware = hw.error();
  } else if (auto topo = sim::loadTopology(o.preset, o.nodes)) {
    hardware = model::clusterHardwareOf(*topo);
  }
  train::TrainPlan plan = planOf(o, outDir, std::move(holdOut));
  plan.fingerprint = hardware;
  std::string storeNote;
  if (!o.db.empty()) {
    if (auto s = train::storeSamples(o.db); !s)
      storeNote = "store " + o.db + ": " + s.error();
    else
      plan.store = std::move(*s);
  }
  const train::TrainReport r = train::runTrainPlan(plan);
  if (r.failure == train::TrainFailure::NoMachines) return out.skipped = r.error + " " + o.preset, out;
  if (r.store) storeNote = countsLine("store " + o.db, r.store->read, r.store->used);
  addRowNotes(plan, r, storeNote, out.notes);
  if (!r.fingerprint && !noHardware.empty()) out.notes.push_back("no fingerprint written: " + noHardware);
  if (!hardware && r.fingerprint) out.notes.push_back("fingerprint of the measured files' hardware");
  addHeldOutNotes(r, out.notes);
  if (r.confidence || !r.confidenceError.empty()) out.notes.push_back(confidenceNote(r));
  if (r.failure == train::TrainFailure::Output) return out.failed = r.error, out;
  if (r.failure != train::TrainFailure::None) return out.skipped = r.error, out;
  out.notes.push_back(std::to_string(r.trainRows) + " training rows, " + std::to_string(r.validationRows) +
                      " validation, " + std::to_string(r.heldOutRows) + " held-out; " +
                      std::to_string(plan.options.epochs) + " epochs");
  out.profilePath = r.profilePath;
  out.trained = true;
  return out;
}

}  // namespace dynamiccl::cli::demo
