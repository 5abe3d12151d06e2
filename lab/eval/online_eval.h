// The online learner's loop judged per key (`dynamiccl-lab online-eval`): its arms, their true and
// sampled latencies, NCCL's view; exploration cost, final ratio to the best and drift recovery.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "offline/sim/sim.h"

namespace dynamiccl::eval {

// The loop: calls per key, calls per table version, and the prior of untried arms.
struct OnlineLoop {
  uint64_t calls = 10000, epoch = 500;
  bool noModelPrior = false;  // untried arms assumed 2x slower instead of NCCL's cost table
};

// One key's world: its arms, their true mean latency, noisy samples, and NCCL's view of it.
struct KeyWorld {
  std::string source, label;  // "sim"/"data", "allreduce 1048576"
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  sim::Config ncclDefault;
  std::vector<sim::Config> arms;  // what can run here (measured, or feasible in the simulator)
  model::CostTable costTable{};   // NCCL's table at getCollInfo; arms nobody can run are IGNORE (-1)
  std::function<double(const sim::Config&)> mean_us;                  // < 0: cannot run
  std::function<std::optional<double>(const sim::Config&)> sample_us;  // nullopt: cannot run
};

struct KeyResult {
  double exploreShare = 0, finalRatio = 0, staticFinalRatio = 0, defaultFinalRatio = 0;
  int64_t recoveryCalls = -1;
};

// Runs the learner on one key for o.calls calls; at o.calls / 2 the static choice becomes 2x slower.
// Every 50th call goes to trace as "source,key,call,online_ratio,static_ratio,default_ratio".
KeyResult evalKey(const KeyWorld& w, const OnlineLoop& o, std::ostream& trace);
// The simulator's keys: ring/tree x LL/LL128/Simple as the hardware allows, calibrated times.
std::vector<KeyWorld> simulatedKeys(const sim::Simulator& s, const model::NcclReference& ref);
// Measured keys: points with at least three measured (algo, proto), up to five sizes per shape.
std::vector<KeyWorld> measuredKeys(const measurements::ReplayData& data);

}  // namespace dynamiccl::eval
