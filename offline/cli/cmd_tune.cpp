// dynamiccl tune: per collective and size, TPE + Hyperband search over algo x proto x channels x
// chunk on a measurement backend (simulator, replayed dataset, nccl-tests runner), then smoothing
// and the default guard; writes a tune report (for export/env) and optionally the profile.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/cli/value_checks.h"
#include "offline/files/files.h"
#include "offline/platforms/platforms.h"
#include "offline/cli/cluster_facts.h"
#include "offline/tune/tune.h"
#include "abi/abi.h"

namespace dynamiccl::cli {
namespace {

struct TuneCmdOptions {
  std::string backend = "sim", topology = "dgx-h100", simParams, dataset, system, script = platforms::dataRoot().path + "/scripts/measure_nccl_tests.sh";
  std::string launcher = "mpirun", ncclTestsDir, plugin, method = "tpe", out = "dynamiccl-tune.json", profile, name;
  std::string platform, pointsCsv;
  // runner: the search by runs (one nccl-tests sweep per forced configuration)
  std::string search = "runs", prior = "sim", priorProfile, fakeCluster, dimensions = "algo-proto";
  int maxRuns = 0, gridRepeats = 3;
  std::vector<std::string> collectives;  // empty: allreduce (replay: every collective the data measured)
  int nodes = 1, nranks = 0, iterations = 27, eta = 3, share = 3, pool = 2, maxRepeats = 200;
  uint64_t minBytes = 1024, maxBytes = 1 << 30, seed = 1;
  int64_t budget = 0;
  double switchPenalty = 0.02, minGain = 0.01, confidence = 0.95;
  bool noProgress = false;
  ClusterFactsOptions cluster;  // runner: the measured cluster's hardware, written into each rule's evidence
  std::string ncclVersion;      // the NCCL the rules are for (runner: also written into the evidence)
};

// --nccl-version as a release's rules: unset is the backend's version, else 2.28 (tune::targetRule).
std::optional<abi::PickRule> ruleOf(const TuneCmdOptions& o) {
  return o.ncclVersion.empty() ? std::nullopt : abi::parsePickRule(o.ncclVersion);
}

Expected<tune::TuneRequest> requestOf(const TuneCmdOptions& o) {
  tune::TuneRequest req;
  req.collectives.clear();  // none: every collective the backend measured
  for (const std::string& c : o.collectives) {
    const auto coll = parseCollective(c);
    if (!coll) return makeError("unknown collective " + c);
    req.collectives.push_back(*coll);
  }
  if (o.backend != "replay") req.sizes = tune::powerOfTwoSizes(o.minBytes, o.maxBytes);
  req.search.method = o.method == "random" ? tune::SearchMethod::Random
                      : o.method == "grid" ? tune::SearchMethod::Grid : tune::SearchMethod::TpeHyperband;
  req.search.maxIterations = o.iterations;
  req.search.eta = o.eta;
  req.search.budgetIterations = o.budget;
  req.search.seed = o.seed;
  req.warmStartTop = o.share;
  req.progress = !o.noProgress;
  req.ncclRule = ruleOf(o);
  if (!o.fakeCluster.empty() && !(o.backend == "runner" && o.search == "runs"))
    return makeError("--fake-cluster needs --backend runner --search runs");
  return req;
}

// The options as the recipe's plan: the request, then the backend (replay: one per communicator
// shape in the data, or the one asked for).
Expected<tune::TunePlan> planOf(const TuneCmdOptions& o) {
  tune::TunePlan plan;
  auto req = requestOf(o);
  if (!req) return makeError(req.error());
  plan.request = std::move(req.value());
  auto cluster = resolveClusterFacts(o.cluster);
  if (!cluster) return makeError(cluster.error());
  if (*cluster && o.backend == "sim")
    return makeError("--preset/--fingerprint/--probe-host/--gpu-cc... declare the measured cluster of --backend "
                     "runner or replay, not of the simulator");
  if (!o.ncclVersion.empty() && !abi::parseNcclVersion(o.ncclVersion))
    return makeError("--nccl-version " + o.ncclVersion + ": expected a version such as 2.31 or 2.28.9");
  if (o.backend != "sim" && o.backend != "replay" && o.backend != "runner")
    return makeError("unknown backend " + o.backend + " (sim, replay, runner)");
  plan.backend = o.backend == "sim" ? tune::BackendKind::Simulator
                 : o.backend == "replay" ? tune::BackendKind::Replay : tune::BackendKind::Runner;
  plan.simulator = {o.topology, o.nodes, o.seed, o.simParams, ruleOf(o).value_or(abi::PickRule::Nccl2_28)};
  plan.replay = {o.dataset, o.system, o.nranks, o.nodes > 1 ? o.nodes : 0, o.platform, *cluster};
  plan.runner = {o.script, o.launcher, o.ncclTestsDir, o.plugin, o.nranks > 0 ? o.nranks : 8, o.nodes, {}, *cluster,
                 o.ncclVersion};
  if (o.backend == "runner" && o.search == "runs")
    plan.byRuns = tune::RunsPlan{o.fakeCluster, o.prior == "sim", o.priorProfile, o.dimensions == "algo-proto",
                                 o.maxRuns, o.gridRepeats};
  plan.rule.switchPenalty = o.switchPenalty;
  plan.rule.minGain = o.minGain;
  plan.rule.confidence = o.confidence;
  plan.rule.poolNeighbours = o.pool;
  plan.maxRepeats = o.maxRepeats;
  plan.adviseJobKnobs = true;
  plan.name = o.name;
  return plan;
}

void printRuns(const TuneCmdOptions& o, const tune::TuneResult& result, const tune::RunSearchResult& runs) {
  std::printf("%s%s: %d ranks / %d nodes\n", result.backend.c_str(),
              o.fakeCluster.empty() ? "" : (" (simulated cluster " + o.fakeCluster + ")").c_str(), result.nRanks,
              result.nNodes);
  for (const std::string& l : runs.log) std::printf("  %s\n", l.c_str());
  int decided = 0;
  for (const tune::SizeStatus& st : runs.sizes) {
    decided += st.decided;
    std::printf("  %-13s %6s  %-9s %s (%d survivor(s))\n", std::string(collectiveName(st.coll)).c_str(),
                sizeText(st.bytes).c_str(), st.decided ? "decided" : "UNDECIDED", st.why.c_str(), st.survivors);
  }
  std::printf("runs used %d vs exhaustive grid %d (%d candidates + NCCL's default, %d runs each; %d candidates run); "
              "sizes decided %d of %zu\n",
              runs.runsUsed, runs.gridRuns, runs.candidates, o.gridRepeats, runs.candidatesRun, decided,
              runs.sizes.size());
}

void printEvidence(const tune::TuneResult& result, const tune::SmoothingOptions& so,
                   const std::vector<tune::TunedInterval>& all,
                   const std::vector<std::vector<tune::PointEvidence>>& evidence) {
  for (const std::string& n : result.dataNotes) std::printf("  data: %s\n", n.c_str());
  for (const std::string& u : result.undecidable) std::printf("  undecidable: %s\n", u.c_str());
  std::printf("per size (the most promising candidate; %s; n = samples of the candidate / of NCCL's default%s; bound at "
              "%.0f%% confidence, rule: upper < %.3f):\n",
              result.evidence.provenance == policy::Provenance::Simulated ? "simulated" : "measured",
              result.evidence.provenance == policy::Provenance::Simulated ? "" : ", each measured, none resampled",
              100 * so.confidence, 1 - so.minGain);
  for (const auto& perKey : evidence)
    for (const tune::PointEvidence& e : perKey) std::printf("  %s\n", tune::describe(e).c_str());
  const bool simulated = result.evidence.provenance == policy::Provenance::Simulated;
  for (const tune::TunedInterval& t : all)
    std::printf("  %-13s [%s, %s]  %-32s %sgain %+5.1f%% [%+.1f%%, %+.1f%%]  confidence %.2f  (%d sizes; %d vs %d "
                "samples)\n",
                std::string(collectiveName(t.coll)).c_str(), sizeText(t.minBytes).c_str(),
                sizeText(t.maxBytes + 1).c_str(), decisionLabel(t.config).c_str(),
                simulated ? "simulated " : "", 100 * t.gain, 100 * t.gainLow, 100 * t.gainHigh, t.confidence, t.sizes,
                t.samples, t.defaultSamples);
  std::printf("evidence: %s\n", policy::evidenceText(result.evidence).c_str());
  if (simulated)
    std::printf("  simulated rules are unverified: the plugin applies them only with DYNAMICCL_TRUST=all; measure "
                "them on the cluster (--backend runner) to make them count\n");
  else if (!result.evidence.fingerprint)
    std::printf("  no fingerprint of the measured cluster (unknown hardware): the rules stay unverified, and the "
                "plugin tests them in the job (declare it: `dynamiccl probe -o FILE` on the machine then --fingerprint "
                "FILE, or --preset, --probe-host, --gpu-cc/--nvlink-gbps/--nics/--nic-gbps)\n");
  else
    std::printf("  the rules carry the fingerprint of %s: %s; they apply where the plugin probes that hardware\n",
                result.evidence.fingerprint->source.c_str(),
                policy::clusterHardwareToJson(*result.evidence.fingerprint).c_str());
}

// One communicator shape as tuned: the search's account, the evidence per size, the rules, the job knobs.
void printShape(const TuneCmdOptions& o, const tune::TunePlan& plan, const tune::TunedShape& s) {
  if (s.measuredAgain > 0)
    std::printf("measured %d undecided sizes again (up to %d repeats each)\n", s.measuredAgain, o.maxRepeats);
  if (!o.ncclVersion.empty() || s.target != abi::PickRule::Nccl2_28)
    std::printf("rules for NCCL %s%s\n", abi::pickRuleName(s.target),
                abi::channelsAreCap(s.target) ? " (channel counts above NCCL's own are not proposed: 2.31 caps them)" : "");
  const tune::TuneResult& result = s.result;
  if (s.runs) printRuns(o, result, *s.runs);
  else
    std::printf("%s: %d ranks / %d nodes, %lld timed iterations (%.1f%% of the exhaustive grid's %lld)\n",
                result.backend.c_str(), result.nRanks, result.nNodes, static_cast<long long>(result.spentIterations),
                100.0 * result.spentIterations / std::max<int64_t>(1, result.gridIterations),
                static_cast<long long>(result.gridIterations));
  printEvidence(result, plan.rule, s.smoothed.intervals, s.smoothed.evidencePerCollective);
  for (const std::string& r : s.report.jobKnobs.reasons) std::printf("  job: %s\n", r.c_str());
}

int run(const TuneCmdOptions& o) {
  auto plan = planOf(o);
  if (!plan) return std::cerr << "tune: " << plan.error() << "\n", 1;
  auto tuned = tune::tuneShapes(*plan);
  if (!tuned) return std::cerr << "tune: " << tuned.error() << "\n", 1;
  const size_t shapes = tuned->shapes.size();
  std::vector<tune::PointEvidence> points;
  for (size_t i = 0; i < shapes; ++i) {
    const tune::TunedShape& s = tuned->shapes[i];
    if (shapes > 1) std::printf("== shape %zu of %zu: %s\n", i + 1, shapes, s.backend.c_str());
    printShape(o, *plan, s);
    for (const auto& perKey : s.smoothed.evidencePerCollective) points.insert(points.end(), perKey.begin(), perKey.end());
  }
  if (!o.pointsCsv.empty()) {
    if (auto s = files::writeFile(o.pointsCsv, tune::evidenceCsv(points)); !s)
      return std::cerr << "tune: " << s.error() << "\n", 1;
    std::printf("wrote %s\n", o.pointsCsv.c_str());
  }
  const tune::TuneReport& report = tuned->merged;
  if (auto s = files::writeFile(o.out, tune::reportToJson(report)); !s) return std::cerr << "tune: " << s.error() << "\n", 1;
  std::printf("wrote %s (%zu rules%s)\n", o.out.c_str(), report.profile.rules.size(),
              shapes > 1 ? (", " + std::to_string(shapes) + " shapes").c_str() : "");
  if (!o.profile.empty()) {
    if (auto s = files::writeFile(o.profile, policy::profileToJson(report.profile)); !s)
      return std::cerr << "tune: " << s.error() << "\n", 1;
    std::printf("wrote %s\n", o.profile.c_str());
  }
  return 0;
}

}  // namespace

void addTuneCommand(CLI::App& app) {
  auto o = std::make_shared<TuneCmdOptions>();
  CLI::App* cmd = app.add_subcommand("tune", "Search per collective and size (TPE + Hyperband) and write a tuned profile");
  addPlatformOption(cmd);
  cmd->add_option("--backend", o->backend, "sim, replay (a normalized.csv) or runner (nccl-tests on a cluster)")
      ->check(CLI::IsMember({"sim", "replay", "runner"}));
  cmd->add_option("--topology", o->topology, "sim: preset name or topology JSON (--preset declares the measured cluster)");
  cmd->add_option("--sim-params", o->simParams, "sim: calibrated parameters JSON");
  cmd->add_option("--nodes", o->nodes, "sim/runner: nodes (replay: filter)");
  cmd->add_option("--ranks", o->nranks, "runner: ranks (replay: only this shape; default every shape in the data)");
  cmd->add_option("--nranks", o->nranks)->group("");  // former names, hidden: the other commands say --ranks, --data
  cmd->add_option("--data", o->dataset, "replay: interchange CSV");
  cmd->add_option("--dataset", o->dataset)->group("");
  cmd->add_option("--system", o->system, "replay: system substring filter");
  cmd->add_option("--script", o->script, "runner: measurement script");
  cmd->add_option("--launcher", o->launcher, "runner: mpirun, srun or none");
  cmd->add_option("--nccl-tests-dir", o->ncclTestsDir, "runner: directory of *_perf binaries");
  cmd->add_option("--plugin", o->plugin, "runner: NCCL_TUNER_PLUGIN value (path to the plugin)");
  cmd->add_option("--collective", o->collectives, "collectives to tune (default allreduce; replay: every collective measured)")->delimiter(',')->check(collectiveCheck());
  cmd->add_option("--min-bytes", o->minBytes, "smallest size (powers of two up to --max-bytes)")->check(byteCountCheck());
  cmd->add_option("--max-bytes", o->maxBytes, "largest size")->check(byteCountCheck());
  cmd->add_option("--method", o->method, "tpe (TPE + Hyperband), random or grid")
      ->check(CLI::IsMember({"tpe", "random", "grid"}));
  cmd->add_option("--iterations", o->iterations, "timed iterations of a full evaluation (Hyperband's R)")->check(CLI::Range(1, 100000));
  cmd->add_option("--eta", o->eta, "Hyperband's reduction factor")->check(CLI::Range(2, 16));
  cmd->add_option("--budget", o->budget, "cap on timed iterations per size (0 = until converged)");
  cmd->add_option("--share", o->share, "leaders of the previous size used as warm start (0 = off)");
  cmd->add_option("--switch-penalty", o->switchPenalty, "smoothing: regret a change of configuration must repay");
  cmd->add_option("--min-gain", o->minGain, "rule: the confidence bound on chosen/default must be below 1 - this")
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--confidence", o->confidence, "rule: confidence of the one-sided bound on chosen/default")
      ->check(CLI::Range(0.5, 0.9999));
  cmd->add_option("--pool", o->pool, "rule: neighbouring sizes either side that may pool noise and evidence")
      ->check(CLI::Range(0, 8));
  cmd->add_option("--max-repeats", o->maxRepeats, "runner/sim: most repeats measured to decide an undecided size (0 = none)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--measured-on", o->platform, "replay: the platform the dataset was measured on, whatever its system strings say");
  cmd->add_option("--points", o->pointsCsv, "also write the per-size evidence CSV here");
  cmd->add_option("--seed", o->seed, "seed (simulator noise, TPE)");
  cmd->add_option("-o,--out", o->out, "tune report JSON (input of export and env)");
  cmd->add_option("--profile", o->profile, "also write the profile JSON here");
  cmd->add_option("--name", o->name, "profile name");
  cmd->add_flag("--no-progress", o->noProgress, "no progress bar");
  cmd->add_option("--nccl-version", o->ncclVersion,
                  "NCCL the rules are for (2.28, 2.30, 2.31...): from 2.31 no channel count above NCCL's own is "
                  "proposed; default the backend's version, else 2.28 (runner: also written into the evidence)");
  addClusterFactsOptions(cmd, o->cluster);
  cmd->add_option("--search", o->search, "runner: runs (one nccl-tests sweep per configuration, raced across sizes) "
                                         "or sizes (a search per size)")
      ->check(CLI::IsMember({"runs", "sizes"}));
  cmd->add_option("--max-runs", o->maxRuns, "runner --search runs: budget of runs (0 = the exhaustive grid's)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--grid-repeats", o->gridRepeats, "runner --search runs: runs per configuration of the exhaustive grid")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--prior", o->prior, "runner --search runs: order candidates by the simulator on --topology (sim) or not (none)")
      ->check(CLI::IsMember({"sim", "none"}));
  cmd->add_option("--prior-profile", o->priorProfile, "runner --search runs: run this profile's configurations first");
  cmd->add_option("--dimensions", o->dimensions, "runner --search runs: algo-proto (NCCL's channels and chunk) or full")
      ->check(CLI::IsMember({"algo-proto", "full"}));
  cmd->add_option("--fake-cluster", o->fakeCluster,
                  "runner --search runs: no cluster; runs come from the simulator on this preset with noise (simulated)");
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
