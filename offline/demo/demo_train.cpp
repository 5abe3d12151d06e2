// Demo step 3: a short LibTorch training run of the learned policy on simulator rollouts of every
// preset machine except the demo's own (held out, so the replay shows generalisation), written as
// a profile whose "policy" key the plugin evaluates, declaring the "fingerprint" of the hardware it is
// for: the simulated preset's, or with --data the machine the dataset was measured on.
// Skipped when this build has no LibTorch.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <fstream>
#include <random>

#include "offline/demo/cluster_facts.h"
#include "offline/demo/demo_steps.h"
#include "offline/files/files.h"
#include "policy/policy.h"
#include "offline/platforms/platforms.h"
#include "offline/train/train.h"

namespace dynamiccl::cli::demo {
namespace {

std::vector<train::SimSystem> systemsOf(const std::vector<model::Topology>& topos) {
  std::vector<train::SimSystem> out;
  for (const auto& t : topos)
    if (auto s = train::SimSystem::make(t)) out.push_back(std::move(*s));
  return out;
}

std::string namesOf(const std::vector<train::SimSystem>& systems) {
  std::string s;
  for (const auto& x : systems) s += (s.empty() ? "" : ",") + x.topology().name;
  return s;
}

std::string countsLine(const char* what, size_t a, size_t b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu observations, %zu used", what, a, b);
  return buf;
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
  if (!o.data.empty()) {
    auto data = train::loadReplayData(o.data);
    if (!data) return out.skipped = data.error(), out;
    for (const auto& shape : data->shapes) holdOut.push_back(shape->topology.name);  // never trained on what it replays
    if (forHardware) hardware = *forHardware;
    else if (auto hw = train::measuredHardware(*data)) hardware = *hw;
    else out.notes.push_back("no fingerprint written: " + hw.error());
  } else if (auto topo = sim::loadTopology(o.preset, o.nodes)) {
    hardware = model::clusterHardwareOf(*topo);
  }
  // Calibration machines are out of training too, and apart from the demo's own machine.
  std::vector<std::string> outOfTraining = holdOut;
  std::vector<std::string> calibrateOn;
  for (const std::string& p : train::defaultCalibrationPrefixes())
    if (!train::machineMatches(p, holdOut) && o.preset.rfind(p, 0) != 0) calibrateOn.push_back(p);
  outOfTraining.insert(outOfTraining.end(), calibrateOn.begin(), calibrateOn.end());
  const auto trainSystems = systemsOf(train::presetsMatching(outOfTraining, false));
  const auto heldSystems = systemsOf(train::presetsMatching(holdOut, true));
  const auto calibrationSystems = systemsOf(train::presetsMatching(calibrateOn, true));
  if (trainSystems.empty()) return out.skipped = "no training machines left after holding out " + o.preset, out;

  train::RolloutOptions ro;
  ro.keysPerSystem = o.quick ? 30 : 300;
  ro.seed = o.seed;
  std::vector<train::Sample> rows = train::simulatorRollouts(trainSystems, ro);
  ro.seed = o.seed + 1000;
  ro.keysPerSystem = std::max(20, ro.keysPerSystem / 3);
  const std::vector<train::Sample> held = train::simulatorRollouts(heldSystems, ro);
  out.notes.push_back("trained on " + namesOf(trainSystems) + "; held out " +
                      (heldSystems.empty() ? std::string("(none)") : namesOf(heldSystems)));
  if (!o.db.empty()) {
    if (auto s = train::storeSamples(o.db); !s) out.notes.push_back("store " + o.db + ": " + s.error());
    else {
      out.notes.push_back(countsLine(("store " + o.db).c_str(), s->read, s->samples.size()));
      rows.insert(rows.end(), s->samples.begin(), s->samples.end());
    }
  }
  // Other machines' measurements (never the held-out or calibration machines'), weighed above rollouts.
  std::vector<std::string> measuredTrainedOn;
  for (const std::string& csv : o.trainData) {
    auto d = train::loadReplayData(csv);
    if (!d) {
      out.notes.push_back("measurements " + csv + " not used: " + d.error());
      continue;
    }
    const auto keep = [&](const sim::Shape& s) { return !train::machineMatches(s.topology.name, outOfTraining); };
    const auto used = train::measuredSamples(*d, 4.0f, keep);
    for (const auto& shape : d->shapes)
      if (keep(*shape) && std::find(measuredTrainedOn.begin(), measuredTrainedOn.end(), shape->topology.name) ==
                              measuredTrainedOn.end())
        measuredTrainedOn.push_back(shape->topology.name);
    out.notes.push_back(countsLine(("measured " + csv + " (weight 4, machines held out skipped)").c_str(),
                                   d->points.size(), used.size()));
    rows.insert(rows.end(), used.begin(), used.end());
  }
  std::mt19937_64 rng(o.seed);
  std::shuffle(rows.begin(), rows.end(), rng);
  const size_t nVal = rows.size() / 10;
  const std::vector<train::Sample> val(rows.end() - nVal, rows.end());
  rows.resize(rows.size() - nVal);

  train::TrainOptions to;
  to.epochs = o.quick ? 1 : 8;
  to.seed = o.seed;
  const std::string curvePath = (std::filesystem::path(outDir) / "learning_curve.csv").string();
  auto curveFile = files::OutputFile::open(curvePath);
  if (!curveFile) return out.failed = curveFile.error(), out;
  std::ostream& curve = (*curveFile)->stream();
  curve << "epoch,train_loss,validation_loss,held_out_loss,seconds\n";
  auto weights = train::trainPolicyNetwork(rows, val, held, to, [&](const train::EpochStats& e) {
    std::printf("      epoch %d/%d  train %.4f  validation %.4f  held-out %.4f  (%.1f s)\n", e.epoch, to.epochs,
                e.trainLoss, e.validationLoss, e.heldOutLoss, e.seconds);
    std::fflush(stdout);
    curve << e.epoch << "," << e.trainLoss << "," << e.validationLoss << "," << e.heldOutLoss << "," << e.seconds << "\n";
  });
  if (auto s = (*curveFile)->close(); !s) return out.failed = s.error(), out;
  if (!weights) return out.skipped = "training failed: " + weights.error(), out;
  weights->description = "GRU(8) over log(observed/predicted) + MLP; trained on " + namesOf(trainSystems);
  // Confidence: a rule only where the predicted gain exceeds the error measured on calibration machines.
  if (auto cov = train::fitLastLayerCovariance(*weights, rows)) weights->lastLayerCovariance = std::move(*cov);
  if (auto conf = train::measureConfidence(*weights, calibrationSystems, {}, 0.9)) {
    train::applyConfidence(*weights, *conf);
    char line[300];
    std::snprintf(line, sizeof line,
                  "guard margin %.3f from the error of predicted gains on %s (quantile 0.9, %zu keys, simulated); "
                  "per-key confidence: covariance scale %.3f (0: none)",
                  conf->margin, namesOf(calibrationSystems).c_str(), conf->gains.size(), conf->covarianceScale);
    out.notes.push_back(line);
  } else {
    weights->lastLayerCovariance.clear();
    out.notes.push_back("no confidence measured (" + conf.error() + "): the network's choice applies everywhere");
  }

  // The same document `dynamiccl train` writes: no rules, the network generates them per communicator.
  nlohmann::json doc;
  doc["format"] = "dynamiccl-profile";
  doc["version"] = policy::kProfileVersion;
  doc["name"] = "dynamiccl-demo-learned-policy";
  doc["description"] = "DynamICCL learned policy (demo run); rules are generated per communicator from the network";
  if (hardware) doc["fingerprint"] = nlohmann::json::parse(policy::clusterHardwareToJson(*hardware));
  doc["rules"] = nlohmann::json::array();
  doc["policy"] = nlohmann::json::parse(policy::policyWeightsToJson(*weights));
  doc["meta"] = {{"trained_on", namesOf(trainSystems)}, {"held_out", namesOf(heldSystems)},
                 {"epochs", to.epochs}, {"seed", to.seed}, {"rows", rows.size()},
                 {"measured_trained_on", measuredTrainedOn}};
  out.profilePath = (std::filesystem::path(outDir) / "learned.json").string();
  if (auto s = files::writeFile(out.profilePath, doc.dump() + "\n"); !s) return out.failed = s.error(), out;
  if (auto check = policy::loadProfileFile(out.profilePath); !check)
    return out.skipped = "written learned.json does not load: " + check.error(), out;
  out.notes.push_back(std::to_string(rows.size()) + " training rows, " + std::to_string(val.size()) + " validation, " +
                      std::to_string(held.size()) + " held-out; " + std::to_string(to.epochs) + " epochs");
  out.trained = true;
  return out;
}

}  // namespace dynamiccl::cli::demo
