#include "plugin/online/epoch_agent.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "plugin/log.h"
#include "plugin/metrics/comm_metrics.h"
#include "plugin/metrics/metrics_file.h"
#include "plugin/observation.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {
namespace {

class Agent {
 public:
  static Agent& instance() {
    static auto* a = new Agent();  // never destroyed: NCCL may finalize after exit handlers
    return *a;
  }

  void add(std::shared_ptr<OnlineComm> c) {
    std::unique_lock lock(mutex_);
    comms_.push_back(std::move(c));
    if (!thread_.joinable()) {
      stop_ = false;
      abort_ = std::make_shared<std::atomic<bool>>(false);
      thread_ = std::thread([this, abort = abort_] {
        const coord::AbortScope scope(abort.get());  // its backend requests end once finalize stops it
        loop();
      });
      lock.unlock();
      sinkId_ = registerObservationSink([this](const Observation* o, size_t n) { consume(o, n); });
    }
  }

  void remove(const std::shared_ptr<OnlineComm>& c) {
    std::thread toJoin;
    int sink = -1;
    {
      std::lock_guard lock(mutex_);
      std::erase(comms_, c);
      if (comms_.empty() && thread_.joinable()) {
        stop_ = true;
        abort_->store(true);  // a request to a silent etcd would hold finalize for its whole timeout
        toJoin = std::move(thread_);
        sink = sinkId_;
      }
    }
    cv_.notify_all();
    if (toJoin.joinable()) toJoin.join();
    if (sink >= 0) unregisterObservationSink(sink);  // outside mutex_: the sink takes it
  }

  void wake() { cv_.notify_all(); }

 private:
  void consume(const Observation* o, size_t n) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < n; ++i) {
      // A call NCCL ran without asking the tuner (a CUDA-graph replay) is no arm's evidence: its timing
      // is a graph's, and no epoch chose it.
      if (o[i].join == DecisionJoin::NotAsked) continue;
      for (auto& c : comms_) {
        if (c->commId != o[i].commId) continue;
        c->measured.store(true, std::memory_order_relaxed);
        if (o[i].rank == 0) c->isLeader.store(true, std::memory_order_relaxed);
        if (!c->isLeader.load(std::memory_order_relaxed)) continue;
        // From v4 a call's latency is its channels' GPU time; a row without it (a stop that never
        // came) carries only its enqueue time, about 1 us however long the call ran: no arm's evidence.
        if (!o[i].gpuTiming && o[i].profilerVersion >= 4) continue;
        const double latency_us = o[i].gpuTiming ? o[i].gpu_us : o[i].cpu_us;
        std::lock_guard comm(c->mutex);
        // The channels that ran (v4+; before, the profiler names only the most it may use) and those the
        // call's decision asked for (unknown where the call was not joined to it at its start).
        const int ran = o[i].profilerVersion >= 4 ? o[i].nChannels : 0;
        const int asked = o[i].join == DecisionJoin::Joined
                              ? DecisionLog::unpack(o[i].decisionPacked, o[i].seq, o[i].bytes, o[i].decisionChunkBytes).nChannels
                              : -1;
        if (c->learner)
          c->learner->observe(static_cast<int>(o[i].coll), o[i].bytes, o[i].algo, o[i].proto, ran, latency_us, asked);
      }
    }
  }

  void loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      std::vector<std::shared_ptr<OnlineComm>> comms = comms_;
      lock.unlock();
      for (auto& c : comms) tick(*c);
      lock.lock();
      cv_.wait_for(lock, std::chrono::microseconds(500));
    }
  }

  static void tick(OnlineComm& c) {
    noteMetricsWhenDue(c);
    const uint64_t E = c.epochCalls, calls = c.callsSeen.load(std::memory_order_relaxed);
    bool haveStaged = false, stagedFrozen = false;
    uint64_t stagedBoundary = 0;
    {
      std::lock_guard lock(c.mutex);  // reclaim() frees records under this mutex
      if (const StagedRecord* staged = c.staged.load(std::memory_order_acquire)) {
        haveStaged = true;
        stagedFrozen = staged->frozen;
        stagedBoundary = staged->boundary;
      }
    }
    // A frozen rank still watches the store: a straggler may need the records it holds re-published.
    if (stagedFrozen) return readAhead(c, calls, 0);
    if (c.keptAt.load() != 0) return claimWhereKept(c, calls);
    const uint64_t first = c.firstBoundary();
    const uint64_t upcoming = std::max(first, (calls + E - 1) / E * E);
    // The boundary the hot path is at or heading to (callsSeen is bumped before it waits at one).
    const uint64_t pending = calls <= c.firstCall ? first : std::max(first, (calls - 1 + E - 1) / E * E);
    if (c.isLeader.load(std::memory_order_relaxed)) publish(c, pending, calls);
    if (auto rec = followAhead(c, calls, upcoming, haveStaged && stagedBoundary >= upcoming))
      stageRecord(c, upcoming, *rec);
  }

  // The metrics file, every kMetricsInterval from the communicator's start (finalize writes its last).
  static void noteMetricsWhenDue(OnlineComm& c) {
    const auto now = std::chrono::steady_clock::now();
    if (c.metricsWritten && now - c.metricsAt < kMetricsInterval) return;
    OnlineComm::MetricsSource source;
    {
      std::lock_guard lock(c.mutex);
      if (!c.metricsSource.decisions) return;  // not set up yet
      source = c.metricsSource;
    }
    c.metricsAt = now;
    c.metricsWritten = true;
    if (!source.target.dir.empty()) noteMetrics(source.target, snapshotMetrics(source.shape, *source.decisions, source.library, &c));
  }

  // A rank that kept its version where the store gave it no record claims FROZEN there once the store
  // answers (at the near-boundary pace), so a rank reaching that boundary later runs the same version.
  // The store holding the leader's table there instead is said in one line: ranks that read it run it.
  static void claimWhereKept(OnlineComm& c, uint64_t calls) {
    const uint64_t at = c.keptAt.load();
    if (c.keptClaimed) return readAhead(c, calls, 0);
    const auto now = std::chrono::steady_clock::now();
    if (now < c.lastReadAhead + kNearBoundaryPoll) return;
    c.lastReadAhead = now;
    const coord::PublishResult p = c.store->publish(c.commId, at, coord::kFrozenRecord);
    if (p == coord::PublishResult::Failed) return;
    if (p == coord::PublishResult::Won) {
      c.keptClaimed = true;
      holdRecord(c, at, coord::kFrozenRecord);
      return;
    }
    auto there = c.store->read(c.commId, at);
    if (!there.ok() || !there->has_value()) return;
    c.keptClaimed = true;
    holdRecord(c, at, **there);
    if (**there != coord::kFrozenRecord && c.otherRecords.fetch_add(1, std::memory_order_relaxed) == 0)
      logWarn("online: %s holds a version at boundary %llu of communicator %016llx that this rank did not adopt (it "
              "kept its own when the store did not answer in time): a rank that read it runs another version",
              c.store->describe().c_str(), static_cast<unsigned long long>(at),
              static_cast<unsigned long long>(c.commId));
  }

  // One line when a settled job's gain no longer repays re-testing: it stops measuring (comm mutex held).
  static void sayWhenMeasuringStops(OnlineComm& c, const learner::MeasurementPlan& plan) {
    if (plan.stopped == c.saidMeasuringStopped) return;
    c.saidMeasuringStopped = plan.stopped;
    if (plan.stopped)
      logInfo("communicator %016llx stops measuring: its search settled and what it gained over NCCL's choices "
              "(%.2f%% of collective time) does not repay re-testing; none of its calls is profiled until a search would repay it",
              static_cast<unsigned long long>(c.commId), 100 * plan.gainShare);
  }

  // A leader that learnt its role late still publishes the boundary it waits at; a record that
  // exists already (frozen by a follower, or ours) is simply kept: the store is write-once.
  static void publish(OnlineComm& c, uint64_t pending, uint64_t calls) {
    const uint64_t E = c.epochCalls;
    const uint64_t next = std::max(c.publishedBoundary.load() + E, pending);
    if (calls + E / 2 < next) return;  // publish halfway through the epoch before the boundary
    if (pastPublishCutoff(c, next)) return giveUpPublishing(c, next);
    std::string bytes;
    {
      std::lock_guard lock(c.mutex);
      if (!c.learner) return;
      for (uint32_t k = 0; k < learner::kOnlineKeys; ++k) {
        const int coll = static_cast<int>(k / SizeBucket::kCount), bucket = static_cast<int>(k % SizeBucket::kCount);
        if (const uint8_t d = c.ncclDefault[k].load(std::memory_order_relaxed))
          c.learner->setNcclDefault(coll, bucket, static_cast<Algo>((d - 1) / kNumProtos),
                                    static_cast<Proto>((d - 1) % kNumProtos));
        if (const uint64_t calls = c.keyCalls[k].load(std::memory_order_relaxed))
          c.learner->setCallsSoFar(coll, bucket, calls);
        if (c.modelledKnown[k].load(std::memory_order_acquire)) {
          float table[kNumAlgos * kNumProtos];
          for (int i = 0; i < kNumAlgos * kNumProtos; ++i) table[i] = c.modelled_us[k][i].load(std::memory_order_relaxed);
          c.learner->setModelledCost(coll, bucket, table);
        }
      }
      bytes = c.learner->build(next / E)->serialize();
      sayWhenMeasuringStops(c, c.learner->measurementPlan());
    }
    // Never a boundary this rank voted "none" at, nor a later one: its FROZEN needs that vote alone.
    std::lock_guard lock(c.publishMutex);
    if (const uint64_t voted = c.votedNone.load(); voted != 0 && voted <= next) return;
    const coord::PublishResult r = c.store->publishBy(c.commId, next, bytes, publishDeadline(c, next));
    if (r != coord::PublishResult::Failed) c.publishedBoundary.store(next);
    else if (pastPublishCutoff(c, next)) giveUpPublishing(c, next);
  }

  // The leader's hot path already waits at `next`: its record must land while the other ranks, who
  // reached the boundary about when it did, still have a share of the bound to read it.
  static coord::Deadline publishDeadline(const OnlineComm& c, uint64_t next) {
    if (c.publishWaitBoundary.load() != next) return coord::kNoDeadline;
    const auto start = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(c.publishWaitStart_ns.load()));
    return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::milliseconds(c.boundaryTimeout_ms) * (1.0 - kOthersReadShare));
  }
  static bool pastPublishCutoff(const OnlineComm& c, uint64_t next) {
    return std::chrono::steady_clock::now() >= publishDeadline(c, next);  // kNoDeadline: never
  }
  static void giveUpPublishing(OnlineComm& c, uint64_t next) {
    if (c.publishAbandoned.exchange(next) == next) return;
    logInfo("online: leader gives up publishing boundary %llu of communicator %016llx: the store did not take its "
            "record while the other ranks had time left to read it; no rank adopts a table there",
            static_cast<unsigned long long>(next), static_cast<unsigned long long>(c.commId));
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<OnlineComm>> comms_;
  std::thread thread_;
  std::shared_ptr<std::atomic<bool>> abort_;  // the running thread's: set when it is stopped
  bool stop_ = false;
  int sinkId_ = -1;
};

}  // namespace

void addToEpochAgent(std::shared_ptr<OnlineComm> comm) { Agent::instance().add(std::move(comm)); }
void removeFromEpochAgent(const std::shared_ptr<OnlineComm>& comm) { Agent::instance().remove(comm); }
void wakeEpochAgent() { Agent::instance().wake(); }

}  // namespace dynamiccl::plugin
