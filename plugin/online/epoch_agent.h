// The epoch agent: one background thread per process that, off the hot path, feeds the leader's
// learner from the profiler's observations, publishes the leader's next table version before the
// boundary, and pre-fetches every rank's next version so the boundary is usually one atomic load.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "plugin/online_comm.h"

namespace dynamiccl::plugin {

// The thread starts with the first communicator and stops (joined) with the last.
void addToEpochAgent(std::shared_ptr<OnlineComm> comm);
void removeFromEpochAgent(const std::shared_ptr<OnlineComm>& comm);
void wakeEpochAgent();

// Parses a boundary's record (the same bytes give the same result on every rank), makes it the
// staged one and frees records past use (record_staging.cpp).
const StagedRecord* stageRecord(OnlineComm& c, uint64_t boundary, const std::string& bytes);

}  // namespace dynamiccl::plugin
