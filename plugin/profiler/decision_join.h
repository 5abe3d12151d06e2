// Worker-side: an observation joined with the tuner's decision for the same call, and the one log
// line per communicator the first time NCCL did not run what the plugin chose.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <unordered_map>
#include <string>

#include "plugin/observation.h"
#include "plugin/profiler/worker.h"

namespace dynamiccl::plugin {

// Looks up the live tuner contexts of o.commId (locks the context registry: worker only).
JoinedDecision joinDecision(const Observation& o);

// Why NCCL did not run the plugin's choice; empty when it did (or when the plugin chose nothing).
std::string notHonouredBecause(const Observation& o, const LoggedDecision& d);

class AppliedWatch {
 public:
  // Counts what NCCL ran against the decision on the communicator's decision log (the metrics'
  // honoured share), and logs one line the first time a communicator's decision was not honoured.
  void check(const Observation& o, const JoinedDecision& j);

 private:
  std::shared_ptr<DecisionLog> logOf(uint64_t commId);
  std::set<uint64_t> warned_;
  std::unordered_map<uint64_t, std::weak_ptr<DecisionLog>> logs_;  // found once per communicator
};

}  // namespace dynamiccl::plugin
