// Demo step 2: TPE + Hyperband per (collective, size) on the noisy simulator, then smoothing and the
// guard against NCCL's default -> the tuned profile the measured job verifies.
#include <cstdio>
#include <set>
#include <unistd.h>

#include "offline/demo/demo_steps.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {

Expected<TunedProfile> tuneWith(tune::TunePlan plan, const DemoOptions& o, const std::vector<Collective>& collectives,
                                const std::vector<uint64_t>& sizes) {
  plan.everyShape = false;
  plan.request.collectives = collectives;
  plan.request.sizes = sizes;
  // --quick: a third of Hyperband's full fidelity and a per-size cap, so the ctest stays fast.
  plan.request.search.maxIterations = o.quick ? 9 : 27;
  plan.request.search.budgetIterations = o.quick ? 300 : 0;
  plan.request.search.seed = o.seed;
  plan.request.progress = ::isatty(2) != 0;  // a redrawn bar is noise in logs and pipes
  auto tuned = tune::tuneShapes(plan);
  if (!tuned) return makeError(tuned.error());
  const tune::TunedShape& shape = tuned->shapes.front();
  tune::TuneReport report = shape.report;
  report.profile.name = "dynamiccl demo: tuned on " + shape.backend;

  TunedProfile t;
  t.profile = report.profile;
  t.reportJson = tune::reportToJson(report);
  t.collectives = shape.collectives;
  std::set<uint64_t> tunedSizes;
  for (const tune::CollectiveResult& cr : shape.result.collectives)
    for (const tune::KeyResult& k : cr.keys) tunedSizes.insert(k.key.bytes);
  t.sizes.assign(tunedSizes.begin(), tunedSizes.end());
  t.spentIterations = shape.result.spentIterations;
  t.simulated = plan.backend == tune::BackendKind::Simulator;
  t.gridIterations = shape.result.gridIterations;
  t.nRanks = shape.result.nRanks;
  t.nNodes = shape.result.nNodes;
  return t;
}

Expected<TunedProfile> tuneOnSimulator(const DemoOptions& o, const std::string& preset, int nodes,
                                       const std::string& paramsPath, const std::vector<Collective>& collectives,
                                       const std::vector<uint64_t>& sizes, bool candidates) {
  tune::TunePlan plan;  // the CLI's rule: 2% switch penalty, 1% guard
  plan.simulator = {preset, nodes, o.seed, paramsPath};
  if (candidates) {
    // Candidates for in-job verification: wherever the simulator's estimate is a gain, however small
    // or uncertain; the job's measurements decide whether it stands.
    plan.rule.confidence = 0.5;
    plan.rule.minGain = 0;
    plan.rule.switchPenalty = 0;
  }
  return tuneWith(plan, o, collectives, sizes);
}

}  // namespace dynamiccl::cli::demo
