// Online updates of one communicator: the table version in force (swapped only at epoch
// boundaries, by the hot path itself) and what the epoch agent prepared for the next boundary. The
// record the tuner and online rooms share: the tuner's hot path steps it, online/ prepares it.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coord/coord.h"
#include "plugin/decision_log.h"
#include "plugin/metrics/metrics_file.h"
#include "abi/abi.h"
#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {

// Where in-job verification's verdicts are stored and read (online/verdict_store.h).
struct VerdictScope {
  std::string fingerprint;  // the communicator's hardware (clusterHardwareToJson); "" when not known
  std::string ncclVersion;
  int nRanks = 0, nNodes = 0;
  std::string dbPath;       // "" : the store's per-host default
  bool record = true;       // DYNAMICCL_RECORD=0: read nothing, write nothing
  // The coordination backend the verdicts also travel through (online/verdict_record.h), raw (not
  // sealed: the next job holds another key).
  std::shared_ptr<coord::RecordStore> backend;
};

// What a boundary's record says, parsed once (the same bytes give the same result on every rank).
struct StagedRecord {
  uint64_t boundary = 0;
  const learner::OnlineTable* table = nullptr;
  bool frozen = false;
};

struct OnlineComm {
  uint64_t commId = 0;
  uint64_t epochCalls = 1000;
  int64_t boundaryTimeout_ms = 60000;
  std::shared_ptr<coord::RecordStore> store;

  // The communicator's call from which online decides (NCCL's choices before it: a profile parsed, or
  // the ranks' input check run, off NCCL's init path); epochs stay numbered from the communicator's
  // call 0, so every rank's boundaries are the job's. The first boundary is the first one after it.
  uint64_t firstCall = 0;
  uint64_t firstBoundary() const { return (firstCall / epochCalls + 1) * epochCalls; }

  // Hot-path thread only (NCCL calls one communicator's tuner from one thread at a time).
  uint64_t callIndex = 0;
  bool frozen = false;  // a frozen record was adopted (or the version kept, below): this version stays for good
  std::atomic<const learner::OnlineTable*> current{nullptr};  // nullptr: the static table answers
  // Before the first published table: the share of calls the leader measures (its cost priced).
  uint32_t initialMeasureThreshold = learner::kMeasureEveryCall;

  // Prepared by the epoch agent, consumed at the boundary.
  std::atomic<uint64_t> callsSeen{0};
  std::atomic<uint64_t> stagedBoundary{0};
  std::atomic<const StagedRecord*> staged{nullptr};
  std::atomic<uint64_t> publishedBoundary{0};  // leader: highest boundary whose record exists
  // The leader's wait for its own publish before a boundary (its start, steady-clock ns): part of that
  // boundary's one bounded wait. Written by the hot path, read by the agent, whose publish of that
  // boundary must land with kOthersReadShare of the bound left, or is given up (publishAbandoned).
  std::atomic<uint64_t> publishWaitBoundary{0};
  std::atomic<int64_t> publishWaitStart_ns{0};
  std::atomic<uint64_t> publishAbandoned{0};
  std::atomic<bool> isLeader{false};           // the profiler saw rank 0 of this commId here
  // FROZEN is claimed only once every rank voted "none" at the boundary (a set in the store), so a
  // store that lost the leader's table while a rank holding it was cut off cannot split the ranks.
  int nRanks = 1;
  std::string voter;                           // this rank's name in a boundary's vote set: random
  std::atomic<uint64_t> votedNone{0};          // the first boundary this rank voted "none" at
  std::mutex publishMutex;                     // the leader's publish against its own vote
  // The boundary where this rank kept its version for good without a record (the store silent for
  // the whole bound): its agent claims FROZEN there once the store answers, so that a rank reaching it
  // later adopts what this one runs. 0: none.
  std::atomic<uint64_t> keptAt{0};
  std::atomic<bool> measured{false};           // the profiler saw any rank of this commId here
  std::array<std::atomic<uint8_t>, learner::kOnlineKeys> ncclDefault{};  // 1 + algo*3 + proto; 0 unknown
  // NCCL's cost table per key, captured at the key's first call (the learner's prior per arm).
  std::array<std::array<std::atomic<float>, kNumAlgos * kNumProtos>, learner::kOnlineKeys> modelled_us{};
  std::array<std::atomic<bool>, learner::kOnlineKeys> modelledKnown{};
  // Calls per key so far, measured or not: what a search must repay its measurement over.
  std::array<std::atomic<uint64_t>, learner::kOnlineKeys> keyCalls{};
  // Each key's share of calls measured is its own, but NCCL reads the mask before the tuner sees the
  // call: the leader predicts the next call's key from the last two keys that followed this one (a
  // training loop repeats its sequence; A A A B gives A two successors) and measures at the larger of
  // their shares. 1 + key; 0 unknown. Written by the hot path alone.
  std::array<std::atomic<uint16_t>, learner::kOnlineKeys> nextKey{}, nextKey2{};
  std::atomic<uint32_t> lastKey{learner::kOnlineKeys};

  // Agent side, under mutex: the learner (leader) and every table a version may still point to.
  std::mutex mutex;
  std::unique_ptr<learner::OnlineLearner> learner;
  std::vector<std::unique_ptr<learner::OnlineTable>> tables;
  std::vector<std::unique_ptr<StagedRecord>> records;
  // Every boundary's record this rank has read (bytes as opened), ahead of its own position too: a
  // rank adopts a held record without the store and re-publishes them into a store that lost them.
  std::map<uint64_t, std::string> held;
  bool saidMeasuringStopped = false;
  // The agent's own: when it last read ahead, and whether a store that lost records awaits ours.
  std::chrono::steady_clock::time_point lastReadAhead{};
  bool republishing = false;
  bool catchingUp = false;  // its last read-ahead found every boundary it asked for: the next one comes soon
  bool keptClaimed = false;  // FROZEN (or the record found there) settled where this rank kept its version
  // What the store held that this rank did not write or adopt, by cause: said at the first, counted
  // after, and the count said when the communicator ends (a store answering every poll with it must
  // not flood the log). Shared with the sealed store's callback.
  std::shared_ptr<std::atomic<uint64_t>> foreignRecords = std::make_shared<std::atomic<uint64_t>>(0);
  std::atomic<uint64_t> otherRecords{0};

  // The metrics file (plugin/metrics/metrics_file.h), set under mutex before the agent reads it: its
  // directory (empty: none), what the snapshot reads beside this state; agent side, its last write.
  struct MetricsSource {
    MetricsTarget target;
    std::shared_ptr<const DecisionLog> decisions;
    CommShape shape;
    std::string library;
  } metricsSource;
  std::chrono::steady_clock::time_point metricsAt{};
  bool metricsWritten = false;

  // In-job verification: unverified candidates are tested; verdicts are stored at finalize.
  bool verifying = false;
  VerdictScope verdictScope;
};

// Slow paths of the hot path (online/boundary_wait.cpp); each runs at most once per epoch.
void adoptAtBoundary(OnlineComm& s, uint64_t boundary);
void ensurePublished(OnlineComm& s, uint64_t boundary);

// Whether the leader profiles call k: what the table in force says for the key predicted to come
// (a key it cannot predict: the table's share; before any table, the initial share).
inline bool measuresCall(const OnlineComm& s, uint64_t k) {
  const learner::OnlineTable* t = s.current.load(std::memory_order_relaxed);
  if (!t) return learner::measuredCall(s.commId, k, 0, s.initialMeasureThreshold);
  const uint32_t last = s.lastKey.load(std::memory_order_relaxed);
  const uint16_t next = last < learner::kOnlineKeys ? s.nextKey[last].load(std::memory_order_relaxed) : 0;
  const uint16_t other = last < learner::kOnlineKeys ? s.nextKey2[last].load(std::memory_order_relaxed) : 0;
  const uint32_t share = std::max(t->measureThresholdOf(next ? next - 1u : learner::kOnlineKeys),
                                  other ? t->measureThresholdOf(other - 1u) : 0u);
  return learner::measuredCall(s.commId, k, t->version(), share);
}

// The hot path's online step: counts the call, crosses a boundary when due, then picks.
// nullptr: the static table answers this call.
inline const policy::Candidates* onlinePick(OnlineComm& s, int coll, uint64_t nBytes, const float* costTable,
                                            abi::PickRule rule) {
  const uint64_t k = s.callIndex++;
  s.callsSeen.store(k + 1, std::memory_order_relaxed);
  if (!s.frozen) {
    if (k > s.firstCall && k % s.epochCalls == 0) [[unlikely]]
      adoptAtBoundary(s, k);
    if ((k + 1) % s.epochCalls == 0 && s.isLeader.load(std::memory_order_relaxed)) [[unlikely]]
      ensurePublished(s, k + 1);  // before this, the last call of the epoch, is enqueued
  }
  const uint32_t key = learner::onlineKey(coll, nBytes);
  s.keyCalls[key].store(s.keyCalls[key].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  if (const uint32_t last = s.lastKey.load(std::memory_order_relaxed); last < learner::kOnlineKeys) {
    const uint16_t seen = s.nextKey[last].load(std::memory_order_relaxed);
    if (seen != key + 1) {
      s.nextKey2[last].store(seen, std::memory_order_relaxed);
      s.nextKey[last].store(static_cast<uint16_t>(key + 1), std::memory_order_relaxed);
    }
  }
  s.lastKey.store(key, std::memory_order_relaxed);
  if (costTable) {  // NCCL's own choice (the guard's reference)
    if (!s.modelledKnown[key].load(std::memory_order_relaxed)) [[unlikely]] {
      for (int i = 0; i < kNumAlgos * kNumProtos; ++i) s.modelled_us[key][i].store(costTable[i], std::memory_order_relaxed);
      s.modelledKnown[key].store(true, std::memory_order_release);
    }
    s.ncclDefault[key].store(static_cast<uint8_t>(abi::ncclChoice(costTable, rule) + 1), std::memory_order_relaxed);
  }
  const learner::OnlineTable* t = s.current.load(std::memory_order_relaxed);
  return t ? t->pick(coll, nBytes, s.commId, k) : nullptr;
}

}  // namespace dynamiccl::plugin
