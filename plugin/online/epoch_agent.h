// The epoch agent: one background thread per process that, off the hot path, feeds the leader's
// learner from the profiler's observations, publishes the leader's next table version before the
// boundary, and pre-fetches every rank's next version so the boundary is usually one atomic load.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
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

// Records held by this rank (record_cache.cpp). A rank reads every record of its communicator as it
// appears, up to kReadAheadEpochs boundaries past its own position, so a rank epochs behind holds
// what the others adopted even if the store dies; and it re-publishes what it holds (write-once)
// into a store found to have lost a record it read.
inline constexpr uint64_t kReadAheadEpochs = 16;
// How often a rank polls, whatever the communicator's size: each rank's requests per second stay
// flat and the store's grow linearly with the ranks. Far from its next boundary, once a second; near it
// (within half an epoch, its record not held yet), every 20 ms, so a table the leader published half an
// epoch ahead reaches every rank within about 20 ms.
inline constexpr std::chrono::milliseconds kReadAheadPoll{1000};
inline constexpr std::chrono::milliseconds kNearBoundaryPoll{20};
// The share of a boundary's bound the leader leaves the other ranks to read its record of the boundary
// it waits at: a publish that would land later is given up (measured: etcd back from an election at
// the bound's end took the leader's retry 10 ms before a follower's bound ended, and followers missed it).
inline constexpr double kOthersReadShare = 0.25;
std::optional<std::string> heldRecord(OnlineComm& c, uint64_t boundary);
// One agent tick's reading towards `upcoming`, the boundary this rank's hot path heads to: reads
// ahead (at the near-boundary pace once it is within half an epoch and not held); returns its record
// once held, for the caller to stage. staged: a record at or past `upcoming` is staged already.
std::optional<std::string> followAhead(OnlineComm& c, uint64_t calls, uint64_t upcoming, bool staged);
void holdRecord(OnlineComm& c, uint64_t boundary, const std::string& bytes);
// One read of the store, at most every kReadAheadPoll, or every kNearBoundaryPoll while `need` (a
// boundary this rank reaches soon and does not hold; 0: none): the newest held record (still
// there?), `need`, and the next boundaries past the newest.
void readAhead(OnlineComm& c, uint64_t calls, uint64_t need);

}  // namespace dynamiccl::plugin
