// What a communicator's tuner init and finalize call of the online room (defined in online/): the
// ranks' input check, and the start and stop of online learning. Init/finalize only.
#pragma once

#include <memory>
#include <string>

#include "features/features.h"
#include "plugin/nccl_version.h"
#include "plugin/online_comm.h"
#include "plugin/settings/settings.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

// May this communicator's ranks act on their profile and learn online? False (NCCL's choices on
// every rank, online off) when the ranks' inputs differ or some rank's are missing; true when they
// agree or where nothing can check (a one-rank or id-less communicator, the check off, a multi-node
// communicator without a backend: said once). Logs one line when false (online/input_gate.cpp).
// profileDigest: the profile file's size and hash, "none", or why it could not be read (LoadedProfile).
bool ranksAgreeOnInputs(const Settings& s, const std::string& profileDigest, const CommShape& shape,
                        const NcclRules& rules);

// The key this communicator's epoch records are sealed under, which the input check just left in this
// thread (taken once, by the init thread, right after ranksAgreeOnInputs: startOnline may run on
// another); empty where the check left none (off, one rank), and startOnline keys by id and token.
std::string epochKeyAfterInputCheck(uint64_t commId);

// nullptr when neither online updates nor in-job verification run for this communicator (the reason
// is logged once). unverified: the candidates verification tests against NCCL's default; profile:
// its hardware is part of the scope verdicts are stored under, and its learned network is
// re-evaluated with the leader's recent timings (online/online_start.cpp).
// ncclVersionCode prices measurement (policy::MeasurementCost) unless DYNAMICCL_MEASUREMENT_COST names a calibration.
std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable,
                                        const policy::DecisionTable& unverified, const policy::Profile& profile,
                                        const Settings& settings, int ncclVersionCode, const std::string& epochKey);
// The leader stores its verdicts and publishes them through the backend by `by` (finalize's bound):
// what the backend did not take by then stays in this node's store (online/verdict_store.h).
void stopOnline(const std::shared_ptr<OnlineComm>& comm, coord::Deadline by);

}  // namespace dynamiccl::plugin
