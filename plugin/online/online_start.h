// Whether a communicator learns online, and its start and stop. Init/finalize only.
#pragma once

#include <memory>
#include <optional>

#include "features/features.h"
#include "plugin/online/online_comm.h"
#include "plugin/settings/settings.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

// nullptr when neither online updates nor in-job verification run for this communicator (the reason
// is logged once). unverified: the candidates verification tests against NCCL's default; declared:
// the profile's hardware (part of the scope verdicts are stored under).
std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable,
                                        const policy::DecisionTable& unverified,
                                        const std::optional<ClusterHardware>& declared, const Settings& settings);
void stopOnline(const std::shared_ptr<OnlineComm>& comm);

}  // namespace dynamiccl::plugin
