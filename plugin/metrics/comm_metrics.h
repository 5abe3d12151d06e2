// What the metrics file says of one communicator in this process (docs/METRICS.md): the counts its
// decision log keeps, the leader's learner's figures, the coordination store's state. A snapshot,
// taken off the hot path.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "features/features.h"
#include "plugin/decision_log.h"

namespace dynamiccl::plugin {

struct CommMetrics {
  uint64_t commId = 0;
  int rank = -1;  // the profiler's (NCCL names it there); -1 unknown
  int nRanks = 0, nNodes = 0;
  std::string library;  // "nccl" or "rccl": the host that loaded the plugin
  std::array<uint64_t, kNumCollectives> calls{};  // NCCL asked the tuner
  // Profiled calls joined with their decision: NCCL ran the plugin's choice, ran another, or the
  // decision was NCCL's own (a sample of the calls: counting every call would cost the hot path).
  uint64_t profiledHonoured = 0, profiledNotHonoured = 0, profiledNcclChoice = 0;

  bool online = false;     // online learning runs on this communicator
  bool frozen = false;     // a frozen record (or the version kept for good) stands: no update comes
  uint64_t version = 0;    // the table version in force (its boundary over the epoch); 0: the static table
  uint64_t foreignRecords = 0, otherRecords = 0;  // records this rank did not write or adopt, by cause

  // The leader's learner, as its finalize line says them (measured, not modelled).
  bool leader = false;
  uint64_t measuredCalls = 0;
  double measureShare = 0;       // share of calls profiled now
  double measureCostShare = 0;   // what profiling costs, share of collective time
  double exploreCostShare = 0;   // what trials slower than NCCL's choice cost against it, share of collective time
  double gainShare = 0;          // what runs saves against NCCL's choices, share of collective time
  double collectiveTime_us = 0;  // the collective time of the calls so far (measured where measured)
  int keys = 0, searchingKeys = 0;

  bool ended = false;  // the communicator was finalized: final values
};

struct OnlineComm;

// The snapshot: the decision log's counts, and where online runs its state and (on the leader) its
// learner's figures; takes online's mutex.
CommMetrics snapshotMetrics(const CommShape& shape, const DecisionLog& decisions, std::string_view library,
                            OnlineComm* online);

}  // namespace dynamiccl::plugin
