// Demo step 2: TPE + Hyperband per (collective, size) on the noisy simulator (or a replayed
// dataset with --data), then smoothing and the guard against NCCL's default -> tuned profile.
#include <cstdio>
#include <set>
#include <unistd.h>

#include "offline/demo/demo_steps.h"
#include "offline/sim/sim.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {
namespace {

constexpr Collective kDemoCollectives[] = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter};

Expected<std::unique_ptr<tune::MeasurementBackend>> makeBackend(const DemoOptions& o, const std::string& paramsPath) {
  if (!o.data.empty()) return tune::makeReplayBackend({o.data, "", 0, 0, ""});
  return tune::makeSimulatorBackend({o.preset, o.nodes, o.seed, paramsPath});
}

// With --data only the demo's collectives the dataset measured can be tuned.
std::vector<Collective> collectivesToTune(const DemoOptions& o, tune::MeasurementBackend& backend) {
  std::vector<Collective> out;
  for (Collective c : kDemoCollectives)
    if (o.data.empty() || !backend.measurableSizes(c).empty()) out.push_back(c);
  return out;
}

}  // namespace

namespace {

// The search, smoothing and guard on one backend, at `sizes` (empty: the backend's own).
Expected<TunedProfile> tuneWith(tune::MeasurementBackend& backend, const DemoOptions& o,
                                const std::vector<Collective>& collectives, const std::vector<uint64_t>& sizes,
                                bool simulated, const tune::SmoothingOptions& so) {
  tune::TuneRequest req;
  req.collectives = collectives;
  if (req.collectives.empty()) return makeError("the dataset measures none of allreduce, allgather, reducescatter");
  req.sizes = sizes;
  // --quick: a third of Hyperband's full fidelity and a per-size cap, so the ctest stays fast.
  req.search.maxIterations = o.quick ? 9 : 27;
  req.search.budgetIterations = o.quick ? 300 : 0;
  req.search.seed = o.seed;
  req.progress = ::isatty(2) != 0;  // a redrawn bar is noise in logs and pipes
  auto result = tune::tune(backend, req);
  if (!result) return makeError(result.error());

  const tune::SmoothedResult smoothed = tune::smoothAll(*result, so);
  const auto& all = smoothed.intervals;
  const auto& chosen = smoothed.chosenPerCollective;
  const std::string name = "dynamiccl demo: tuned on " + backend.name();
  const tune::TuneReport report = tune::makeReport(*result, all, chosen, name, {});

  TunedProfile t;
  t.profile = report.profile;
  t.reportJson = tune::reportToJson(report);
  t.collectives = req.collectives;
  std::set<uint64_t> tunedSizes;
  for (const tune::CollectiveResult& cr : result->collectives)
    for (const tune::KeyResult& k : cr.keys) tunedSizes.insert(k.key.bytes);
  t.sizes.assign(tunedSizes.begin(), tunedSizes.end());
  t.spentIterations = result->spentIterations;
  t.simulated = simulated;
  t.gridIterations = result->gridIterations;
  t.nRanks = result->nRanks;
  t.nNodes = result->nNodes;
  return t;
}

}  // namespace

Expected<TunedProfile> tuneProfile(const DemoOptions& o, const std::string& paramsPath) {
  auto backend = makeBackend(o, paramsPath);
  if (!backend) return makeError(backend.error());
  return tuneWith(**backend, o, collectivesToTune(o, **backend),
                  o.data.empty() ? tune::powerOfTwoSizes(4096, uint64_t(1) << 30) : std::vector<uint64_t>{},
                  o.data.empty(), tune::SmoothingOptions{});  // the CLI's defaults: 2% switch penalty, 1% guard
}

Expected<TunedProfile> tuneOnSimulator(const DemoOptions& o, const std::string& preset, int nodes,
                                       const std::string& paramsPath, const std::vector<Collective>& collectives,
                                       const std::vector<uint64_t>& sizes, bool candidates) {
  auto backend = tune::makeSimulatorBackend({preset, nodes, o.seed, paramsPath});
  if (!backend) return makeError(backend.error());
  tune::SmoothingOptions so;  // the CLI's defaults: 2% switch penalty, 1% guard
  if (candidates) {
    // Candidates for in-job verification: wherever the simulator's estimate is a gain, however small
    // or uncertain; the job's measurements decide whether it stands.
    so.confidence = 0.5;
    so.minGain = 0;
    so.switchPenalty = 0;
  }
  return tuneWith(**backend, o, collectives, sizes, true, so);
}

}  // namespace dynamiccl::cli::demo
