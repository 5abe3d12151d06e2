// The simulated demo's step 2: TPE + Hyperband per (collective, size) on the noisy simulator (or a
// replayed dataset with --data), then smoothing and the guard against NCCL's default.
#include "lab/demo/demo.h"

namespace dynamiccl::cli::demo {
namespace {

constexpr Collective kDemoCollectives[] = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter};

}  // namespace

Expected<TunedProfile> tuneProfile(const DemoOptions& o, const std::string& paramsPath) {
  tune::TunePlan plan;  // the CLI's rule: 2% switch penalty, 1% guard
  if (o.data.empty()) {
    plan.simulator = {o.preset, o.nodes, o.seed, paramsPath};
    return tuneWith(plan, o, {std::begin(kDemoCollectives), std::end(kDemoCollectives)},
                    tune::powerOfTwoSizes(4096, uint64_t(1) << 30));
  }
  plan.backend = tune::BackendKind::Replay;
  plan.replay = {o.data, "", 0, 0, "", std::nullopt};
  plan.measuredOnly = true;  // only the demo's collectives the dataset measured can be tuned
  return tuneWith(plan, o, {std::begin(kDemoCollectives), std::end(kDemoCollectives)}, {});
}

}  // namespace dynamiccl::cli::demo
