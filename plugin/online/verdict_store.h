// In-job verification's memory: verdicts go to the store at finalize, and the next job on the same
// hardware and shape resumes from them (its leader's learner starts with their samples). Init and
// finalize only; every failure is one log line and the job goes on without it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "features/features.h"
#include "plugin/online_comm.h"
#include "plugin/settings/settings.h"
#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {

// The scope this communicator's verdicts are stored under (VerdictScope: plugin/online_comm.h).
VerdictScope verdictScope(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                          const Settings& settings);

// Seeds the learner with the latest verdicts of this scope, from the store and through the backend
// (the newer per candidate); returns how many candidates were resumed.
size_t resumeVerdicts(learner::OnlineLearner& learner, const VerdictScope& scope);
// Appends this job's verdicts to the store, then publishes them through the backend with what is left
// until `by` (what the backend did not take by then stays in the store: the next job on this node
// resumes from it and publishes it with its own verdicts); says in one line what was promoted,
// dropped and still testing.
void saveVerdicts(const std::vector<learner::Verdict>& verdicts, const VerdictScope& scope, coord::Deadline by);

}  // namespace dynamiccl::plugin
