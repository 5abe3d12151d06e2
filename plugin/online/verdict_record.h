// The cluster's memory of in-job verification: one job's verdicts as one record in the coordination
// backend the job already uses (shared directory or etcd), so the next job's leader resumes from them
// on any node without a shared SQLite file. Init and finalize only; each step bounded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coord/coord.h"
#include "plugin/online_comm.h"
#include "store/store.h"

namespace dynamiccl::plugin {

// The backend namespace ("communicator") of a scope's verdict records: the next job's communicator has
// another id, its scope is the same. Its slots 1..8 are a ring: job k of the scope writes slot
// (k - 1) % 8 + 1, its record folding the newest one before it, so the memory and a reader's work stay
// eight records whatever the number of jobs, and the newest verdict of every candidate is in force.
uint64_t verdictNamespace(const VerdictScope& scope);

// The newest record's rows (one read of the ring); none when the backend cannot be read.
std::vector<store::VerdictRow> readTravelledVerdicts(coord::RecordStore& backend, const VerdictScope& scope);
// Publishes the rows folded into the ring's newest record as the next job's record (the record in its
// slot, eight jobs old, replaced), every request ending by `by`; the slot it took, or why none.
Expected<uint64_t> publishVerdicts(coord::RecordStore& backend, const VerdictScope& scope,
                                   const std::vector<store::VerdictRow>& rows, coord::Deadline by);
// Whether `by` has come, give or take the few ms a request sliced to it ends after it: a publish that
// failed then was cut short by its bound, not refused by the backend.
bool reachedDeadline(coord::Deadline by);

}  // namespace dynamiccl::plugin
