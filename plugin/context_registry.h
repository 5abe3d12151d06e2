// Every live context of the process, so one role finds another's view of the same communicator by
// commId. Touched at init/finalize only, never on the hot path.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "features/features.h"
#include "plugin/decision_log.h"

namespace dynamiccl::plugin {

// What a tuner context shows the other roles: its communicator, and what it decided per call.
struct TunerView {
  CommShape shape;
  // Shared: the profiler contexts of this communicator read it at each Coll start and keep it past
  // the tuner's finalize.
  std::shared_ptr<DecisionLog> decisions = std::make_shared<DecisionLog>();
};

// A profiler context's link to the decision log of its communicator's tuner context in this process,
// made at whichever init comes second; read at each Coll start. The shared_ptr keeps it alive.
struct DecisionLink {
  uint64_t commId = 0;  // v4+: NCCL's commHash; v1/v2: taken from each Coll descriptor
  int rank = -1;        // v4+: the rank NCCL named at init; rank 0 leads (the log learns it at the link)
  std::atomic<const DecisionLog*> decisions{nullptr};
  std::shared_ptr<const DecisionLog> decisionsHeld;
};

// Each also links a profiler context to the decision log of a tuner context of the same commId,
// whichever of the two inits comes second (NCCL starts the profiler's first).
void registerContext(TunerView* context);
void unregisterContext(TunerView* context);
void registerProfilerContext(DecisionLink* context);
void unregisterProfilerContext(DecisionLink* context);  // safe for one never registered
// Calls fn for each live context with this commId (several ranks of one process share a commId).
void forEachContextWithCommId(uint64_t commId, const std::function<void(const TunerView&)>& fn);

// NCCL started this library's profiler role in this process (it does so at communicator init, before
// any collective): a leader can exist. Without it a rank waits only briefly at a boundary.
void noteProfilerRoleStarted();
bool profilerRoleStarted();

}  // namespace dynamiccl::plugin
