// dynamiccl tune: per collective and size, TPE + Hyperband search over algo x proto x channels x
// chunk on a measurement backend (simulator, replayed dataset, nccl-tests runner), then smoothing
// and the default guard; writes a tune report (for export/env) and optionally the profile.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <limits>
#include <fstream>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/cli/value_checks.h"
#include "offline/files/files.h"
#include "offline/platforms/platforms.h"
#include "offline/demo/demo.h"
#include "offline/tune/tune.h"
#include "plugin/abi/abi.h"

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

using Backends = std::vector<std::unique_ptr<tune::MeasurementBackend>>;

Expected<Backends> one(Expected<std::unique_ptr<tune::MeasurementBackend>> b) {
  if (!b) return makeError(b.error());
  Backends out;
  out.push_back(std::move(b.value()));
  return out;
}

// Replay: one backend per communicator shape in the data (or the one asked for); others: one.
Expected<Backends> makeBackends(const TuneCmdOptions& o) {
  auto cluster = resolveClusterFacts(o.cluster);
  if (!cluster) return makeError(cluster.error());
  if (*cluster && o.backend == "sim")
    return makeError("--preset/--fingerprint/--probe-host/--gpu-cc... declare the measured cluster of --backend "
                     "runner or replay, not of the simulator");
  if (!o.ncclVersion.empty() && !abi::parseNcclVersion(o.ncclVersion))
    return makeError("--nccl-version " + o.ncclVersion + ": expected a version such as 2.31 or 2.28.9");
  if (o.backend == "sim")
    return one(tune::makeSimulatorBackend({o.topology, o.nodes, o.seed, o.simParams, ruleOf(o).value_or(abi::PickRule::Nccl2_28)}));
  if (o.backend == "replay")
    return tune::makeReplayBackends({o.dataset, o.system, o.nranks, o.nodes > 1 ? o.nodes : 0, o.platform, *cluster});
  if (o.backend == "runner")
    return one(tune::makeRunnerBackend({o.script, o.launcher, o.ncclTestsDir, o.plugin, o.nranks > 0 ? o.nranks : 8,
                                        o.nodes, {}, *cluster, o.ncclVersion}));
  return makeError("unknown backend " + o.backend + " (sim, replay, runner)");
}

// The prior of the search by runs: the simulator's predicted time on --topology.
std::function<double(const tune::Config&, const tune::MeasureKey&)> simPrior(const TuneCmdOptions& o) {
  auto sim = tune::makeSimulatorBackend({o.topology, o.nodes, o.seed, o.simParams});
  if (!sim) return nullptr;
  std::shared_ptr<tune::MeasurementBackend> b(std::move(sim.value()));
  return [b](const tune::Config& c, const tune::MeasureKey& k) {
    return b->expected_us(c, k).value_or(std::numeric_limits<double>::infinity());
  };
}

// --backend runner --search runs: the unit of search is one nccl-tests run over every size. With
// --fake-cluster the runs come from a synthetic cluster (the simulator on that preset, with noise).
Expected<tune::RunSearchResult> searchByRuns(const TuneCmdOptions& o, const tune::TuneRequest& req,
                                             std::unique_ptr<tune::MeasurementBackend>& backend) {
  tune::RunExecutor exec;
  if (!o.fakeCluster.empty()) {
    auto fake = tune::makeSimulatorBackend({o.fakeCluster, o.nodes, o.seed + 1, ""});
    if (!fake) return makeError(fake.error());
    backend = std::move(fake.value());  // its provenance is simulated: nothing it yields is verified
    const tune::MeasurementBackend* truth = backend.get();
    tune::SyntheticRunOptions so;
    so.truth_us = [truth](const tune::Config& c, const tune::MeasureKey& k) {
      return truth->expected_us(c, k).value_or(truth->expected_us(tune::keepDefault(), k).value_or(1.0));
    };
    so.seed = o.seed;
    exec = tune::syntheticRunExecutor(so);
  } else {
    tune::RunnerBackendOptions ro{o.script, o.launcher, o.ncclTestsDir, o.plugin, o.nranks > 0 ? o.nranks : 8,
                                  o.nodes, {}, std::nullopt, o.ncclVersion};
    exec = tune::commandRunExecutor(ro);
  }
  tune::RunSearchOptions ro;
  ro.rule.minGain = o.minGain;
  ro.rule.confidence = o.confidence;
  ro.rule.poolNeighbours = o.pool;
  ro.maxRuns = o.maxRuns;
  ro.gridRepeats = o.gridRepeats;
  ro.iterations = o.iterations;
  if (o.prior == "sim") ro.prior = simPrior(o);
  if (!o.priorProfile.empty()) {
    auto p = policy::loadProfileFile(o.priorProfile);
    if (!p) return makeError("--prior-profile: " + p.error());
    for (const policy::Rule& r : p->rules)
      if (!r.decision.keepsAlgoProto() &&
          std::find(ro.preferred.begin(), ro.preferred.end(), r.decision) == ro.preferred.end())
        ro.preferred.push_back(r.decision);
  }
  tune::TuneRequest r = req;
  if (o.dimensions == "algo-proto") r.dimensions.channels = {0}, r.dimensions.chunks = {0};
  return tune::searchByRuns(*backend, exec, r, ro);
}

Expected<tune::TuneRequest> requestOf(const TuneCmdOptions& o) {
  tune::TuneRequest req;
  req.collectives.clear();  // the request's default list is replaced by --collective
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
                   const std::vector<std::vector<tune::PointEvidence>>& evidence, std::vector<tune::PointEvidence>& points) {
  for (const std::string& n : result.dataNotes) std::printf("  data: %s\n", n.c_str());
  for (const std::string& u : result.undecidable) std::printf("  undecidable: %s\n", u.c_str());
  std::printf("per size (the most promising candidate; %s; n = samples of the candidate / of NCCL's default%s; bound at "
              "%.0f%% confidence, rule: upper < %.3f):\n",
              result.evidence.provenance == policy::Provenance::Simulated ? "simulated" : "measured",
              result.evidence.provenance == policy::Provenance::Simulated ? "" : ", each measured, none resampled",
              100 * so.confidence, 1 - so.minGain);
  for (const auto& perKey : evidence)
    for (const tune::PointEvidence& e : perKey) {
      std::printf("  %s\n", tune::describe(e).c_str());
      points.push_back(e);
    }
  const bool simulated = result.evidence.provenance == policy::Provenance::Simulated;
  for (const tune::TunedInterval& t : all)
    std::printf("  %-13s [%s, %s]  %-32s %sgain %+5.1f%% [%+.1f%%, %+.1f%%]  confidence %.2f  (%d sizes; %d vs %d "
                "samples)\n",
                std::string(collectiveName(t.coll)).c_str(), sizeText(t.minBytes).c_str(),
                sizeText(t.maxBytes + 1).c_str(), tune::configLabel(t.config).c_str(),
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

// One communicator shape: search, smoothing and the guard, job knobs; prints it and returns its report.
Expected<tune::TuneReport> tuneShape(const TuneCmdOptions& o, const tune::TuneRequest& req,
                                     std::unique_ptr<tune::MeasurementBackend>& backend,
                                     std::vector<tune::PointEvidence>& points) {
  const bool byRuns = o.backend == "runner" && o.search == "runs";
  std::optional<tune::RunSearchResult> runs;
  Expected<tune::TuneResult> result = makeError("not run");
  if (byRuns) {
    auto r = searchByRuns(o, req, backend);
    if (!r) return makeError(r.error());
    runs = std::move(r.value());
    result = runs->tune;
  } else {
    result = tune::tune(*backend, req);
  }
  if (!result) return makeError(result.error());
  tune::SmoothingOptions so;
  so.switchPenalty = o.switchPenalty;
  so.minGain = o.minGain;
  so.confidence = o.confidence;
  so.poolNeighbours = o.pool;
  // Undecided sizes get the repeats that would decide them (runner, simulator), then the rule again.
  if (const int n = byRuns ? 0 : tune::measureUndecided(*backend, *result, so, o.maxRepeats); n > 0)
    std::printf("measured %d undecided sizes again (up to %d repeats each)\n", n, o.maxRepeats);
  auto [all, chosen, evidence] = tune::smoothAll(*result, so);
  tune::JobKnobAdvice knobs;
  if (byRuns) knobs.reasons.push_back("NCCL_NTHREADS/NCCL_BUFFSIZE: not searched by runs; NCCL's defaults kept");
  else knobs = tune::recommendJobKnobs(*backend, *result, all, so, o.iterations);
  const std::string name = o.name.empty() ? "tuned " + backend->name() : o.name;
  const abi::PickRule target = tune::targetRule(req, *backend);
  if (!o.ncclVersion.empty() || target != abi::PickRule::Nccl2_28)
    std::printf("rules for NCCL %s%s\n", abi::pickRuleName(target),
                abi::channelsAreCap(target) ? " (channel counts above NCCL's own are not proposed: 2.31 caps them)" : "");
  if (runs) printRuns(o, *result, *runs);
  else
    std::printf("%s: %d ranks / %d nodes, %lld timed iterations (%.1f%% of the exhaustive grid's %lld)\n",
                result->backend.c_str(), result->nRanks, result->nNodes, static_cast<long long>(result->spentIterations),
                100.0 * result->spentIterations / std::max<int64_t>(1, result->gridIterations),
                static_cast<long long>(result->gridIterations));
  printEvidence(*result, so, all, evidence, points);
  for (const std::string& r : knobs.reasons) std::printf("  job: %s\n", r.c_str());
  return tune::makeReport(*result, all, chosen, name, knobs);
}

// Several shapes' reports as one: their rules in one profile (merge refuses conflicts), one knob
// advice only where every shape agrees.
Expected<tune::TuneReport> mergedReport(std::vector<tune::TuneReport> reports, const std::string& name) {
  if (reports.size() == 1) return std::move(reports.front());
  std::vector<policy::Profile> profiles;
  for (const tune::TuneReport& r : reports) profiles.push_back(r.profile);
  auto merged = policy::mergeProfiles(profiles);
  if (!merged) return makeError(merged.error());
  tune::TuneReport out = reports.front();
  out.profile = std::move(merged.value());
  out.profile.name = name.empty() ? "tuned " + std::to_string(reports.size()) + " shapes" : name;
  for (size_t i = 1; i < reports.size(); ++i) {
    out.backend += "; " + reports[i].backend;
    out.spentIterations += reports[i].spentIterations;
    out.gridIterations += reports[i].gridIterations;
    out.keys.insert(out.keys.end(), reports[i].keys.begin(), reports[i].keys.end());
    if (!(reports[i].jobKnobs.knobs == out.jobKnobs.knobs)) {
      out.jobKnobs.knobs = {};
      out.jobKnobs.reasons.push_back("job knobs differ between shapes: NCCL's defaults kept");
    }
  }
  return out;
}

int run(const TuneCmdOptions& o) {
  auto req = requestOf(o);
  if (!req) return std::cerr << "tune: " << req.error() << "\n", 1;
  auto backends = makeBackends(o);
  if (!backends) return std::cerr << "tune: " << backends.error() << "\n", 1;
  std::vector<tune::TuneReport> reports;
  std::vector<tune::PointEvidence> points;
  for (auto& backend : *backends) {
    if (backends->size() > 1) std::printf("== shape %zu of %zu: %s\n", reports.size() + 1, backends->size(), backend->name().c_str());
    tune::TuneRequest shapeReq = *req;
    if (o.collectives.empty()) shapeReq.collectives = tune::measuredCollectives(*backend);
    auto r = tuneShape(o, shapeReq, backend, points);
    if (!r) return std::cerr << "tune: " << r.error() << "\n", 1;
    reports.push_back(std::move(r.value()));
  }
  if (!o.pointsCsv.empty()) {
    std::ofstream(o.pointsCsv) << tune::evidenceCsv(points);
    std::printf("wrote %s\n", o.pointsCsv.c_str());
  }
  const size_t shapes = reports.size();
  auto report = mergedReport(std::move(reports), o.name);
  if (!report) return std::cerr << "tune: " << report.error() << "\n", 1;
  if (auto s = files::writeFile(o.out, tune::reportToJson(*report)); !s) return std::cerr << "tune: " << s.error() << "\n", 1;
  std::printf("wrote %s (%zu rules%s)\n", o.out.c_str(), report->profile.rules.size(),
              shapes > 1 ? (", " + std::to_string(shapes) + " shapes").c_str() : "");
  if (!o.profile.empty()) {
    if (auto s = files::writeFile(o.profile, policy::profileToJson(report->profile)); !s)
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
