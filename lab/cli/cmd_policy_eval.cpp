// dynamiccl-lab policy-eval: the learned policy's figures in one place, on machines held out from
// training: DecisionTable rebuild time, latency ratio to the best configuration against NCCL's
// default and a TPE-tuned table (tune/ searching the same calibrated simulator), and the same
// ratios on measured datasets (the shipped ones, or --data-dir, e.g. shared/data) through the replay.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "lab/eval/eval.h"
#include "lab/cli/commands.h"
#include "offline/cli/cli.h"
#include "offline/files/files.h"
#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/platforms/platforms.h"
#include "offline/sim/sim.h"
#include "offline/train/train.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli {
namespace {

struct PolicyEvalOptions {
  std::string profile;
  std::vector<std::string> presets = {"h800"};
  std::vector<std::string> data;  // normalized.csv files; empty = every dataset under dataDir
  std::string dataDir;            // datasets as DIR/<name>/normalized.csv; empty = the ones the project ships
  std::string measuredOn;         // the platform --data was measured on, whatever its system strings say
  bool noTpe = false, noReplay = false;
  int tpeBudget = 0;              // timed iterations per key for the TPE search; 0 = tune/'s own stopping
  std::optional<float> guardMargin;  // replaces the network's own guard_margin when given
  bool noGuard = false;              // the network's choices everywhere (no guard), for comparison
  bool proposers = false;            // the network as the ranker of what to measure, leave one machine out
};

// The network with the guard margin this run asks for (the profile's own unless overridden).
Expected<std::shared_ptr<const learned::PolicyNetwork>> withGuard(const std::shared_ptr<const learned::PolicyNetwork>& net,
                                                                 const PolicyEvalOptions& o) {
  if (!o.noGuard && !o.guardMargin) return net;
  learned::PolicyWeights w = net->weights();
  w.guardMargin = o.noGuard ? std::nullopt : o.guardMargin;
  return learned::PolicyNetwork::create(std::move(w));
}

std::string guardText(const learned::PolicyNetwork& net) {
  const std::optional<float> m = net.weights().guardMargin;
  if (!m) return "guard: off (the network's choice applies wherever NCCL can run it)";
  char text[160];
  std::snprintf(text, sizeof text, "guard: margin %.3f (applied only where predicted < %.3f x NCCL's own choice's prediction)",
                *m, 1.0 - *m);
  return text;
}

// The data sets to replay: --data, else every <name>/normalized.csv under --data-dir, else the ones
// shipped with the project (the demo's among them).
Expected<std::vector<std::string>> datasets(const PolicyEvalOptions& o) {
  namespace fs = std::filesystem;
  if (!o.data.empty()) return o.data;
  const fs::path dir = o.dataDir.empty() ? fs::path(train::shippedDatasetsDir()) : fs::path(o.dataDir);
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (fs::is_regular_file(it->path() / "normalized.csv")) out.push_back((it->path() / "normalized.csv").lexically_normal().string());
  if (ec) return makeError("cannot read " + dir.string() + ": " + ec.message());
  if (out.empty()) return makeError("no dataset (<name>/normalized.csv) under " + dir.string());
  std::sort(out.begin(), out.end());
  return out;
}

// Predicted against observed gain over NCCL's choice where the network's first choice changes it
// (before the guard), and what the guard keeps.
void printCalibration(const std::string& what, const std::vector<train::GainPair>& gains, const learned::PolicyNetwork& net) {
  std::printf("-- calibration of predicted gains (%s; gain = NCCL default's time / the network's first choice's):\n",
              what.c_str());
  std::printf("%s", train::formatCalibration(train::calibrationBins(gains), "   ").c_str());
  if (const auto bins = train::confidenceBins(gains); !bins.empty()) {
    std::printf("   by confidence (z = log predicted gain / the key's standard deviation; a rule needs z > %.3f):\n",
                net.weights().keyErrorSigmas);
    std::printf("%s", train::formatCalibration(bins, "   ", "z (sd of key)").c_str());
  }
  const std::optional<float> m = net.weights().guardMargin;
  const double keep = m ? 1.0 / (1.0 - *m) : 1.0;
  int kept = 0, keptSlower = 0, changed = 0;
  double keptObserved = 0;
  for (const train::GainPair& g : gains) {
    if (!g.changes) continue;
    ++changed;
    if (train::guardKeeps(g, m, net.weights().keyErrorSigmas))
      ++kept, keptSlower += g.observed < 1.0 / 1.02, keptObserved += std::log(g.observed);
  }
  std::printf("   error of log gain: median %.3f, 0.9 quantile %.3f; the guard (predicted gain > x%.3f%s) keeps %d of %d "
              "changes (observed gain geomean %.3f), %d of them observed > 2%% slower than NCCL\n",
              train::gainError(gains, 0.5), train::gainError(gains, 0.9), keep,
              net.covariance() ? " and the key's confidence" : "", kept, changed,
              kept ? std::exp(keptObserved / kept) : 1.0, keptSlower);
}

void printSimulated(const PolicyEvalOptions& o, const learned::PolicyNetwork& net) {
  auto systems = train::presetsMatching(o.presets, true);
  std::printf("== calibrated simulator, held-out machines (ratio = latency run / best of the policy's configurations;\n"
              "   geometric mean over 5 collectives x 29 sizes 16 B..4 GiB; worst = largest; wins = keys > 1%% faster than NCCL;\n"
              "   TPE searched this very simulator over more channels/chunks, so it can go below 1)\n");
  std::printf("   vs NCCL = the policy's latency / NCCL default's per key: geometric mean and worst key; all simulated)\n");
  std::printf("%-16s %4s %10s | %7s %6s %5s | %7s %6s | %7s %6s %5s | %7s %6s\n", "machine", "cong", "rebuild_us", "policy",
              "worst", "wins", "vsNCCL", "worst", "TPE", "worst", "wins", "NCCL", "worst");
  std::vector<train::GainPair> gains;
  for (const auto& topo : systems) {
    auto sys = train::SimSystem::make(topo);
    if (!sys) {
      std::printf("%-16s %s\n", topo.name.c_str(), sys.error().c_str());
      continue;
    }
    std::optional<policy::DecisionTable> tuned;
    double tune_s = 0;
    if (!o.noTpe) {
      const auto start = std::chrono::steady_clock::now();
      auto t = eval::tpeTable(*sys, o.tpeBudget);
      tune_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (t) tuned = std::move(*t);
      else std::printf("%-16s TPE failed: %s\n", topo.name.c_str(), t.error().c_str());
    }
    for (double congestion : {0.0, 1.0}) {
      const train::RatioSummary r = train::ratioToBest(net, *sys, congestion);
      std::printf("%-16s %4.1f %10.0f | %7.3f %6.2f %4.0f%% | %7.3f %6.3f |", topo.name.c_str(), congestion, r.rebuild_us,
                  r.policyGeoMean, r.policyWorst, 100 * r.policyBeatsNccl, r.geoVsNccl, r.worstVsNccl);
      const auto g = train::simulatedGains(net, *sys, congestion);
      gains.insert(gains.end(), g.begin(), g.end());
      if (tuned) {
        const train::RatioSummary t = train::ratioToBest(*tuned, *sys, congestion);
        std::printf(" %7.3f %6.2f %4.0f%% |", t.policyGeoMean, t.policyWorst, 100 * t.policyBeatsNccl);
      } else {
        std::printf(" %7s %6s %5s |", "-", "-", "-");
      }
      std::printf(" %7.3f %6.2f\n", r.ncclGeoMean, r.ncclWorst);
    }
    std::printf("%-16s calibration %s; TPE search %.1f s (budget %d iterations/key, tuned at congestion 0)\n", "",
                sys->calibration().c_str(), tune_s, o.tpeBudget);
  }
  printCalibration("these machines, congestion 0 and 1, simulated", gains, net);
}

// "l40s-pcie-2 (held out)": the dataset's platforms and whether training saw their measurements.
std::string machinesOf(const measurements::ReplayData& data, const std::vector<std::string>& trainedOn) {
  std::set<std::string> names;
  for (const auto& shape : data.shapes) names.insert(shape->topology.name);
  std::string s;
  for (const std::string& n : names)
    s += (s.empty() ? "" : ", ") + n +
         (std::find(trainedOn.begin(), trainedOn.end(), n) != trainedOn.end() ? " (TRAINED ON)" : " (held out)");
  return s;
}

void printReplay(const std::vector<std::string>& files, const PolicyEvalOptions& o, const learned::PolicyNetwork& net,
                 const std::vector<std::string>& trainedOnMeasured) {
  std::printf("== measured datasets replayed (measured time of the decision / best measured config at the point; only\n"
              "   points whose decision was measured are judged; datasets without forced sweeps can only judge NCCL's pick;\n"
              "   machine: the platform measured and whether the profile trained on its measurements)\n");
  std::vector<train::GainPair> gains;
  std::printf("%-32s %6s | %6s %7s %6s %8s | %6s %7s %6s\n", "dataset", "points", "judged", "policy", "worst",
              "vs NCCL", "judged", "NCCL", "worst");
  for (const std::string& csv : files) {
    const std::string name = std::filesystem::path(csv).parent_path().filename().string();
    auto data = train::loadReplayData(csv, o.measuredOn);
    if (!data) {
      std::printf("%-32s %s\n", name.c_str(), data.error().c_str());
      continue;
    }
    const train::JudgedFigures f = train::judgeNetwork(net, *data);
    std::printf("%-32s %6d | %6d %7.3f %6.2f %8.3f | %6d %7.3f %6.2f | %s\n", name.substr(0, 32).c_str(), f.policy.points,
                f.policy.judged, f.policy.geomeanVsBest, f.policy.worstVsBest, f.policy.geomeanVsDefault, f.nccl.judged,
                f.nccl.geomeanVsBest, f.nccl.worstVsBest, machinesOf(*data, trainedOnMeasured).c_str());
    const auto g = train::measuredGains(net, *data);
    gains.insert(gains.end(), g.begin(), g.end());
  }
  printCalibration("replayed measurements, NCCL's channel count, measured", gains, net);
}

// The platforms whose measurements the profile was trained on (its "meta"), to label held-out data.
std::vector<std::string> measuredTrainedOn(const std::string& path) {
  const auto text = readRegularFile(path, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
  const nlohmann::json doc = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  std::vector<std::string> out;
  if (doc.is_object() && doc.contains("meta") && doc["meta"].is_object() && doc["meta"].contains("measured_trained_on") &&
      doc["meta"]["measured_trained_on"].is_array())
    for (const auto& n : doc["meta"]["measured_trained_on"])
      if (n.is_string()) out.push_back(n.get<std::string>());
  return out;
}

// A simulator per shape whose platform names a calibration; nullptr elsewhere.
std::function<const sim::Simulator*(const measurements::Shape&)> calibratedSimulators() {
  auto cache = std::make_shared<std::map<const measurements::Shape*, std::unique_ptr<sim::Simulator>>>();
  return [cache](const measurements::Shape& shape) -> const sim::Simulator* {
    auto it = cache->find(&shape);
    if (it == cache->end()) {
      std::unique_ptr<sim::Simulator> s;
      auto reg = platforms::registry();
      const platforms::Platform* p = reg ? (*reg)->forSystem(shape.system) : nullptr;
      if (p && p->calibration)
        if (auto cal = sim::calibrationFor(*p); cal && cal->calibrated())
          s = std::make_unique<sim::Simulator>(shape.topology, cal->params);
      it = cache->emplace(&shape, std::move(s)).first;
    }
    return it->second.get();
  };
}

// The network trained on simulator rollouts and the other datasets' measurements, never on this one's
// machine (the recipe's plan for held-out machines); none, and why, when it cannot be trained here.
void trainHeldOutNetwork(const std::string& csv, const std::vector<std::string>& files,
                         const measurements::ReplayData& data, train::ProposerInputs& in) {
  if (auto loaded = train::loadTorchModule(); !loaded) return void(in.networkMissing = loaded.error());
  std::vector<std::string> heldOut, others;
  for (const auto& shape : data.shapes) heldOut.push_back(shape->topology.name);
  for (const std::string& other : files)
    if (other != csv) others.push_back(other);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dynamiccl-proposers-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const train::TrainReport r = train::runTrainPlan(train::heldOutPlan(std::move(heldOut), std::move(others), dir.string()));
  if (auto p = r.failure == train::TrainFailure::None ? policy::loadProfileFile(r.profilePath)
                                                      : Expected<policy::Profile>(makeError(r.error)))
    if (auto net = learned::readNetwork(*p); net && *net) in.network = *net;
    else in.networkMissing = net ? "no network" : net.error();
  else
    in.networkMissing = p.error();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Leave one machine out: per dataset with forced sweeps, a network trained on simulator rollouts and
// the other datasets' measurements, never on this one's, ranks what to measure at its keys.
int runProposers(const PolicyEvalOptions& o) {
  auto found = datasets(o);
  if (!found) return std::cerr << "policy-eval: " << found.error() << "\n", 1;
  const std::vector<std::string>& files = *found;
  std::printf("== proposers, leave one machine out (measured: the dataset's medians say what is best; a configuration "
              "within 1%% of the best counts as the best; trials: alternatives measured until the best was)\n");
  const std::vector<train::ProposerKind>& kinds = train::proposerKinds();
  std::vector<train::ProposerFigures> total(kinds.size());
  for (const std::string& csv : files) {
    auto data = train::loadReplayData(csv, o.measuredOn);
    if (!data) {
      std::printf("%s: not read: %s\n", csv.c_str(), data.error().c_str());
      continue;
    }
    // The list starts with NCCL's cost order (tested): its figures both gate the dataset and are its row.
    const train::ProposerFigures yardstick = train::evaluateProposer(kinds.front().name, *data, train::ncclCostOrder());
    if (yardstick.keys == 0) {
      std::printf("%s: no key has NCCL's default and a forced configuration measured: nothing to rank\n", csv.c_str());
      continue;
    }
    std::printf("-- %s (%s)\n", csv.c_str(), data->shapes.front()->system.substr(0, 48).c_str());
    train::ProposerInputs inputs;
    inputs.simulatorFor = calibratedSimulators();
    for (const train::ProposerKind& k : kinds)
      if (k.needsNetwork && !inputs.network && inputs.networkMissing.empty()) trainHeldOutNetwork(csv, files, *data, inputs);
    for (size_t i = 0; i < kinds.size(); ++i) {
      std::string whyNot;
      const auto order = kinds[i].order(inputs, whyNot);
      if (!order) {
        std::printf("   %s: %s\n", kinds[i].name.c_str(), whyNot.c_str());
        continue;
      }
      const train::ProposerFigures f = i == 0 ? yardstick : train::evaluateProposer(kinds[i].name, *data, *order);
      std::printf("   %s\n", train::describeProposer(f).c_str());
      total[i].proposer = f.proposer;
      total[i].keys += f.keys, total[i].bestIsDefault += f.bestIsDefault, total[i].top1 += f.top1;
      total[i].top3 += f.top3, total[i].trials += f.trials, total[i].everyArm += f.everyArm;
    }
  }
  std::printf("-- all machines, each held out of the network's training\n");
  for (const train::ProposerFigures& t : total)
    if (t.keys) std::printf("   %s\n", train::describeProposer(t).c_str());
  const train::ProposerFigures* network = nullptr;  // the learned network's (the kind that trains one)
  for (size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i].needsNetwork) network = &total[i];
  if (network && network->keys && network->trials > total[0].trials)
    std::printf("   the network finds the best later than NCCL's cost order here: in-job verification keeps NCCL's order "
                "as its prior (docs/ONLINE.md)\n");
  else if (network && network->keys)
    std::printf("   the network finds the best no later than NCCL's cost order here\n");
  return 0;
}

int run(const PolicyEvalOptions& o) {
  if (o.proposers) return runProposers(o);
  if (o.profile.empty()) return std::cerr << "policy-eval: a profile with a \"policy\" section is required\n", 1;
  const auto files = o.noReplay ? Expected<std::vector<std::string>>(std::vector<std::string>{}) : datasets(o);
  if (!files) return std::cerr << "policy-eval: " << files.error() << "\n", 1;
  auto profile = policy::loadProfileFile(o.profile);
  if (!profile) {
    std::cerr << "invalid profile: " << profile.error() << "\n";
    return 1;
  }
  auto read = learned::readNetwork(*profile);
  if (!read) {
    std::cerr << "invalid profile: " << read.error() << "\n";
    return 1;
  }
  if (!*read) {
    std::cerr << o.profile << " has no \"policy\" section (train one with `dynamiccl train`)\n";
    return 1;
  }
  auto guarded = withGuard(*read, o);
  if (!guarded) {
    std::cerr << "invalid guard margin: " << guarded.error() << "\n";
    return 1;
  }
  const std::shared_ptr<const learned::PolicyNetwork> network = *guarded;
  const learned::PolicyNetwork& net = *network;
  std::printf("%s\n", guardText(net).c_str());
  if (train::presetsMatching(o.presets, true).empty()) {
    std::cerr << "no preset matches\n";
    return 1;
  }
  printSimulated(o, net);
  // The plugin's own init path (no cache hit on a fresh shape): the first init of a process also
  // probes the host once (like parsing the profile); later shapes do not. Multi-node shapes take the
  // profile's fingerprint; a profile without one is timed as if it declared the first preset's.
  if (!profile->hardware) profile->hardware = model::clusterHardwareOf(train::presetsMatching(o.presets, true).front());
  auto timedInit_us = [&](const CommShape& shape, size_t* rules) {
    const auto start = std::chrono::steady_clock::now();
    const policy::PolicyTable compiled = learned::compileWithPolicy(*profile, network, shape, {&localHostSources(), {}});
    *rules = compiled.table.ruleCount();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  };
  size_t rules = 0;
  const double first_us =
      timedInit_us(CommShape{.commId = 2, .nRanks = 16, .nNodes = 2, .minRanksPerNode = 8, .maxRanksPerNode = 8}, &rules);
  const double init_us =
      timedInit_us(CommShape{.commId = 1, .nRanks = 24, .nNodes = 3, .minRanksPerNode = 8, .maxRanksPerNode = 8}, &rules);
  std::printf("DecisionTable rebuild, plugin init path (compileWithPolicy, 24 ranks / 3 nodes, uncached, %d buckets x 5 "
              "collectives): %.0f us, %zu rules (first init of the process, probing the host: %.0f us)\n",
              learned::kPolicyMaxBucket - learned::kPolicyMinBucket + 1, init_us, rules, first_us);
  if (!o.noReplay) printReplay(*files, o, net, measuredTrainedOn(o.profile));
  return 0;
}

}  // namespace

void addPolicyEvalCommand(CLI::App& app) {
  auto o = std::make_shared<PolicyEvalOptions>();
  CLI::App* cmd = app.add_subcommand("policy-eval", "figures of a learned policy on held-out machines and measured datasets");
  cmd->add_option("profile", o->profile, "profile with a \"policy\" section (not with --proposers)");
  cmd->add_flag("--proposers", o->proposers,
                "the learned network as the ranker of what to measure, leave one machine out (trains one network per "
                "--data file), against NCCL's cost order and the calibrated simulator");
  cmd->add_option("--presets", o->presets, "machine name prefixes to evaluate on (default h800; keep them held out)");
  cmd->add_option("--data", o->data, "normalized.csv files to replay (default: every dataset under --data-dir)");
  cmd->add_option("--data-dir", o->dataDir,
                  "replay every DIR/<name>/normalized.csv, e.g. shared/data (default: the datasets the project ships)");
  cmd->add_option("--measured-on", o->measuredOn, "the platform the --data files were measured on");
  cmd->add_option("--tpe-budget", o->tpeBudget, "TPE timed iterations per key (0 = converge)")->check(CLI::Range(0, 100000));
  cmd->add_flag("--no-tpe", o->noTpe, "skip the TPE-tuned table");
  cmd->add_flag("--no-replay", o->noReplay, "skip the replay of measured datasets");
  CLI::Option* margin = cmd->add_option("--guard-margin", o->guardMargin,
                                        "guard margin instead of the profile's guard_margin (default 0.05)")
                            ->check(CLI::Range(0.0, 0.99));
  cmd->add_flag("--no-guard", o->noGuard, "apply the network's choices without the guard (as before the guard)")
      ->excludes(margin);
  addPlatformOption(cmd);  // a platform file marked for training adds machines to --presets
  cmd->callback([o] {
    if (int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
