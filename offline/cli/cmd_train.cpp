// dynamiccl train: trains the learned policy (GRU over recent timings + MLP over the features) from
// simulator rollouts and the SQLite store, validates on held-out rows and held-out machines, and
// writes a profile whose "policy" key holds the weights the plugin evaluates with Eigen and, with
// --preset/--probe-host/fact flags, whose "fingerprint" declares the cluster it is for.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <cmath>
#include <optional>
#include <random>

#include "offline/cli/store_location.h"
#include "offline/demo/demo.h"
#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/files/files.h"
#include "offline/sim/sim.h"
#include "offline/cli/plot_runner.h"
#include "policy/policy.h"
#include "store/store.h"
#include "offline/train/train.h"

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

std::vector<train::SimSystem> systemsOf(const std::vector<model::Topology>& topos) {
  std::vector<train::SimSystem> out;
  for (const auto& t : topos) {
    auto s = train::SimSystem::make(t);
    if (s) out.push_back(std::move(*s));
    else std::cerr << "skipping preset " << t.name << ": " << s.error() << "\n";
  }
  return out;
}

std::string names(const std::vector<train::SimSystem>& systems) {
  std::string s;
  for (const auto& x : systems) s += (s.empty() ? "" : ",") + x.topology().name;
  return s;
}

Status writeProfile(const TrainCmdOptions& o, const policy::PolicyWeights& w,
                  const std::optional<ClusterHardware>& cluster, const std::string& trainedOn,
                  const std::string& heldOut, const std::vector<std::string>& measuredTrainedOn) {
  nlohmann::json doc;
  doc["format"] = "dynamiccl-profile";
  doc["version"] = policy::kProfileVersion;
  doc["name"] = "dynamiccl-learned-policy";
  doc["description"] = "DynamICCL learned policy; rules are generated per communicator from the network";
  if (cluster) doc["fingerprint"] = nlohmann::json::parse(policy::clusterHardwareToJson(*cluster));
  doc["rules"] = nlohmann::json::array();
  doc["policy"] = nlohmann::json::parse(policy::policyWeightsToJson(w));
  doc["meta"] = {{"trained_on", trainedOn}, {"held_out", heldOut}, {"epochs", o.train.epochs}, {"seed", o.train.seed},
                 {"measured_trained_on", measuredTrainedOn}, {"calibrated_on", o.noConfidence ? std::vector<std::string>{} : o.calibrateOn}};
  return files::writeFile(o.out, doc.dump() + "\n");
}

int run(TrainCmdOptions o) {
  if (auto loaded = train::loadTorchModule(); !loaded) {
    std::cerr << "dynamiccl train: " << loaded.error() << "\n";
    return 2;
  }
  auto cluster = resolveClusterFacts(o.cluster);  // before training: a typo should not cost the run
  if (!cluster) {
    std::cerr << "dynamiccl train: " << cluster.error() << "\n";
    return 1;
  }
  // The store is read before training: one the user named that cannot be read should not cost the run.
  const std::string db = storeOptions(o.db).path;
  std::optional<train::StoreRows> stored;
  if (!o.noStore && (db != store::defaultDatabasePath() || std::filesystem::exists(db))) {
    auto s = train::storeSamples(db);
    if (!s) {
      std::cerr << "dynamiccl train: " << s.error() << " (--no-store trains without it)\n";
      return 1;
    }
    stored = std::move(*s);
  }
  // Real measurements, read before anything is printed or trained: whole machines held out or kept
  // for calibration like the presets.
  std::vector<sim::ReplayData> measured;
  std::vector<std::string> skippedLines;
  for (const std::string& csv : o.data) {
    auto d = train::loadReplayData(csv, o.measuredOn);
    if (!d) {
      std::cerr << "dynamiccl train: " << d.error() << "\n";
      return 1;
    }
    for (const std::string& line : sim::describeSkipped(d->skipped)) skippedLines.push_back("  " + csv + ": " + line);
    measured.push_back(std::move(*d));
  }
  // Calibration machines are held out too (the error must be measured on machines never trained on),
  // but kept apart from the evaluation hold-out so the figures are not measured on what set the margin.
  std::vector<std::string> outOfTraining = o.holdOut;
  if (!o.noConfidence) outOfTraining.insert(outOfTraining.end(), o.calibrateOn.begin(), o.calibrateOn.end());
  const auto trainSystems = systemsOf(train::presetsMatching(outOfTraining, false));
  const auto heldSystems = systemsOf(train::presetsMatching(o.holdOut, true));
  std::vector<train::SimSystem> calibrationSystems;
  if (!o.noConfidence)
    for (auto& sys : systemsOf(train::presetsMatching(o.calibrateOn, true)))
      if (!train::machineMatches(sys.topology().name, o.holdOut)) calibrationSystems.push_back(std::move(sys));
  if (trainSystems.empty()) {
    std::cerr << "no training machines left after holding out\n";
    return 1;
  }
  std::printf("machines: train %s\n          held out %s\n", names(trainSystems).c_str(),
              heldSystems.empty() ? "(none)" : names(heldSystems).c_str());
  if (!o.noConfidence)
    std::printf("          calibration (error of predicted gains) %s\n",
                calibrationSystems.empty() ? "(none)" : names(calibrationSystems).c_str());
  for (const std::string& line : skippedLines) std::printf("%s\n", line.c_str());
  train::RolloutOptions ro;
  ro.keysPerSystem = o.keysPerSystem;
  ro.seed = o.train.seed;
  std::vector<train::Sample> rows = train::simulatorRollouts(trainSystems, ro);
  ro.seed = o.train.seed + 1000;
  ro.keysPerSystem = std::max(50, o.keysPerSystem / 3);
  std::vector<train::Sample> held = train::simulatorRollouts(heldSystems, ro);
  std::printf("simulator rollouts: %zu rows (%.0f%% of situations congested)\n", rows.size(), ro.congestedFraction * 100);
  std::vector<const sim::ReplayData*> calibrationData;
  std::vector<std::string> measuredTrainedOn;  // platforms whose measurements are trained on (policy-eval labels them)
  for (size_t i = 0; i < measured.size(); ++i) {
    const auto inTraining = [&](const sim::Shape& s) { return !train::machineMatches(s.topology.name, outOfTraining); };
    const auto heldOut = [&](const sim::Shape& s) { return train::machineMatches(s.topology.name, o.holdOut); };
    const auto used = train::measuredSamples(measured[i], o.realWeight, inTraining);
    const auto kept = train::measuredSamples(measured[i], o.realWeight, heldOut);
    rows.insert(rows.end(), used.begin(), used.end());
    held.insert(held.end(), kept.begin(), kept.end());
    for (const auto& shape : measured[i].shapes)
      if (inTraining(*shape) && std::find(measuredTrainedOn.begin(), measuredTrainedOn.end(), shape->topology.name) ==
                                    measuredTrainedOn.end())
        measuredTrainedOn.push_back(shape->topology.name);
    bool calibrates = false;
    for (const auto& shape : measured[i].shapes)
      calibrates |= !o.noConfidence && train::machineMatches(shape->topology.name, o.calibrateOn) &&
                    !train::machineMatches(shape->topology.name, o.holdOut);
    if (calibrates) calibrationData.push_back(&measured[i]);
    std::printf("measured %s: %zu points; %zu rows trained on (weight %.1f each), %zu held out%s\n", o.data[i].c_str(),
                measured[i].points.size(), used.size(), o.realWeight, kept.size(),
                calibrates ? ", its calibration machines measure the error" : "");
  }

  if (o.noStore) {
    std::printf("store: not used (--no-store)\n");
  } else if (!stored) {
    std::printf("store: %s does not exist; simulator rollouts only\n", db.c_str());
  } else {
    train::StoreRows* s = &*stored;
    std::printf("store: %zu observations, %zu used (importance-weighted x %.1f), %zu skipped (%zu of unknown hardware, "
                "%zu symmetric-memory kernels)\n",
                s->read, s->samples.size(), o.realWeight, s->skipped, s->unknownHardware, s->symmetric);
    for (train::Sample& r : s->samples) r.weight *= o.realWeight;
    rows.insert(rows.end(), s->samples.begin(), s->samples.end());
  }
  std::mt19937_64 rng(o.train.seed);
  std::shuffle(rows.begin(), rows.end(), rng);
  const size_t nVal = rows.size() / 10;
  const std::vector<train::Sample> val(rows.end() - nVal, rows.end());
  rows.resize(rows.size() - nVal);
  std::printf("training on %zu rows, validating on %zu, held-out machines %zu rows; %d epochs on %d threads\n",
              rows.size(), val.size(), held.size(), o.train.epochs, o.train.threads);

  auto curveFile = files::OutputFile::open(o.curve);
  if (!curveFile) {
    std::cerr << "dynamiccl train: " << curveFile.error() << "\n";
    return 1;
  }
  std::ostream& curve = (*curveFile)->stream();
  curve << "epoch,train_loss,validation_loss,held_out_loss,seconds\n";
  auto weights = train::trainPolicyNetwork(rows, val, held, o.train, [&](const train::EpochStats& e) {
    std::printf("epoch %2d/%d  train %.4f  validation %.4f  held-out %.4f  (%.1f s)\n", e.epoch, o.train.epochs,
                e.trainLoss, e.validationLoss, e.heldOutLoss, e.seconds);
    std::fflush(stdout);
    curve << e.epoch << "," << e.trainLoss << "," << e.validationLoss << "," << e.heldOutLoss << "," << e.seconds << "\n";
  });
  if (auto s = (*curveFile)->close(); !s) {
    std::cerr << "dynamiccl train: " << s.error() << "\n";
    return 1;
  }
  if (!weights) {
    std::cerr << "training failed: " << weights.error() << "\n";
    return 1;
  }
  weights->description = "GRU(8) over log(observed/predicted) + MLP; trained on " + names(trainSystems);
  auto net = policy::PolicyNetwork::create(*weights);
  if (!net) {
    std::cerr << "exported weights rejected: " << net.error() << "\n";
    return 1;
  }
  if (!o.noConfidence) {
    if (auto cov = train::fitLastLayerCovariance(*weights, rows)) weights->lastLayerCovariance = std::move(*cov);
    else std::printf("confidence: no last-layer covariance (%s); no per-key confidence\n", cov.error().c_str());
    auto conf = train::measureConfidence(*weights, calibrationSystems, calibrationData, o.confidence);
    if (!conf) {
      weights->lastLayerCovariance.clear();
      std::printf("confidence: not measured (%s); the guard stays off\n", conf.error().c_str());
    } else {
      train::applyConfidence(*weights, *conf);
      std::printf("confidence: held-out error of the predicted gain (quantile %.2f over %zu keys) %.3f in log -> "
                  "guard margin %.3f: a rule only where its predicted gain exceeds x%.3f\n",
                  conf->quantile, conf->gains.size(), conf->logError, conf->margin, std::exp(conf->logError));
      if (conf->covarianceScale > 0)
        std::printf("confidence per key: the last layer's covariance scaled x%.3f so that %.3f of its standard "
                    "deviations are that quantile of the error; a rule also needs a predicted gain beyond them\n",
                    conf->covarianceScale, weights->keyErrorSigmas);
      else
        std::printf("confidence per key: none measurable; the margin alone guards\n");
      std::printf("calibration on the calibration machines (gain = NCCL's time / the choice's; simulated, and measured "
                  "where --data has them):\n%s",
                  train::formatCalibration(train::calibrationBins(conf->gains), "  ").c_str());
      if (const auto bins = train::confidenceBins(conf->gains); !bins.empty())
        std::printf("%s", train::formatCalibration(bins, "  ", "z (sd of key)").c_str());
      net = policy::PolicyNetwork::create(*weights);
      if (!net) {
        std::cerr << "exported weights rejected: " << net.error() << "\n";
        return 1;
      }
    }
  }
  for (const auto& sys : heldSystems)
    for (double congestion : {0.0, 1.0}) {
      const train::RatioSummary r = train::ratioToBest(**net, sys, congestion);
      std::printf("held out %-18s congestion %.1f: simulated latency/best  policy %.3f  NCCL default %.3f\n",
                  sys.topology().name.c_str(), congestion, r.policyGeoMean, r.ncclGeoMean);
    }
  // The profile is for the hardware it is declared for, else the hardware its measurements come from.
  if (!*cluster && !measured.empty()) {
    sim::ReplayData all;
    for (const auto& d : measured)
      for (const auto& shape : d.shapes) all.shapes.push_back(std::make_unique<sim::Shape>(*shape));
    if (auto hw = train::measuredHardware(all)) *cluster = *hw;
    else std::printf("no fingerprint from the measurements: %s\n", hw.error().c_str());
  }
  if (auto s = writeProfile(o, *weights, *cluster, names(trainSystems), names(heldSystems), measuredTrainedOn); !s) {
    std::cerr << "dynamiccl train: " << s.error() << "\n";
    return 1;
  }
  auto check = policy::loadProfileFile(o.out);
  if (!check) {
    std::cerr << "written profile does not load: " << check.error() << "\n";
    return 1;
  }
  std::printf("wrote %s (policy weights v%d) and %s\n", o.out.c_str(), weights->version, o.curve.c_str());
  std::printf("its rules are learned, so unverified: the plugin applies them only with DYNAMICCL_TRUST=all\n");
  if (*cluster)
    std::printf("fingerprint: %s\n", policy::clusterHardwareToJson(**cluster).c_str());
  else
    std::printf("no fingerprint (--preset, --probe-host or --gpu-cc/--nvlink-gbps/--nics/--nic-gbps): multi-node "
                "communicators will not use the learned rules until it is declared (dynamiccl export --preset)\n");
  if (!o.png.empty()) {
    if (auto plotted = runPlotScript("plot_learning_curve.py", {o.curve, o.png}); plotted) std::printf("wrote %s\n", o.png.c_str());
    else std::printf("could not plot: %s\n", plotted.error().c_str());
  }
  return 0;
}

}  // namespace

void addTrainCommand(CLI::App& app) {
  auto o = std::make_shared<TrainCmdOptions>();
  CLI::App* cmd = app.add_subcommand("train", "train the learned policy (LibTorch) and write a profile with its weights");
  addPlatformOption(cmd);
  cmd->add_option("--db", o->db, "SQLite store of observations (default: DYNAMICCL_DB or the per-host path)");
  cmd->add_flag("--no-store", o->noStore, "train on simulator rollouts only");
  cmd->add_option("--hold-out", o->holdOut,
                  "machine name prefixes kept out of training, presets and measured platforms alike (default h800)");
  cmd->add_option("--calibrate-on", o->calibrateOn,
                  "machine name prefixes kept out of training to measure the error of predicted gains on "
                  "(default gh200-slingshot l40s-pcie-4)");
  cmd->add_option("--confidence", o->confidence, "quantile of that error a rule's predicted gain must exceed")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--no-confidence", o->noConfidence, "no calibration: the network's choice applies everywhere");
  cmd->add_option("--data", o->data, "interchange CSV of real measurements to train on (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--measured-on", o->measuredOn, "the platform the --data files were measured on, whatever their system strings say");
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
