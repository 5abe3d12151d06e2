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
// another id, its scope is the same. Slots are boundaries 1, 2, 3, ...: one record per job.
uint64_t verdictNamespace(const VerdictScope& scope);

// JSON of the rows (this job's verdicts); "" when it would exceed the backend's record bound.
std::string encodeVerdictRecord(const VerdictScope& scope, const std::vector<store::VerdictRow>& rows);
// The rows of a record of this scope, each field checked; nullopt for anything else.
std::optional<std::vector<store::VerdictRow>> decodeVerdictRecord(const std::string& bytes, const VerdictScope& scope);

// The newest record's rows among slots scope.nextSlot.. up to the first missing one (bounded in
// count and time); leaves scope.nextSlot at that first missing slot.
std::vector<store::VerdictRow> readTravelledVerdicts(coord::RecordStore& backend, VerdictScope& scope);
// Publishes the rows at the first free slot from scope.nextSlot, every request ending by `by`; the
// slot it took, or why none.
Expected<uint64_t> publishVerdicts(coord::RecordStore& backend, const VerdictScope& scope,
                                   const std::vector<store::VerdictRow>& rows, coord::Deadline by);
// Whether `by` has come, give or take the few ms a request sliced to it ends after it: a publish that
// failed then was cut short by its bound, not refused by the backend.
bool reachedDeadline(coord::Deadline by);

}  // namespace dynamiccl::plugin
