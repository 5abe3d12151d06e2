// The training recipe: machines, rows, fit, confidence, held-out figures, the learned profile.
#include "offline/train/train_recipe.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>

#include "offline/files/files.h"
#include "offline/train/train.h"
#include "policy/policy.h"
#include "learned/learned.h"

namespace dynamiccl::train {
namespace {

std::vector<SimSystem> systemsOf(const std::vector<model::Topology>& topos, std::vector<std::string>& unusable) {
  std::vector<SimSystem> out;
  for (const auto& t : topos) {
    auto s = SimSystem::make(t);
    if (s)
      out.push_back(std::move(*s));
    else
      unusable.push_back(t.name + ": " + s.error());
  }
  return out;
}

std::vector<std::string> namesOf(const std::vector<SimSystem>& systems) {
  std::vector<std::string> out;
  for (const auto& s : systems) out.push_back(s.topology().name);
  return out;
}

// The machines of the plan: training, held out, calibration (out of training too, apart from the hold-out).
struct Machines {
  std::vector<std::string> outOfTraining;
  std::vector<SimSystem> train, heldOut, calibration;
};

Machines machinesOf(const TrainPlan& plan, std::vector<std::string>& unusable) {
  Machines m;
  m.outOfTraining = plan.holdOut;
  if (plan.confidence) m.outOfTraining.insert(m.outOfTraining.end(), plan.calibrateOn.begin(), plan.calibrateOn.end());
  m.train = systemsOf(presetsMatching(m.outOfTraining, false), unusable);
  m.heldOut = systemsOf(presetsMatching(plan.holdOut, true), unusable);
  if (plan.confidence)
    for (auto& sys : systemsOf(presetsMatching(plan.calibrateOn, true), unusable))
      if (!machineMatches(sys.topology().name, plan.holdOut)) m.calibration.push_back(std::move(sys));
  return m;
}

// Every row the fit sees, before the validation split, and the held-out machines' rows.
struct Rows {
  std::vector<Sample> train, heldOut;
  std::vector<measurements::ReplayData> measured;  // one per measured file
  std::vector<const measurements::ReplayData*> calibrationData;
};

// Every measured file, read before anything is trained: one that does not load stops the plan.
Status loadMeasured(const TrainPlan& plan, Rows& rows, TrainReport& r) {
  rows.measured.reserve(plan.measuredFiles.size());  // calibrationData points into it
  for (const std::string& csv : plan.measuredFiles) {
    auto d = loadReplayData(csv, plan.measuredOn);
    if (!d) return makeError(d.error());
    MeasuredFileReport& f = r.measured.emplace_back();
    f.path = csv;
    const measurements::ReplayData& data = rows.measured.emplace_back(std::move(*d));
    f.points = data.points.size();
    f.skipped = measurements::describeSkipped(data.skipped);
  }
  return Ok{};
}

// The measured rows of training machines; held-out machines' rows are evaluated on and calibration
// machines' files measure the error.
void addMeasured(const TrainPlan& plan, const Machines& m, Rows& rows, TrainReport& r) {
  for (size_t i = 0; i < rows.measured.size(); ++i) {
    const measurements::ReplayData& data = rows.measured[i];
    MeasuredFileReport& f = r.measured[i];
    const auto inTraining = [&](const measurements::Shape& s) { return !machineMatches(s.topology.name, m.outOfTraining); };
    const auto heldOut = [&](const measurements::Shape& s) { return machineMatches(s.topology.name, plan.holdOut); };
    const auto used = measuredSamples(data, plan.realWeight, inTraining);
    f.trainedRows = used.size();
    rows.train.insert(rows.train.end(), used.begin(), used.end());
    for (const auto& shape : data.shapes)
      if (inTraining(*shape) && std::find(r.measuredTrainedOn.begin(), r.measuredTrainedOn.end(),
                                          shape->topology.name) == r.measuredTrainedOn.end())
        r.measuredTrainedOn.push_back(shape->topology.name);
    const auto kept = measuredSamples(data, plan.realWeight, heldOut);
    f.heldOutRows = kept.size();
    rows.heldOut.insert(rows.heldOut.end(), kept.begin(), kept.end());
    for (const auto& shape : data.shapes)
      f.calibrates |= plan.confidence && machineMatches(shape->topology.name, plan.calibrateOn) &&
                      !machineMatches(shape->topology.name, plan.holdOut);
    if (f.calibrates) rows.calibrationData.push_back(&data);
  }
}

void addStore(const TrainPlan& plan, Rows& rows, TrainReport& r) {
  if (!plan.store) return;
  const StoreRows& s = *plan.store;
  r.store = TrainReport::StoreCounts{s.read, s.samples.size(), s.skipped, s.unknownHardware, s.symmetric};
  for (Sample row : s.samples) {
    row.weight *= plan.realWeight;
    rows.train.push_back(row);
  }
}

constexpr int kMinHeldOutKeys = 50;  // situations per held-out machine, however small the budget

// Simulator rollouts of the training and held-out machines, then measured and store rows.
void addRows(const TrainPlan& plan, const Machines& m, Rows& rows, TrainReport& r) {
  RolloutOptions ro;
  ro.keysPerSystem = plan.keysPerSystem;
  ro.seed = plan.options.seed;
  rows.train = simulatorRollouts(m.train, ro);
  ro.seed = plan.options.seed + 1000;
  ro.keysPerSystem = std::max(kMinHeldOutKeys, plan.keysPerSystem / 3);
  rows.heldOut = simulatorRollouts(m.heldOut, ro);
  r.rolloutRows = rows.train.size();
  r.congestedFraction = ro.congestedFraction;
  addMeasured(plan, m, rows, r);
  addStore(plan, rows, r);
}

// The fit, with the learning curve written as it goes.
Expected<learned::PolicyWeights> fit(const TrainPlan& plan, const std::vector<Sample>& rows,
                                    const std::vector<Sample>& validation, const std::vector<Sample>& heldOut,
                                    TrainFailure& failure) {
  failure = TrainFailure::Output;
  auto curveFile = files::OutputFile::open(plan.curvePath);
  if (!curveFile) return makeError(curveFile.error());
  std::ostream& curve = (*curveFile)->stream();
  curve << "epoch,train_loss,validation_loss,held_out_loss,seconds\n";
  auto weights = trainPolicyNetwork(rows, validation, heldOut, plan.options, [&](const EpochStats& e) {
    if (plan.onEpoch) plan.onEpoch(e);
    curve << e.epoch << "," << e.trainLoss << "," << e.validationLoss << "," << e.heldOutLoss << "," << e.seconds
          << "\n";
  });
  if (auto s = (*curveFile)->close(); !s) return makeError(s.error());
  failure = TrainFailure::Training;
  if (!weights) return makeError("training failed: " + weights.error());
  return weights;
}

// The last-layer covariance and the guard margin from the error on the calibration machines.
void calibrate(const TrainPlan& plan, const Machines& m, const Rows& rows, const std::vector<Sample>& trainRows,
               learned::PolicyWeights& weights, TrainReport& r) {
  if (!plan.confidence) return;
  if (auto cov = fitLastLayerCovariance(weights, trainRows))
    weights.lastLayerCovariance = std::move(*cov);
  else
    r.covarianceError = cov.error();
  auto conf = measureConfidence(weights, m.calibration, rows.calibrationData, plan.confidenceQuantile);
  if (!conf) {
    weights.lastLayerCovariance.clear();
    r.confidenceError = conf.error();
    return;
  }
  applyConfidence(weights, *conf);
  r.confidence = std::move(*conf);
}

std::optional<ClusterHardware> fingerprintOf(const TrainPlan& plan, const Rows& rows, TrainReport& r) {
  if (plan.fingerprint || rows.measured.empty()) return plan.fingerprint;
  measurements::ReplayData all;
  for (const auto& d : rows.measured)
    for (const auto& shape : d.shapes) all.shapes.push_back(std::make_unique<measurements::Shape>(*shape));
  auto hw = measuredHardware(all);
  if (!hw) {
    r.fingerprintError = hw.error();
    return std::nullopt;
  }
  return *hw;
}

// The learned profile: no rules (the network generates them per communicator), the weights, the
// fingerprint of the cluster it is for and what it was trained on.
std::string learnedProfileJson(const TrainPlan& plan, const TrainReport& r, const learned::PolicyWeights& weights) {
  nlohmann::json doc;
  doc["format"] = "dynamiccl-profile";
  doc["version"] = policy::kProfileVersion;
  doc["name"] = plan.profileName;
  doc["description"] = plan.profileDescription;
  if (r.fingerprint) doc["fingerprint"] = nlohmann::json::parse(policy::clusterHardwareToJson(*r.fingerprint));
  doc["rules"] = nlohmann::json::array();
  doc["policy"] = nlohmann::json::parse(learned::policyWeightsToJson(weights, learned::WeightEncoding::Base64));
  doc["meta"] = {{"trained_on", machineList(r.trained)},
                 {"held_out", machineList(r.heldOut)},
                 {"epochs", plan.options.epochs},
                 {"seed", plan.options.seed},
                 {"rows", r.trainRows},
                 {"measured_trained_on", r.measuredTrainedOn},
                 {"calibrated_on", plan.confidence ? plan.calibrateOn : std::vector<std::string>{}}};
  return doc.dump() + "\n";
}

}  // namespace

std::string machineList(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

TrainPlan heldOutPlan(std::vector<std::string> heldOut, std::vector<std::string> measuredFiles,
                      const std::string& outDir) {
  TrainPlan plan;
  plan.holdOut = std::move(heldOut);
  for (const std::string& p : defaultCalibrationPrefixes()) {
    const bool heldOutToo = machineMatches(p, plan.holdOut) ||
                            std::any_of(plan.holdOut.begin(), plan.holdOut.end(),
                                        [&](const std::string& h) { return machineMatches(h, {p}); });
    if (!heldOutToo) plan.calibrateOn.push_back(p);
  }
  plan.measuredFiles = std::move(measuredFiles);
  plan.options.epochs = 8;
  plan.profileName = "dynamiccl-held-out-learned-policy";
  plan.profileDescription = "DynamICCL learned policy, its machine held out of training; rules are generated per "
                            "communicator from the network";
  plan.profilePath = (std::filesystem::path(outDir) / "learned.json").string();
  plan.curvePath = (std::filesystem::path(outDir) / "learning_curve.csv").string();
  return plan;
}

TrainReport runTrainPlan(const TrainPlan& plan) {
  TrainReport r;
  const auto fail = [&r](TrainFailure f, std::string e) {
    r.failure = f;
    r.error = std::move(e);
    return r;
  };
  Rows rows;
  if (auto loaded = loadMeasured(plan, rows, r); !loaded) return fail(TrainFailure::Input, loaded.error());
  const Machines m = machinesOf(plan, r.unusableMachines);
  if (m.train.empty()) return fail(TrainFailure::NoMachines, "no training machines left after holding out");
  r.trained = namesOf(m.train);
  r.heldOut = namesOf(m.heldOut);
  r.calibration = namesOf(m.calibration);
  addRows(plan, m, rows, r);
  std::vector<Sample>& trainRows = rows.train;
  std::mt19937_64 rng(plan.options.seed);
  std::shuffle(trainRows.begin(), trainRows.end(), rng);
  const size_t nVal = trainRows.size() / 10;
  const std::vector<Sample> validation(trainRows.end() - nVal, trainRows.end());
  trainRows.resize(trainRows.size() - nVal);
  r.trainRows = trainRows.size();
  r.validationRows = validation.size();
  r.heldOutRows = rows.heldOut.size();
  if (plan.onRowsReady) plan.onRowsReady(r);

  TrainFailure failure;
  auto weights = fit(plan, trainRows, validation, rows.heldOut, failure);
  if (!weights) return fail(failure, weights.error());
  weights->description = "GRU(8) over log(observed/predicted) + MLP; trained on " + machineList(r.trained);
  auto net = learned::PolicyNetwork::create(*weights);
  if (!net) return fail(TrainFailure::Training, "exported weights rejected: " + net.error());
  calibrate(plan, m, rows, trainRows, *weights, r);
  r.keyErrorSigmas = weights->keyErrorSigmas;
  if (r.confidence) net = learned::PolicyNetwork::create(*weights);
  if (!net) return fail(TrainFailure::Training, "exported weights rejected: " + net.error());
  for (size_t i = 0; i < m.heldOut.size(); ++i)
    for (double congestion : {0.0, 1.0})
      r.heldOutRatios.push_back(
          {m.heldOut[i].topology().name, congestion, ratioToBest(**net, m.heldOut[i], congestion)});

  r.fingerprint = fingerprintOf(plan, rows, r);
  if (auto s = files::writeFile(plan.profilePath, learnedProfileJson(plan, r, *weights)); !s)
    return fail(TrainFailure::Output, s.error());
  if (auto check = policy::loadProfileFile(plan.profilePath); !check)
    return fail(TrainFailure::Training, "written profile does not load: " + check.error());
  r.profilePath = plan.profilePath;
  r.weightsVersion = weights->version;
  return r;
}

}  // namespace dynamiccl::train
