// What one communicator decides with: the tables its profile compiles to for its shape, and its
// online state. Prepared at init, or, for a profile parsed off NCCL's init path, once the parse ends;
// the hot path switches to them at the profile's first call (LoadedProfile::firstCall).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "features/features.h"
#include "plugin/nccl_version.h"
#include "plugin/online_comm.h"
#include "plugin/online_contract.h"
#include "plugin/settings/settings.h"
#include "plugin/tuner/profile_source.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

struct CommDecisions {
  policy::DecisionTable table;       // what the hot path reads: the rules that apply under DYNAMICCL_TRUST
  policy::DecisionTable unverified;  // candidates for in-job verification; never read on the hot path
  std::shared_ptr<OnlineComm> online;  // nullptr when off: the static table alone answers
};

// What init learned of the communicator that the preparation needs.
struct CommSetup {
  CommShape shape;
  std::shared_ptr<const Settings> settings;
  NcclRules rules;
  InputsOutcome inputs;  // the ranks' input check (not agreed: NCCL's choices, nothing prepared)
  uint64_t firstCall = 0;  // the call the communicator decides from (NCCL's choices before it)
  std::shared_ptr<const DecisionLog> decisions;  // the context's, for the metrics file
};

// The parsed profile's tables for the shape, logging once why rules stand aside. Init (before the
// ranks' input check, as the check needs nothing of it), or the thread that parsed the profile.
CommDecisions compileDecisions(const LoadedProfile& loaded, const CommShape& shape, const Settings& settings,
                               const NcclRules& rules);
// After the input check: no tables where the ranks disagree; online learning started where it runs.
void startOnlineFor(CommDecisions& d, const LoadedProfile& loaded, const CommSetup& setup);

// A communicator's decisions prepared while its hot path runs NCCL's choices, shared by init, the
// parsing thread, the hot path (once, at the switch) and finalize.
struct PendingDecisions {
  std::mutex mutex;         // the parsing thread against finalize; never taken on the hot path
  bool abandoned = false;   // finalize came first: nothing is prepared, or what was is stopped
  std::atomic<bool> stop{false};  // abandoned, read without the mutex by an input check waiting on its store
  CommDecisions decisions;  // final once ready
  std::atomic<bool> ready{false};
};

// Prepares the decisions now if the profile is parsed, else once it is (in the parsing thread).
std::shared_ptr<PendingDecisions> prepareWhenParsed(const std::shared_ptr<const LoadedProfile>& loaded,
                                                    CommSetup setup);
// The ranks' input check through the store, in the check pool, then the preparation (once the
// profile is parsed); NCCL's choices at the switch where the ranks do not agree.
std::shared_ptr<PendingDecisions> prepareAfterInputCheck(const std::shared_ptr<const LoadedProfile>& loaded,
                                                         CommSetup setup);
// Finalize before the switch: whatever was or will be prepared is stopped by `by`.
void abandonPending(PendingDecisions& pending, coord::Deadline by);

}  // namespace dynamiccl::plugin
