#include "plugin/profiler/profiler_records.h"

#include <bit>
#include <time.h>

namespace dynamiccl::plugin {
namespace {

// state word: generation (32 bits) | busy holders (15) | Coll stopped (1) | allocated (1) | references (15):
// one CAS guards identity, short-lived access and lifetime together, so a record is recycled only when
// nobody touches it. Allocation claims a slot by CAS on this word: no free list a preempted thread
// could hold up. Generations count per slot: a claim needs no shared counter.
constexpr uint64_t kRefMask = 0x7FFF;
constexpr uint64_t kAllocated = 0x8000;
constexpr uint64_t kCollStopped = 0x10000;
constexpr uint32_t kMaxProbes = 256;
constexpr uint64_t kBusyOne = 1ull << 17;
constexpr uint64_t kBusyMask = 0x7FFFull << 17;
constexpr uint64_t kGenMask = ~uint64_t{0xFFFFFFFF};
constexpr unsigned kCollKind = 1, kChannelKind = 2;
constexpr uint32_t kSlotBits = 22;
constexpr unsigned kMaxChannels = 128;

void* encode(uint32_t gen, uint32_t slot, unsigned kind, unsigned channel) {
  const uint64_t v = (uint64_t{gen} << 32) | (uint64_t{channel & 0xFF} << 24) | (uint64_t{slot} << 2) | kind;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));
}

void atomicMin(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void atomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// A record whose kernel has not started yet waits this many graces (30 s at the default 2 s).
constexpr int64_t kQueuedGraceFactor = 15;

}  // namespace

// A cache line of its own (three): threads working on neighbouring records do not bounce each other's.
struct alignas(64) RecordPool::Record {
  std::atomic<uint64_t> state{0};
  std::atomic<int64_t> hostStart_ns{0};
  std::atomic<int64_t> hostStop_ns{0};  // 0 until Coll stop
  std::atomic<int64_t> channelSeen_ns{0};  // host time of the first channel start (or Coll start with none expected); 0: queued
  std::atomic<uint64_t> minStart_ns{UINT64_MAX}, maxStop_ns{0};
  std::atomic<uint64_t> started[2], stopped[2], stopTimed[2];  // channel bit masks (128 channels)
  CollStart info;  // written by the owner before the state publishes it; read by the one completer
};

namespace {
constinit ProfilerCounters gCounters;  // constant-initialized: no guard check on the hot path
}  // namespace

ProfilerCounters& profilerCounters() { return gCounters; }

int64_t steadyNowNs() {
  // steady_clock's own source (CLOCK_MONOTONIC, vDSO), without libstdc++'s extra call on the hot path.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

RecordPool::RecordPool(uint32_t records, uint32_t queueCapacity, uint32_t firstGeneration)
    : size_(records < 1 ? 1 : (records > (1u << kSlotBits) ? (1u << kSlotBits) : records)),
      records_(std::make_unique<Record[]>(size_)),
      queue_(queueCapacity) {
  const uint64_t before = uint64_t{firstGeneration ? firstGeneration - 1 : 0} << 32;  // a claim adds one
  for (uint32_t i = 0; i < size_; ++i) records_[i].state.store(before, std::memory_order_relaxed);
}

RecordPool::~RecordPool() = default;

uint32_t RecordPool::nextUnusedGeneration() const {
  uint32_t highest = 0;
  for (uint32_t i = 0; i < size_; ++i) {
    const auto g = static_cast<uint32_t>(records_[i].state.load(std::memory_order_relaxed) >> 32);
    highest = g > highest ? g : highest;
  }
  return highest + 1 ? highest + 1 : 1;
}

RecordPool::Record* RecordPool::decode(void* handle, unsigned kind, uint32_t* gen, unsigned* channel) const {
  const uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  const uint32_t slot = static_cast<uint32_t>((v >> 2) & ((1u << kSlotBits) - 1));
  if ((v & 3) != kind || slot >= size_) return nullptr;
  *gen = static_cast<uint32_t>(v >> 32);
  *channel = static_cast<unsigned>((v >> 24) & 0xFF);
  return &records_[slot];
}

// A busy hold on a live record of generation gen; setBits (Coll stopped) are set by the same CAS and
// refused if already set, so a repeated Coll stop is told apart without another atomic.
bool RecordPool::acquire(Record& r, uint32_t gen, uint64_t setBits) const {
  uint64_t s = r.state.load(std::memory_order_acquire);
  for (;;) {
    if ((s >> 32) != gen || (s & kRefMask) == 0 || (s & kBusyMask) == kBusyMask || (s & setBits)) return false;
    if (r.state.compare_exchange_weak(s, (s + kBusyOne) | setBits, std::memory_order_acq_rel)) return true;
  }
}

void RecordPool::release(Record& r, bool dropRef) {
  uint64_t s = r.state.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t next = s - kBusyOne - (dropRef && (s & kRefMask) ? 1 : 0);
    if (r.state.compare_exchange_weak(s, next, std::memory_order_acq_rel)) {
      if ((next & (kRefMask | kBusyMask)) == 0) complete(r);  // exactly one thread sees the last drop
      return;
    }
  }
}

void* RecordPool::startColl(const CollStart& start) {
  const uint32_t probes = size_ < kMaxProbes ? size_ : kMaxProbes;
  uint32_t slot = cursor_.load(std::memory_order_relaxed);
  if (slot >= size_) slot = 0;
  uint32_t gen = 0;
  for (uint32_t i = 0;; ++i, slot = slot + 1 == size_ ? 0 : slot + 1) {
    if (i == probes) {
      profilerCounters().droppedPoolFull.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    uint64_t s = records_[slot].state.load(std::memory_order_relaxed);
    if (s & kAllocated) continue;
    gen = static_cast<uint32_t>(s >> 32) + 1;
    if (gen == 0) gen = 1;  // 0 never names a live record
    if (records_[slot].state.compare_exchange_strong(s, (uint64_t{gen} << 32) | kAllocated,
                                                     std::memory_order_acquire))
      break;
  }
  const uint32_t next = slot + 1 == size_ ? 0 : slot + 1;
  cursor_.store(next, std::memory_order_relaxed);
  Record& r = records_[slot];
  r.info = start;
  r.hostStart_ns.store(steadyNowNs(), std::memory_order_relaxed);
  r.hostStop_ns.store(0, std::memory_order_relaxed);
  // A call with channels to wait for is queued until its first channel starts; one without counts from now.
  r.channelSeen_ns.store(start.expectedChannels > 0 ? 0 : r.hostStart_ns.load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
  r.minStart_ns.store(UINT64_MAX, std::memory_order_relaxed);
  r.maxStop_ns.store(0, std::memory_order_relaxed);
  for (int w = 0; w < 2; ++w) {
    r.started[w].store(0, std::memory_order_relaxed);
    r.stopped[w].store(0, std::memory_order_relaxed);
    r.stopTimed[w].store(0, std::memory_order_relaxed);
  }
  const uint64_t refs = 1 + static_cast<uint64_t>(start.expectedChannels > 0 ? start.expectedChannels : 0);
  r.state.store((uint64_t{gen} << 32) | kAllocated | refs, std::memory_order_release);
  return encode(gen, slot, kCollKind, 0);
}

void* RecordPool::startKernelCh(void* collHandle, uint8_t channelId, uint64_t startTimer_ns) {
  uint32_t gen;
  unsigned unused;
  Record* r = decode(collHandle, kCollKind, &gen, &unused);
  if (!r || !acquire(*r, gen, 0)) {
    profilerCounters().unknownHandles.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  void* handle = nullptr;
  if (channelId < kMaxChannels) {
    const uint64_t bit = 1ull << (channelId & 63);
    if (!(r->started[channelId >> 6].fetch_or(bit, std::memory_order_relaxed) & bit)) {
      if (startTimer_ns) atomicMin(r->minStart_ns, startTimer_ns);
      if (!r->channelSeen_ns.load(std::memory_order_relaxed))
        r->channelSeen_ns.store(steadyNowNs(), std::memory_order_relaxed);
      handle = encode(gen, static_cast<uint32_t>(r - records_.get()), kChannelKind, channelId);
    }
  }
  if (!profilerCounters().channelsSeen.load(std::memory_order_relaxed))
    profilerCounters().channelsSeen.store(1, std::memory_order_relaxed);
  release(*r, false);
  return handle;
}

void RecordPool::kernelChStopTime(void* channelHandle, uint64_t stopTimer_ns) {
  uint32_t gen;
  unsigned ch;
  Record* r = decode(channelHandle, kChannelKind, &gen, &ch);
  if (!r || !acquire(*r, gen, 0)) {
    profilerCounters().unknownHandles.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (stopTimer_ns) {
    atomicMax(r->maxStop_ns, stopTimer_ns);
    r->stopTimed[ch >> 6].fetch_or(1ull << (ch & 63), std::memory_order_relaxed);
  }
  release(*r, false);
}

void RecordPool::stop(void* handle) {
  uint32_t gen;
  unsigned ch;
  const unsigned kind = static_cast<unsigned>(reinterpret_cast<uintptr_t>(handle) & 3);
  Record* r = decode(handle, kind == kChannelKind ? kChannelKind : kCollKind, &gen, &ch);
  if (r && kind != kChannelKind) return stopColl(*r, gen);
  if (!r || !acquire(*r, gen, 0)) {
    profilerCounters().unknownHandles.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t bit = 1ull << (ch & 63);
  const bool first = !(r->stopped[ch >> 6].fetch_or(bit, std::memory_order_relaxed) & bit);
  if (!first) profilerCounters().unknownHandles.fetch_add(1, std::memory_order_relaxed);  // a repeated stop
  release(*r, first);
}

void RecordPool::stopColl(Record& r, uint32_t gen) {
  const int64_t now_ns = steadyNowNs();
  uint64_t s = r.state.load(std::memory_order_acquire);
  for (;;) {
    if ((s >> 32) != gen || (s & kRefMask) == 0 || (s & kBusyMask) == kBusyMask || (s & kCollStopped)) {
      profilerCounters().unknownHandles.fetch_add(1, std::memory_order_relaxed);  // stale or repeated
      return;
    }
    if ((s & (kRefMask | kBusyMask)) == 1) {
      // The last reference and nobody inside (no channels to wait for): one CAS makes it ours to complete.
      if (r.state.compare_exchange_weak(s, (s - 1) | kCollStopped, std::memory_order_acq_rel)) {
        r.hostStop_ns.store(now_ns, std::memory_order_relaxed);
        return complete(r);
      }
    } else if (r.state.compare_exchange_weak(s, (s + kBusyOne) | kCollStopped, std::memory_order_acq_rel)) {
      r.hostStop_ns.store(now_ns, std::memory_order_relaxed);
      return release(r, true);
    }
  }
}

void RecordPool::sweep(int64_t now_ns, int64_t grace_ns) {
  for (uint32_t i = 0; i < size_; ++i) {
    Record& r = records_[i];
    uint64_t s = r.state.load(std::memory_order_acquire);
    if ((s & kRefMask) == 0) continue;
    // A kernel queued behind earlier calls has not started: on an H200, 13 queued 216 ms calls began
    // 2.8 s after their enqueue, past the grace, and lost their timing. Such a record waits longer, and
    // a started one counts its grace from its first channel.
    // Atomics only: the record may be reused while it is read here.
    const int64_t seen_ns = r.channelSeen_ns.load(std::memory_order_relaxed);
    const bool queued = seen_ns == 0;
    const int64_t since_ns = queued ? r.hostStart_ns.load(std::memory_order_relaxed) : seen_ns;
    if (now_ns - since_ns < (queued ? grace_ns * kQueuedGraceFactor : grace_ns)) continue;
    // Drop every outstanding reference at once; a busy holder completes the record on its release.
    if (r.state.compare_exchange_strong(s, s & ~kRefMask, std::memory_order_acq_rel)) {
      profilerCounters().forcedCompletions.fetch_add(1, std::memory_order_relaxed);
      if ((s & kBusyMask) == 0) complete(r);
    }
  }
}

void RecordPool::complete(Record& r) {
  const CollStart& in = r.info;
  const int64_t hostStop = r.hostStop_ns.load(std::memory_order_relaxed);
  const uint64_t minStart = r.minStart_ns.load(std::memory_order_relaxed);
  const uint64_t maxStop = r.maxStop_ns.load(std::memory_order_relaxed);
  const int timedStops = std::popcount(r.stopTimed[0].load(std::memory_order_relaxed)) +
                         std::popcount(r.stopTimed[1].load(std::memory_order_relaxed));
  Observation o;
  o.commId = in.commId;
  o.rank = in.rank;
  o.seq = in.seq;
  o.coll = in.coll;
  o.elemBytes = in.elemBytes;
  o.bytes = in.ncclBytes();
  o.algo = in.algo;
  o.proto = in.proto;
  o.nChannels = in.nChannels;
  o.nRanks = in.nRanks;
  o.nNodes = in.nNodes;
  o.userTag = in.userTag;
  o.kernelVariant = in.kernelVariant;
  o.isSymColl = in.isSymColl;
  o.profilerVersion = in.profilerVersion;
  o.joinedAtStart = in.joinedAtStart;
  o.join = in.join;
  o.decisionPacked = in.decisionPacked;
  o.decisionChunkBytes = in.decisionChunkBytes;
  o.gpuTiming = in.expectedChannels > 0 && timedStops >= in.expectedChannels && minStart != UINT64_MAX &&
                maxStop >= minStart;
  o.gpu_us = o.gpuTiming ? static_cast<double>(maxStop - minStart) / 1e3 : 0.0;
  o.cpu_us = hostStop ? static_cast<double>(hostStop - r.hostStart_ns.load(std::memory_order_relaxed)) / 1e3 : 0.0;
  o.stop_ns = hostStop ? hostStop : steadyNowNs();
  if (o.gpuTiming || hostStop) {  // with neither a stop nor channel times there is nothing to report
    // Published observations are the queue's own push count (BoundedQueue::pushes): no counter here.
    if (!queue_.tryPush(o)) profilerCounters().droppedQueueFull.fetch_add(1, std::memory_order_relaxed);
  }
  // Free for the next Coll start. No RMW: with no references and no holders, nobody else writes the word.
  r.state.store(r.state.load(std::memory_order_relaxed) & kGenMask, std::memory_order_release);
}

}  // namespace dynamiccl::plugin
