#include "offline/tune/tune_shapes.h"

#include <algorithm>
#include <limits>
#include <memory>

namespace dynamiccl::tune {
namespace {

using Backends = std::vector<std::unique_ptr<MeasurementBackend>>;

Expected<Backends> one(Expected<std::unique_ptr<MeasurementBackend>> b) {
  if (!b) return makeError(b.error());
  Backends out;
  out.push_back(std::move(b.value()));
  return out;
}

Expected<Backends> makeBackends(const TunePlan& plan) {
  switch (plan.backend) {
    case BackendKind::Simulator: return one(makeSimulatorBackend(plan.simulator));
    case BackendKind::Replay:
      return plan.everyShape ? makeReplayBackends(plan.replay) : one(makeReplayBackend(plan.replay));
    case BackendKind::Runner: return one(makeRunnerBackend(plan.runner));
  }
  return makeError("unknown backend");
}

// The prior of the search by runs: the simulator's predicted time (NCCL 2.28's channel rule).
std::function<double(const Config&, const MeasureKey&)> simulatorPrior(const TunePlan& plan) {
  SimulatorBackendOptions so = plan.simulator;
  so.ncclRule = abi::PickRule::Nccl2_28;
  auto sim = makeSimulatorBackend(so);
  if (!sim) return nullptr;
  std::shared_ptr<MeasurementBackend> b(std::move(sim.value()));
  return [b](const Config& c, const MeasureKey& k) {
    return b->expected_us(c, k).value_or(std::numeric_limits<double>::infinity());
  };
}

// The search by runs. With a fake cluster the runs come from a synthetic cluster (the simulator on
// that preset, with noise), which then stands in for `backend`.
Expected<RunSearchResult> runsOf(const TunePlan& plan, const TuneRequest& req, std::unique_ptr<MeasurementBackend>& backend) {
  const RunsPlan& rp = *plan.byRuns;
  RunExecutor exec;
  if (!rp.fakeCluster.empty()) {
    auto fake = makeSimulatorBackend({rp.fakeCluster, plan.simulator.nNodes, plan.simulator.seed + 1, ""});
    if (!fake) return makeError(fake.error());
    backend = std::move(fake.value());  // its provenance is simulated: nothing it yields is verified
    const MeasurementBackend* truth = backend.get();
    SyntheticRunOptions so;
    so.truth_us = [truth](const Config& c, const MeasureKey& k) {
      return truth->expected_us(c, k).value_or(truth->expected_us(keepDefault(), k).value_or(1.0));
    };
    so.seed = plan.simulator.seed;
    exec = syntheticRunExecutor(so);
  } else {
    exec = commandRunExecutor(plan.runner);
  }
  RunSearchOptions ro;
  ro.rule = plan.rule;
  ro.maxRuns = rp.maxRuns;
  ro.gridRepeats = rp.gridRepeats;
  ro.iterations = req.search.maxIterations;
  if (rp.simulatorPrior) ro.prior = simulatorPrior(plan);
  if (!rp.priorProfile.empty()) {
    auto p = policy::loadProfileFile(rp.priorProfile);
    if (!p) return makeError("--prior-profile: " + p.error());
    for (const policy::Rule& r : p->rules)
      if (!r.decision.keepsAlgoProto() &&
          std::find(ro.preferred.begin(), ro.preferred.end(), r.decision) == ro.preferred.end())
        ro.preferred.push_back(r.decision);
  }
  TuneRequest r = req;
  if (rp.algoProtoOnly) r.dimensions.channels = {0}, r.dimensions.chunks = {0};
  return searchByRuns(*backend, exec, r, ro);
}

// The collectives one backend tunes (TunePlan::request, TunePlan::measuredOnly).
Expected<std::vector<Collective>> collectivesOf(const TunePlan& plan, const MeasurementBackend& backend) {
  if (plan.request.collectives.empty()) return measuredCollectives(backend);
  std::vector<Collective> out;
  std::string asked;
  for (Collective c : plan.request.collectives) {
    asked += (asked.empty() ? "" : ", ") + std::string(collectiveName(c));
    if (!plan.measuredOnly || !backend.recorded() || !backend.measurableSizes(c).empty()) out.push_back(c);
  }
  if (out.empty()) return makeError("the dataset measures none of " + asked);
  return out;
}

Expected<TunedShape> tuneShape(const TunePlan& plan, std::unique_ptr<MeasurementBackend>& backend) {
  TunedShape s;
  auto colls = collectivesOf(plan, *backend);
  if (!colls) return makeError(colls.error());
  s.collectives = *colls;
  TuneRequest req = plan.request;
  req.collectives = s.collectives;
  if (plan.byRuns) {
    auto r = runsOf(plan, req, backend);
    if (!r) return makeError(r.error());
    s.result = std::move(r->tune);
    s.runs = std::move(r.value());
  } else {
    auto r = tune(*backend, req);
    if (!r) return makeError(r.error());
    s.result = std::move(r.value());
    s.measuredAgain = measureUndecided(*backend, s.result, plan.rule, plan.maxRepeats);
  }
  s.backend = backend->name();
  s.smoothed = smoothAll(s.result, plan.rule);
  JobKnobAdvice knobs;
  if (plan.byRuns) knobs.reasons.push_back("NCCL_NTHREADS/NCCL_BUFFSIZE: not searched by runs; NCCL's defaults kept");
  else if (plan.adviseJobKnobs)
    knobs = recommendJobKnobs(*backend, s.result, s.smoothed.intervals, plan.rule, req.search.maxIterations);
  s.target = targetRule(req, *backend);
  s.report = makeReport(s.result, s.smoothed.intervals, s.smoothed.chosenPerCollective,
                        plan.name.empty() ? "tuned " + s.backend : plan.name, std::move(knobs));
  return s;
}

// Several shapes' reports as one: their rules in one profile (merge refuses conflicts), one knob
// advice only where every shape agrees.
Expected<TuneReport> mergedReport(const std::vector<TunedShape>& shapes, const std::string& name) {
  if (shapes.size() == 1) return shapes.front().report;
  std::vector<policy::Profile> profiles;
  for (const TunedShape& s : shapes) profiles.push_back(s.report.profile);
  auto merged = policy::mergeProfiles(profiles);
  if (!merged) return makeError(merged.error());
  TuneReport out = shapes.front().report;
  out.profile = std::move(merged.value());
  out.profile.name = name.empty() ? "tuned " + std::to_string(shapes.size()) + " shapes" : name;
  for (size_t i = 1; i < shapes.size(); ++i) {
    const TuneReport& r = shapes[i].report;
    out.backend += "; " + r.backend;
    out.spentIterations += r.spentIterations;
    out.gridIterations += r.gridIterations;
    out.keys.insert(out.keys.end(), r.keys.begin(), r.keys.end());
    if (!(r.jobKnobs.knobs == out.jobKnobs.knobs)) {
      out.jobKnobs.knobs = {};
      out.jobKnobs.reasons.push_back("job knobs differ between shapes: NCCL's defaults kept");
    }
  }
  return out;
}

}  // namespace

Expected<TunedShapes> tuneShapes(const TunePlan& plan) {
  auto backends = makeBackends(plan);
  if (!backends) return makeError(backends.error());
  TunedShapes out;
  for (auto& backend : *backends) {
    auto s = tuneShape(plan, backend);
    if (!s) return makeError(backends->size() > 1 ? backend->name() + ": " + s.error() : s.error());
    out.shapes.push_back(std::move(s.value()));
  }
  auto merged = mergedReport(out.shapes, plan.name);
  if (!merged) return makeError(merged.error());
  out.merged = std::move(merged.value());
  return out;
}

}  // namespace dynamiccl::tune
