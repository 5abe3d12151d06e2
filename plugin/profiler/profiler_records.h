// The profiler's fixed pool of in-flight collective records and the lock-free protocol NCCL's threads
// use on it. Handles given to NCCL encode (generation, slot, kind, channel): a stale, foreign or
// completed handle never matches a live record, so it is counted and ignored, never dereferenced.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "features/features.h"
#include "plugin/observation.h"
#include "plugin/profiler/observation_queue.h"

namespace dynamiccl::plugin {

// What a Coll start tells us, already decoded from whichever descriptor version NCCL used.
struct CollStart {
  uint64_t commId = 0;
  int rank = -1, nRanks = 0, nNodes = 0;
  uint64_t seq = 0;
  Collective coll = Collective::AllReduce;
  uint64_t elemBytes = 0;  // count * typeSize
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int nChannels = 0;
  int expectedChannels = 0;  // KernelCh children to wait for (v4+ with pTimer); 0: complete at Coll stop
  uint64_t userTag = 0;        // v7
  uint8_t kernelVariant = 0;   // v7 symmetric kernels: internKernelVariant's id; 0 none
  bool isSymColl = false;      // v7
  uint8_t profilerVersion = 0;
  bool joinedAtStart = false;  // join and decision below were settled at the start (Observation's)
  DecisionJoin join = DecisionJoin::NoTuner;
  uint64_t decisionPacked = 0, decisionChunkBytes = 0;  // DecisionLog::pack of the decision found

  // NCCL's nBytes as the tuner saw it (nccl-tests "size"): the whole buffer for AllGather/ReduceScatter.
  uint64_t ncclBytes() const {
    const bool perRank = coll == Collective::AllGather || coll == Collective::ReduceScatter;
    return perRank && nRanks > 0 ? elemBytes * static_cast<uint64_t>(nRanks) : elemBytes;
  }
};

class RecordPool {
 public:
  // firstGeneration: above every generation a previous pool handed out, so its stale handles never match.
  RecordPool(uint32_t records, uint32_t queueCapacity, uint32_t firstGeneration = 1);
  ~RecordPool();
  uint32_t size() const { return size_; }
  BoundedQueue<Observation>& queue() { return queue_; }
  const BoundedQueue<Observation>& queue() const { return queue_; }

  // Hot path: no lock, no allocation, no syscall (steady_clock is vDSO). nullptr: dropped/ignored.
  void* startColl(const CollStart& start);
  void* startKernelCh(void* collHandle, uint8_t channelId, uint64_t startTimer_ns);
  void kernelChStopTime(void* channelHandle, uint64_t stopTimer_ns);
  void stop(void* handle);

  // Worker: complete records older than grace_ns (missing stop or channels); all of them with grace 0.
  void sweep(int64_t now_ns, int64_t grace_ns);
  // Init/finalize: the generation a successor pool should start from.
  uint32_t nextUnusedGeneration() const;

  struct Record;

 private:
  bool acquire(Record& r, uint32_t gen, uint64_t setBits) const;
  void release(Record& r, bool dropRef);
  void stopColl(Record& r, uint32_t gen);
  void complete(Record& r);
  Record* decode(void* handle, unsigned kind, uint32_t* gen, unsigned* channel) const;

  uint32_t size_;
  std::unique_ptr<Record[]> records_;
  BoundedQueue<Observation> queue_;
  // Where the next Coll start probes first. A hint: racing starts may read the same value, the claim
  // CAS decides. Own cache line: every start writes it, nothing else nearby should bounce with it.
  alignas(64) std::atomic<uint32_t> cursor_{0};
};

// Process-wide counters (monotonic), shared by every pool of this load of the library. Grouped by who
// writes them so the hot path's reads never share a cache line with the worker's per-batch writes.
struct ProfilerCounters {
  // Read by every Coll start; written once (channelsSeen) or by the worker's sweep.
  alignas(64) std::atomic<uint64_t> channelsSeen{0}, forcedCompletions{0};
  // Written by NCCL's threads only when an event is dropped or wrong.
  alignas(64) std::atomic<uint64_t> droppedQueueFull{0}, droppedPoolFull{0}, unknownHandles{0};
  // Written by the worker for every batch; unwritten: observations a built-in sink (store, log) lost;
  // leftToRecorder: those the store sink left to the node's recorder, another process (not a loss).
  alignas(64) std::atomic<uint64_t> delivered{0}, sinkErrors{0}, unwritten{0}, leftToRecorder{0};
};
ProfilerCounters& profilerCounters();

int64_t steadyNowNs();

}  // namespace dynamiccl::plugin
