#include "plugin/profiler/worker.h"

#include <malloc.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "plugin/context_registry.h"
#include "plugin/profiler/decision_join.h"
#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

constexpr size_t kBatch = 4096;
// Finalize waits this long for the worker to flush; then the store stops waiting for locks (what it
// could not write is counted), so the last finalize returns well within a second whatever the store does.
constexpr auto kFlushBound = std::chrono::milliseconds(500);
constexpr int64_t kSweepEvery_ns = 10'000'000;

struct SinkRegistry {
  std::mutex mutex;
  std::mutex callMutex;  // held while sinks run: unregister returns only once its sink is no longer called
  std::vector<std::pair<int, ObservationSink>> sinks;
  int nextId = 1;
  uint64_t version = 0;
};
SinkRegistry& registry() {
  static auto* r = new SinkRegistry();  // never destroyed: the worker may outlive static destructors
  return *r;
}

struct Channel {
  std::mutex mutex;  // init/finalize only
  int live = 0;
  // Kept after stop, replaced ones too: a late event must still find valid memory. Freed only when
  // the library unloads with no communicator left (NCCL unloads and reloads plugins between jobs).
  RecordPool* pool = nullptr;
  std::vector<RecordPool*> replaced;
  std::thread thread;
  std::mutex wakeMutex;
  std::condition_variable wake;
  bool stopping = false;
  bool finished = false;                 // the worker has flushed and closed its sinks
  std::atomic<bool> giveUp{false};       // finalize's bound passed: sinks stop waiting
  int64_t grace_ns = 0;
  ObservationCounters atStart;  // the summary at stop reports this session's share
};
Channel& channel() {
  static auto* c = new Channel();
  return *c;
}
std::atomic<RecordPool*> gPool{nullptr};

void replacePool(Channel& ch, RecordPool* next) {
  if (ch.pool) ch.replaced.push_back(ch.pool);
  ch.pool = next;
}

// At unload with every communicator finalized: no event can reach the pools any more.
void freePools(Channel& ch) {
  replacePool(ch, nullptr);
  for (RecordPool* p : ch.replaced) delete p;
  ch.replaced.clear();
  // Other allocations between loads fragment the heap around the freed pool: hand free pages back.
  malloc_trim(0);
}

// v1-v3 inits carry no communicator shape: borrow nRanks/nNodes from the tuner context of that commId.
class ShapeCache {
 public:
  void fill(Observation& o) {
    if (o.nRanks > 0 || o.commId == 0) return;
    auto it = known_.find(o.commId);
    if (it == known_.end()) {
      std::pair<int, int> shape{0, 0};
      forEachContextWithCommId(o.commId, [&](const TunerView& t) { shape = {t.shape.nRanks, t.shape.nNodes}; });
      if (shape.first <= 0) return;
      it = known_.emplace(o.commId, shape).first;
    }
    o.nRanks = it->second.first;
    o.nNodes = it->second.second;
    if (o.coll == Collective::AllGather || o.coll == Collective::ReduceScatter)
      o.bytes = o.elemBytes * static_cast<uint64_t>(o.nRanks);
  }

 private:
  std::unordered_map<uint64_t, std::pair<int, int>> known_;
};

void deliver(std::vector<Observation>& batch, std::vector<JoinedDecision>& joins,
             std::vector<std::unique_ptr<WorkerSink>>& owned, std::vector<ObservationSink>& external,
             uint64_t& seenVersion) {
  if (batch.empty()) return;
  SinkRegistry& r = registry();
  std::lock_guard calling(r.callMutex);
  {
    std::lock_guard lock(r.mutex);
    if (r.version != seenVersion) {
      external.clear();
      for (auto& [id, sink] : r.sinks) external.push_back(sink);
      seenVersion = r.version;
    }
  }
  auto guarded = [&](auto&& call) {
    try {
      call();
    } catch (...) {
      profilerCounters().sinkErrors.fetch_add(1, std::memory_order_relaxed);
    }
  };
  for (auto& s : owned) guarded([&] { s->consume(batch.data(), joins.data(), batch.size()); });
  for (auto& s : external) guarded([&] { s(batch.data(), batch.size()); });
  profilerCounters().delivered.fetch_add(batch.size(), std::memory_order_relaxed);
  batch.clear();
  joins.clear();
}

void workerMain(RecordPool* pool, std::shared_ptr<const Settings> settings) {
  Channel& ch = channel();
  std::vector<std::unique_ptr<WorkerSink>> owned;
  try {
    if (auto s = makeStoreSink(*settings, &ch.giveUp)) owned.push_back(std::move(s));
    if (auto s = makeLogFileSink(*settings)) owned.push_back(std::move(s));
  } catch (const std::exception& e) {
    logWarn("profiler: a built-in sink failed to start (%s); observations still reach registered sinks", e.what());
  }
  std::vector<ObservationSink> external;
  uint64_t seenVersion = ~0ull;
  std::vector<Observation> batch;
  std::vector<JoinedDecision> joins;
  batch.reserve(kBatch);
  joins.reserve(kBatch);
  ShapeCache shapes;
  AppliedWatch applied;
  auto drain = [&] {
    Observation o;
    while (batch.size() < kBatch && pool->queue().tryPop(o)) {
      shapes.fill(o);
      batch.push_back(o);
      joins.emplace_back();
      try {
        // Read at the call's start where the tuner of this communicator was linked; else now, from a ring
        // that may have moved on.
        joins.back() = o.joinedAtStart ? JoinedDecision{o.join, DecisionLog::unpack(o.decisionPacked, o.seq, o.bytes,
                                                                                    o.decisionChunkBytes)}
                                       : joinDecision(o);
        batch.back().join = joins.back().join;  // external sinks (the online learner) skip calls never consulted
        applied.check(o, joins.back());
      } catch (...) {
        profilerCounters().sinkErrors.fetch_add(1, std::memory_order_relaxed);
      }
    }
    const bool more = batch.size() == kBatch;
    deliver(batch, joins, owned, external, seenVersion);
    return more;
  };
  int64_t lastSweep = steadyNowNs();
  for (;;) {
    bool more = drain();
    const int64_t now = steadyNowNs();
    if (now - lastSweep >= kSweepEvery_ns) {
      pool->sweep(now, ch.grace_ns);
      for (auto& s : owned) s->tick(now);
      lastSweep = now;
    }
    if (more) continue;
    std::unique_lock lock(ch.wakeMutex);
    if (ch.stopping) break;
    ch.wake.wait_for(lock, std::chrono::milliseconds(1));
  }
  // Last finalize or exit: complete everything still open (host timing), deliver, flush.
  while (drain()) {
  }
  pool->sweep(steadyNowNs(), 0);
  while (drain()) {
  }
  owned.clear();
  {
    std::lock_guard lock(ch.wakeMutex);
    ch.finished = true;
  }
  ch.wake.notify_all();
}

void stopWorker(Channel& ch) {
  if (!ch.thread.joinable()) return;
  {
    std::lock_guard lock(ch.wakeMutex);
    ch.stopping = true;
  }
  ch.wake.notify_all();
  {
    std::unique_lock lock(ch.wakeMutex);
    if (!ch.wake.wait_for(lock, kFlushBound, [&] { return ch.finished; })) ch.giveUp.store(true);
  }
  ch.thread.join();
  const ObservationCounters now = observationCounters(), &was = ch.atStart;
  logInfo("profiler: %llu observations delivered; dropped: queue full %llu, record pool full %llu; "
          "unknown handles %llu; forced completions %llu; sink errors %llu; not written to store/log %llu; "
          "left to the node's recorder %llu",
          (unsigned long long)(now.delivered - was.delivered),
          (unsigned long long)(now.droppedQueueFull - was.droppedQueueFull),
          (unsigned long long)(now.droppedPoolFull - was.droppedPoolFull),
          (unsigned long long)(now.unknownHandles - was.unknownHandles),
          (unsigned long long)(now.forcedCompletions - was.forcedCompletions),
          (unsigned long long)(now.sinkErrors - was.sinkErrors),
          (unsigned long long)(now.unwritten - was.unwritten),
          (unsigned long long)(now.leftToRecorder - was.leftToRecorder));
}

// Joins the worker at process exit (or dlclose) when NCCL never finalized every communicator; frees
// the pools when it did.
struct ExitStopper {
  ~ExitStopper() {
    Channel& ch = channel();
    std::lock_guard lock(ch.mutex);
    gPool.store(nullptr, std::memory_order_release);
    stopWorker(ch);
    if (ch.live == 0) freePools(ch);
  }
} gExitStopper;

}  // namespace

RecordPool* currentRecordPool() { return gPool.load(std::memory_order_acquire); }

RecordPool* acquireMeasurementChannel(std::shared_ptr<const Settings> settings) {
  Channel& ch = channel();
  std::lock_guard lock(ch.mutex);
  if (ch.live++ > 0) return ch.pool;
  const uint32_t records = settings->profiler.records, queue = settings->profiler.queue;
  ch.grace_ns = settings->profiler.grace_ns;
  if (!ch.pool || ch.pool->size() != records || ch.pool->queue().capacity() < queue ||
      ch.pool->queue().capacity() >= 2 * static_cast<size_t>(queue))
    // The previous one stays allocated on purpose (see Channel); the new one's handles never match its.
    replacePool(ch, new RecordPool(records, queue, ch.pool ? ch.pool->nextUnusedGeneration() : 1));
  ch.stopping = false;
  ch.finished = false;
  ch.giveUp.store(false);
  ch.atStart = observationCounters();
  try {
    ch.thread = std::thread(workerMain, ch.pool, std::move(settings));
  } catch (...) {
    --ch.live;  // no thread: this init gets no measurements, the next one retries
    throw;
  }
  gPool.store(ch.pool, std::memory_order_release);
  return ch.pool;
}

void releaseMeasurementChannel() {
  Channel& ch = channel();
  std::lock_guard lock(ch.mutex);
  if (ch.live == 0 || --ch.live > 0) return;
  gPool.store(nullptr, std::memory_order_release);
  stopWorker(ch);
}

int registerObservationSink(ObservationSink sink) {
  if (!sink) return 0;
  SinkRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  const int id = r.nextId++;
  r.sinks.emplace_back(id, std::move(sink));
  ++r.version;
  return id;
}

void unregisterObservationSink(int id) {
  SinkRegistry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    std::erase_if(r.sinks, [id](const auto& s) { return s.first == id; });
    ++r.version;
  }
  std::lock_guard waitForDelivery(r.callMutex);
}

ObservationCounters observationCounters() {
  const ProfilerCounters& c = profilerCounters();
  ObservationCounters o;
  o.delivered = c.delivered.load();
  o.droppedQueueFull = c.droppedQueueFull.load();
  o.droppedPoolFull = c.droppedPoolFull.load();
  o.unknownHandles = c.unknownHandles.load();
  o.forcedCompletions = c.forcedCompletions.load();
  o.sinkErrors = c.sinkErrors.load();
  o.unwritten = c.unwritten.load();
  o.leftToRecorder = c.leftToRecorder.load();
  return o;
}

}  // namespace dynamiccl::plugin
