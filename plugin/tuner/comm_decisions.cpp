#include "plugin/tuner/comm_decisions.h"

#include <chrono>

#include "plugin/log.h"
#include "plugin/online_contract.h"
#include "plugin/tuner/background_work.h"

namespace dynamiccl::plugin {

CommDecisions compileDecisions(const LoadedProfile& loaded, const CommShape& shape, const Settings& settings,
                               const NcclRules& rules) {
  policy::PolicyTable compiled = compileForShape(loaded, shape, settings, rules.versionCode);
  if (!compiled.refutedRules.empty() && firstTime(loaded.warnedRefuted)) logWarn("%s", compiled.refutedRules.c_str());
  // A WARN, as for refuted rules: NCCL_DEBUG=WARN shows why measured rules are left out (re-measure them).
  if (!compiled.otherReleaseRules.empty() && firstTime(loaded.warnedOtherRelease))
    logWarn("%s", compiled.otherReleaseRules.c_str());
  if (!compiled.learnedRulesOff.empty() && firstTime(loaded.warnedLearnedRulesOff))
    logWarn("%s", compiled.learnedRulesOff.c_str());
  if (!compiled.probeDisagrees.empty() && firstTime(loaded.warnedProbeDisagrees))
    logWarn("%s", compiled.probeDisagrees.c_str());
  if (loaded.settings.trust == policy::Trust::Verified && !compiled.unverified.empty() &&
      loaded.firstTimeSaid(compiled.unverifiedWhy))
    logInfo("%zu rule(s) unverified for this communicator keep NCCL's choices (%s); DYNAMICCL_TRUST=all applies them, "
            "in-job verification tests them",
            compiled.unverified.ruleCount(), compiled.unverifiedWhy.empty() ? "learned" : compiled.unverifiedWhy.c_str());
  CommDecisions out;
  out.table = std::move(compiled.table);
  out.unverified = std::move(compiled.unverified);
  return out;
}

void startOnlineFor(CommDecisions& d, const LoadedProfile& loaded, const CommSetup& setup) {
  if (!setup.inputs.agreed) {  // where the ranks' inputs differ, no rank of the communicator tunes
    d = CommDecisions{};
    return;
  }
  // Tuner v2-v4 give no commId: 0 would be every such communicator's, and another job's records
  // for it in a shared store would be adopted. No id, no online updates (the static table stands).
  if (setup.shape.commId == 0) return;
  d.online = startOnline(setup.shape, d.table, d.unverified, *loaded.profile, loaded.network, *setup.settings, setup.rules.versionCode,
                         setup.inputs.epochKey, setup.firstCall);
  if (!d.online) return;
  {
    std::lock_guard lock(d.online->mutex);
    d.online->metricsSource = {{setup.settings->metricsDir, setup.settings->slurmJobId}, setup.decisions, setup.shape, setup.rules.hostRules().name};
  }
  if (setup.rules.versionCode <= 0) return;
  try {  // the NCCL release verdicts were measured under
    d.online->verdictScope.ncclVersion = ncclVersionText(setup.rules.versionCode);
  } catch (...) {  // a started comm is never left running unowned
    stopOnline(d.online, std::chrono::steady_clock::now() + std::chrono::milliseconds(900));
    throw;
  }
}

namespace {

// Once the profile is parsed: the decisions compiled and online learning started, then ready.
void prepareWhenParsed(const std::shared_ptr<PendingDecisions>& pending,
                       const std::shared_ptr<const LoadedProfile>& loaded, CommSetup setup) {
  whenParsed(loaded, [pending, loaded, setup = std::move(setup)] {
    CommDecisions prepared;
    {
      std::lock_guard lock(pending->mutex);
      if (pending->abandoned) return;
    }
    try {
      prepared = compileDecisions(*loaded, setup.shape, *setup.settings, setup.rules);
      startOnlineFor(prepared, *loaded, setup);
    } catch (...) {  // NCCL's choices at the switch, said here if it can be; ready is set below whatever happens
      prepared = CommDecisions{};
      try {
        logWarn("communicator %016llx keeps NCCL's choices: preparing its tables failed",
                static_cast<unsigned long long>(setup.shape.commId));
      } catch (...) {
      }
    }
    std::lock_guard lock(pending->mutex);
    if (pending->abandoned) {
      stopOnline(prepared.online, std::chrono::steady_clock::now() + std::chrono::milliseconds(900));
      return;
    }
    pending->decisions = std::move(prepared);
    pending->ready.store(true, std::memory_order_release);
    pending->ready.notify_all();
  });
}

// What waits at the switch never waits for ever: NCCL's choices where nothing was prepared.
void readyWithNcclsChoices(PendingDecisions& pending) {
  std::lock_guard lock(pending.mutex);
  if (pending.abandoned) return;
  pending.decisions = CommDecisions{};
  pending.ready.store(true, std::memory_order_release);
  pending.ready.notify_all();
}

}  // namespace

std::shared_ptr<PendingDecisions> prepareWhenParsed(const std::shared_ptr<const LoadedProfile>& loaded,
                                                    CommSetup setup) {
  auto pending = std::make_shared<PendingDecisions>();
  prepareWhenParsed(pending, loaded, std::move(setup));
  return pending;
}

std::shared_ptr<PendingDecisions> prepareAfterInputCheck(const std::shared_ptr<const LoadedProfile>& loaded,
                                                         CommSetup setup) {
  auto pending = std::make_shared<PendingDecisions>();
  runInCheckPool([pending, loaded, setup = std::move(setup)]() mutable {
    // A communicator finalized while its check waited in the queue costs nothing more (a job that
    // makes and destroys communicators by the thousand queued them all ahead of the live ones).
    if (pending->stop.load(std::memory_order_relaxed)) return;
    try {
      setup.inputs = ranksAgreeOnInputs(*setup.settings, loaded->sourceDigest, setup.shape, setup.rules, &pending->stop);
      if (!setup.inputs.agreed) return readyWithNcclsChoices(*pending);
      prepareWhenParsed(pending, loaded, std::move(setup));
    } catch (...) {  // out of memory in the check: NCCL's choices, as on every rank that misses this one
      readyWithNcclsChoices(*pending);
    }
  });
  return pending;
}

void abandonPending(PendingDecisions& pending, coord::Deadline by) {
  std::shared_ptr<OnlineComm> online;
  {
    std::lock_guard lock(pending.mutex);
    pending.abandoned = true;
    pending.stop.store(true, std::memory_order_relaxed);
    online = std::move(pending.decisions.online);
  }
  stopOnline(online, by);
}

}  // namespace dynamiccl::plugin
