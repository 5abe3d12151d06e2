// The hot path's slow step at an epoch boundary: adopt the version every rank adopts (the leader's
// record, else a "frozen" record claimed in a store that answers), waiting for it as long as it takes.
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
// How often a rank waiting on a silent store says so, once the waits have doubled up to it.
constexpr int64_t kSayEvery_ms = 60000;
// A rank whose vote never comes in this many timeouts is taken for dead (its job hangs in NCCL's
// collective, which NCCL's watchdog sees, rather than in this wait): FROZEN is claimed without it.
// The guarantee against a store losing its data holds for cut-offs shorter than this.
constexpr int64_t kVotesWaitTimeouts = 10;

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

void adoptAtBoundary(OnlineComm& s, uint64_t boundary) {
  const auto start = Clock::now();
  bool answering = false;                      // the store answers "none yet" without a failure...
  Clock::time_point answeringSince{};          // ...since then
  bool failed = false;                         // a read failed during this wait
  Clock::time_point lastRead{};                // this wait's own reads: one per kNearBoundaryPoll at most
  Clock::time_point lastVote{};                // its "none" votes, at the same pace
  bool everyVote = false;                      // every rank's "none" vote is in (or a rank is taken for dead)
  bool logged = false;
  int64_t nextSay_ms = 1000;                   // a line after a second; past the timeout at 2, 4, ... s, then each minute
  for (int attempt = 0;; ++attempt) {
    const auto* r = s.staged.load(std::memory_order_acquire);
    if (r && r->boundary == boundary) return adopt(s, r);
    // A record this rank read ahead is adopted without the store (which may be dead or emptied since).
    if (auto held = heldRecord(s, boundary)) return adopt(s, stageRecord(s, boundary, *held));
    // The agent had no record ready: ask the backend ourselves (we wait anyway), as often as a rank
    // near its boundary polls, whatever the communicator's size.
    if (attempt > 0 && Clock::now() - lastRead >= kNearBoundaryPoll) {
      lastRead = Clock::now();
      auto rec = s.store->read(s.commId, boundary);
      if (rec.ok() && rec->has_value()) {
        holdRecord(s, boundary, **rec);
        return adopt(s, stageRecord(s, boundary, **rec));
      }
      if (!rec.ok()) failed = true, answering = false;
      else if (!answering) answering = true, answeringSince = Clock::now();
    }
    const auto now = Clock::now();
    const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    const int64_t timeout_ms = s.measured.load(std::memory_order_relaxed) || profilerRoleStarted()
                                   ? s.boundaryTimeout_ms
                                   : std::min(s.boundaryTimeout_ms, kUnmeasuredTimeout_ms);
    // FROZEN is claimed only once the store has answered for a whole timeout: a store back from an
    // outage (or restarted empty) gives the ranks holding this record time to re-publish it first.
    const int64_t answered_ms =
        answering ? std::chrono::duration_cast<std::chrono::milliseconds>(now - answeringSince).count() : 0;
    const bool mayVote = waited_ms >= timeout_ms && answering && (!failed || answered_ms >= timeout_ms);
    if (mayVote && Clock::now() - lastVote >= kNearBoundaryPoll) {
      lastVote = Clock::now();
      everyVote = everyRankVotedNone(s, boundary) || waited_ms >= kVotesWaitTimeouts * timeout_ms;
    }
    if (mayVote && everyVote) {
      // Claim the boundary for "frozen": the store keeps whichever record came first, and every
      // rank (leader included) adopts that one, so a late leader and a timed-out follower agree.
      const coord::PublishResult p = s.store->publish(s.commId, boundary, coord::kFrozenRecord);
      if (p == coord::PublishResult::Won) {
        holdRecord(s, boundary, coord::kFrozenRecord);
        return adopt(s, stageRecord(s, boundary, coord::kFrozenRecord));
      }
      if (p == coord::PublishResult::Lost) {
        auto rec = s.store->read(s.commId, boundary);
        if (rec.ok() && rec->has_value()) {
          holdRecord(s, boundary, **rec);
          return adopt(s, stageRecord(s, boundary, **rec));
        }
      }
    }
    // A store that does not answer is waited for, however long: this rank cannot know what the others
    // adopted at this boundary, and running a version of its own would split them (a hang in a real job).
    if (waited_ms >= nextSay_ms && (!logged || waited_ms >= timeout_ms)) {
      if (!logged)
        logInfo("online: waiting for the leader's version at boundary %llu of communicator %016llx (%s)",
                static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId),
                s.store->describe().c_str());
      else
        logWarn("online: still waiting at boundary %llu of communicator %016llx after %lld s: %s; every rank "
                "waits for the record the others adopt rather than run one of its own, and goes on once the store "
                "answers (fix the backend)",
                static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId),
                static_cast<long long>(waited_ms / 1000),
                !answering  ? "the store does not answer"
                : mayVote   ? "the store holds no record, and not every rank has voted to freeze"
                            : "the store answers but holds no record yet");
      logged = true;
      nextSay_ms = std::min(2 * nextSay_ms, waited_ms + kSayEvery_ms);
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
  while (s.publishedBoundary.load() < boundary && !staged()) {
    if (Clock::now() - start > std::chrono::milliseconds(s.boundaryTimeout_ms)) {
      logWarn("online: leader could not publish boundary %llu of communicator %016llx yet; every rank waits there "
              "for its record, or for the FROZEN one a rank claims once the store answers",
              static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId));
      return;
    }
    wakeEpochAgent();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace dynamiccl::plugin
