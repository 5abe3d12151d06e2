// Whether a communicator learns online, and its start and stop. Init/finalize only.
#pragma once

#include <memory>

#include "features/features.h"
#include "plugin/online/online_comm.h"
#include "plugin/settings/settings.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

// nullptr when online updates are off for this communicator (the reason is logged once).
std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable,
                                        const Settings& settings);
void stopOnline(const std::shared_ptr<OnlineComm>& comm);

}  // namespace dynamiccl::plugin
