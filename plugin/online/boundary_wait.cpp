// The hot path's slow step at an epoch boundary: adopt the version every rank adopts (the leader's
// record, else a "frozen" record claimed in a store that answers), waiting for it at most
// DYNAMICCL_EPOCH_TIMEOUT_MS, once: past it the rank keeps its version for good.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "plugin/context_registry.h"
#include "plugin/log.h"
#include "plugin/online/epoch_agent.h"

namespace dynamiccl::plugin {
namespace {

using Clock = std::chrono::steady_clock;

void adopt(OnlineComm& s, const StagedRecord* r) {
  if (r->frozen) {
    s.frozen = true;
    logWarn("online: communicator %016llx froze at boundary %llu (leader's version missing or unreadable); "
            "every rank adopts the same record and keeps its current version",
            static_cast<unsigned long long>(s.commId), static_cast<unsigned long long>(r->boundary));
    return;
  }
  s.current.store(r->table, std::memory_order_release);
}

}  // namespace

// In a process where NCCL never started the profiler role (and no observation of this communicator
// arrived) there is no reason to expect a leader: wait this long, not the full timeout, before
// claiming "frozen".
constexpr int64_t kUnmeasuredTimeout_ms = 200;
// A boundary's wait is one bound, DYNAMICCL_EPOCH_TIMEOUT_MS, paid once per fault: the store must have
// answered "no record" for this share of it before a rank votes "none" (a store back from an outage
// gives the ranks holding the record time to re-publish it first), and FROZEN is claimed without the
// votes still missing (a dead rank's) from this share on. Past the bound a rank keeps its version.
constexpr double kVoteAfter = 0.5, kClaimWithoutEveryVoteAfter = 0.75;

// This rank's "none" vote at the boundary (again each poll: a store that lost its data lost the
// votes too); true once every rank's is in. The leader publishes no table from here on.
bool everyRankVotedNone(OnlineComm& s, uint64_t boundary) {
  {
    std::lock_guard lock(s.publishMutex);
    if (uint64_t voted = s.votedNone.load(); voted == 0 || voted > boundary) s.votedNone.store(boundary);
  }
  auto votes = s.store->joinSet(s.commId, "none-" + std::to_string(boundary), "v", s.voter, "");
  return votes.ok() && votes->all >= static_cast<uint64_t>(s.nRanks);
}

// The bound passed without a record: this rank keeps the version it runs, for good (no boundary is
// crossed again, so the fault costs the bound once), publishes nothing from here (a leader), and its
// agent claims FROZEN here once the store answers, so a rank reaching this boundary later runs what
// this one runs. Ranks that read the boundary's table before the store went adopt it: where ranks may
// differ (docs/ONLINE.md, "When the leader is late, dead or the backend slow").
// A leader keeps too when its own publish lands as the bound ends: the followers, who reached the
// boundary about when the leader began waiting for that publish, are as likely to have kept theirs.
void keepVersion(OnlineComm& s, uint64_t boundary, int64_t waited_ms, bool answering) {
  {
    std::lock_guard lock(s.publishMutex);  // a publish in flight ends first: none starts after the vote
    if (uint64_t voted = s.votedNone.load(); voted == 0 || voted > boundary) s.votedNone.store(boundary);
  }
  s.keptAt.store(boundary);
  s.frozen = true;
  logWarn("online: communicator %016llx keeps its current version for good from boundary %llu: no record there within "
          "%lld ms (DYNAMICCL_EPOCH_TIMEOUT_MS; %s); it records FROZEN there once the store answers, so every rank "
          "runs this version (a rank that read the boundary's table before the store went runs that one)",
          static_cast<unsigned long long>(s.commId), static_cast<unsigned long long>(boundary),
          static_cast<long long>(waited_ms),
          answering ? "the store answers but could not settle the boundary" : "the store does not answer");
  wakeEpochAgent();
}

void adoptAtBoundary(OnlineComm& s, uint64_t boundary) {
  // The leader's wait for its own publish of this boundary counts against the same bound.
  const auto start = s.publishWaitBoundary.load() == boundary
                         ? Clock::time_point(std::chrono::nanoseconds(s.publishWaitStart_ns.load()))
                         : Clock::now();
  const int64_t timeout_ms = s.measured.load(std::memory_order_relaxed) || profilerRoleStarted()
                                 ? s.boundaryTimeout_ms
                                 : std::min(s.boundaryTimeout_ms, kUnmeasuredTimeout_ms);
  // The same end as the followers', who reached the boundary about when the leader began that wait: a
  // leader reading on past it could adopt a table that landed after they kept their version.
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  bool answering = false;                      // the store answers "none yet" without a failure...
  Clock::time_point answeringSince{};          // ...since then
  Clock::time_point lastRead{};                // this wait's own reads: one per kNearBoundaryPoll at most
  Clock::time_point lastVote{};                // its "none" votes, at the same pace
  bool everyVote = false;                      // every rank's "none" vote is in
  bool logged = false;
  for (int attempt = 0;; ++attempt) {
    const auto* r = s.staged.load(std::memory_order_acquire);
    if (r && r->boundary == boundary) return adopt(s, r);
    // A record this rank read ahead is adopted without the store (which may be dead or emptied since).
    if (auto held = heldRecord(s, boundary)) return adopt(s, stageRecord(s, boundary, *held));
    // The agent had no record ready: ask the backend ourselves (we wait anyway), as often as a rank
    // near its boundary polls, whatever the communicator's size; no request outlives the bound.
    if (attempt > 0 && Clock::now() - lastRead >= kNearBoundaryPoll) {
      lastRead = Clock::now();
      auto rec = s.store->readMany(s.commId, {boundary}, 0, deadline);
      if (rec.ok() && rec->size() == 1 && (*rec)[0]) {
        holdRecord(s, boundary, *(*rec)[0]);
        return adopt(s, stageRecord(s, boundary, *(*rec)[0]));
      }
      if (!rec.ok()) answering = false;
      else if (!answering) answering = true, answeringSince = Clock::now();
    }
    const auto now = Clock::now();
    const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    // A vote, and FROZEN, only once the store has answered "no record" for a share of the bound, no failure between.
    const int64_t answered_ms =
        answering ? std::chrono::duration_cast<std::chrono::milliseconds>(now - answeringSince).count() : 0;
    const bool mayVote = answering && answered_ms >= kVoteAfter * static_cast<double>(timeout_ms);
    if (mayVote && now - lastVote >= kNearBoundaryPoll) {
      lastVote = now;
      everyVote = everyRankVotedNone(s, boundary);
    }
    if (mayVote && (everyVote || waited_ms >= kClaimWithoutEveryVoteAfter * static_cast<double>(timeout_ms))) {
      // Claim the boundary for "frozen": the store keeps whichever record came first, and every
      // rank (leader included) adopts that one, so a late leader and a timed-out follower agree. A
      // rank whose vote is still missing this late is taken for dead.
      const coord::PublishResult p = s.store->publishBy(s.commId, boundary, coord::kFrozenRecord, deadline);
      if (p == coord::PublishResult::Won) {
        holdRecord(s, boundary, coord::kFrozenRecord);
        return adopt(s, stageRecord(s, boundary, coord::kFrozenRecord));
      }
      if (p == coord::PublishResult::Lost) {
        auto rec = s.store->readMany(s.commId, {boundary}, 0, deadline);
        if (rec.ok() && rec->size() == 1 && (*rec)[0]) {
          holdRecord(s, boundary, *(*rec)[0]);
          return adopt(s, stageRecord(s, boundary, *(*rec)[0]));
        }
      }
    }
    if (now >= deadline) return keepVersion(s, boundary, waited_ms, answering);
    if (waited_ms >= 1000 && !logged) {
      logged = true;
      logInfo("online: waiting for the leader's version at boundary %llu of communicator %016llx (%s), at most %lld ms",
              static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId),
              s.store->describe().c_str(), static_cast<long long>(timeout_ms));
    }
    wakeEpochAgent();
    std::this_thread::sleep_for(std::chrono::microseconds(attempt < 20 ? 50 : 1000));
  }
}

// Done once the leader published the boundary, or its agent already staged a record for it (one was
// there first, read ahead: a FROZEN claim or one not sealed under this job's key).
void ensurePublished(OnlineComm& s, uint64_t boundary) {
  const auto start = Clock::now();
  const auto staged = [&] {
    const StagedRecord* r = s.staged.load(std::memory_order_acquire);
    return r && r->boundary >= boundary;
  };
  // This wait and the boundary's own share one bound; the start first: the agent reads it once it sees the boundary.
  s.publishWaitStart_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count());
  s.publishWaitBoundary.store(boundary);
  while (s.publishedBoundary.load() < boundary && !staged()) {
    if (s.publishAbandoned.load() == boundary) return;  // the agent said why; the boundary waits what is left
    if (Clock::now() - start > std::chrono::milliseconds(s.boundaryTimeout_ms)) {
      logInfo("online: leader could not publish boundary %llu of communicator %016llx within %lld ms; the boundary "
              "gets what is left of that bound",
              static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId),
              static_cast<long long>(s.boundaryTimeout_ms));
      return;
    }
    wakeEpochAgent();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace dynamiccl::plugin
