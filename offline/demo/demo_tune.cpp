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

Expected<TunedProfile> tuneProfile(const DemoOptions& o, const std::string& paramsPath) {
  auto backend = makeBackend(o, paramsPath);
  if (!backend) return makeError(backend.error());
  tune::TuneRequest req;
  req.collectives = collectivesToTune(o, **backend);
  if (req.collectives.empty()) return makeError("the dataset measures none of allreduce, allgather, reducescatter");
  if (o.data.empty()) req.sizes = tune::powerOfTwoSizes(4096, uint64_t(1) << 30);
  // --quick: a third of Hyperband's full fidelity and a per-size cap, so the ctest stays fast.
  req.search.maxIterations = o.quick ? 9 : 27;
  req.search.budgetIterations = o.quick ? 300 : 0;
  req.search.seed = o.seed;
  req.progress = ::isatty(2) != 0;  // a redrawn bar is noise in logs and pipes
  auto result = tune::tune(**backend, req);
  if (!result) return makeError(result.error());

  const tune::SmoothingOptions so;  // the CLI's defaults: 2% switch penalty, 1% guard
  const tune::SmoothedResult smoothed = tune::smoothAll(*result, so);
  const auto& all = smoothed.intervals;
  const auto& chosen = smoothed.chosenPerCollective;
  const std::string name = "dynamiccl demo: tuned on " + (*backend)->name();
  const tune::TuneReport report = tune::makeReport(*result, all, chosen, name, {});

  TunedProfile t;
  t.profile = report.profile;
  t.reportJson = tune::reportToJson(report);
  t.collectives = req.collectives;
  std::set<uint64_t> sizes;
  for (const tune::CollectiveResult& cr : result->collectives)
    for (const tune::KeyResult& k : cr.keys) sizes.insert(k.key.bytes);
  t.sizes.assign(sizes.begin(), sizes.end());
  t.spentIterations = result->spentIterations;
  t.simulated = o.data.empty();
  t.gridIterations = result->gridIterations;
  t.nRanks = result->nRanks;
  t.nNodes = result->nNodes;
  return t;
}

}  // namespace dynamiccl::cli::demo
