// The epoch agent: one background thread per process that, off the hot path, feeds the leader's
// learner from the profiler's observations, publishes the leader's next table version before the
// boundary, and pre-fetches every rank's next version so the boundary is usually one atomic load.
#pragma once

#include <memory>

#include "features/features.h"
#include "plugin/online/online_comm.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

// nullptr when online updates are off for this communicator (the reason is logged once).
std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable);
void stopOnline(const std::shared_ptr<OnlineComm>& comm);

}  // namespace dynamiccl::plugin
