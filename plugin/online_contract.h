// What a communicator's tuner init and finalize call of the online room (defined in online/): the
// ranks' input check, and the start and stop of online learning. Init/finalize only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "features/features.h"
#include "plugin/learned_network.h"
#include "plugin/nccl_version.h"
#include "plugin/online_comm.h"
#include "plugin/settings/settings.h"
#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {

// The call from which a communicator whose inputs are checked through a store decides (NCCL's choices
// before it, on every rank alike): its check runs meanwhile, off NCCL's init path, and a rank whose
// check has not ended by then waits in that call, as at an epoch boundary. Small, as the job's first
// epoch is what the learner starts from: 8 ranks check in about 2 ms, 64 calls about as long; 1,024
// threads on one 2-core machine took 4-8 s, which NCCL's own init at that size is of the order of.
inline constexpr uint64_t kCheckedFirstCall = 64;

// Whether this communicator's ranks check their inputs through a store (the check on, more than one
// rank, an id, a backend): then the check runs off NCCL's init path and the communicator decides with
// NCCL's choices until kCheckedFirstCall, on every rank alike.
bool inputsCheckedThroughStore(const Settings& s, const CommShape& shape);

// What the input check leaves a communicator: may its ranks act on their profile and learn online
// (false: NCCL's choices on every rank, online off, when the ranks' inputs differ or some rank's are
// missing; true when they agree or where nothing can check: a one-rank or id-less communicator, the
// check off, a multi-node communicator without a backend, said once), and the key its epoch records
// are sealed under (empty where the check left none, and startOnline keys by id and token).
struct InputsOutcome {
  bool agreed = false;
  std::string epochKey;
};
// Logs one line when not agreed (inputs/input_gate.cpp). profileDigest: the profile file's size and
// hash, "none", or why it could not be read (LoadedProfile). stop: set when the communicator is
// finalized first (a rank waiting on a silent store then gives up: nothing it decides runs).
InputsOutcome ranksAgreeOnInputs(const Settings& s, const std::string& profileDigest, const CommShape& shape,
                                 const NcclRules& rules, const std::atomic<bool>* stop = nullptr);

// nullptr when neither online updates nor in-job verification run for this communicator (the reason
// is logged once). unverified: the candidates verification tests against NCCL's default; profile:
// its hardware is part of the scope verdicts are stored under; network: its learned network (or
// nullptr), re-evaluated with the leader's recent timings (online/online_start.cpp).
// firstCall: the communicator's call from which it decides (OnlineComm::firstCall).
// ncclVersionCode prices measurement (learner::MeasurementCost) unless DYNAMICCL_MEASUREMENT_COST names a calibration.
std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable,
                                        const policy::DecisionTable& unverified, const policy::Profile& profile,
                                        const NetworkPtr& network,
                                        const Settings& settings, int ncclVersionCode, const std::string& epochKey,
                                        uint64_t firstCall);
// The leader stores its verdicts and publishes them through the backend by `by` (finalize's bound):
// what the backend did not take by then stays in this node's store (online/verdict_store.h).
void stopOnline(const std::shared_ptr<OnlineComm>& comm, coord::Deadline by);

}  // namespace dynamiccl::plugin
