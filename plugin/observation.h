// One measured collective, as the profiler role hands it to the worker thread and its sinks.
// Public piece for other modules (online learner, store writer): include this header, register a sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "features/features.h"
#include "plugin/decision_log.h"

namespace dynamiccl::plugin {

// Members by size, widest first: the queue holds tens of thousands of these, so no padding.
struct Observation {
  uint64_t commId = 0;   // NCCL's commHash (v4+ init, v1/v2 descriptor); 0 when NCCL did not say
  uint64_t seq = 0;      // NCCL's per-communicator, per-collective seqNumber (rank-consistent)
  uint64_t bytes = 0;    // nccl-tests "size": count*typeSize, times nRanks for AllGather/ReduceScatter
  double gpu_us = 0;     // max channel stop - min channel start (GPU globaltimer); 0 when !gpuTiming
  double cpu_us = 0;     // host Coll start -> stop (enqueue time), always filled
  // Extra context for sinks (not on the hot path's critical fields).
  uint64_t elemBytes = 0;  // count*typeSize (per-rank share) as NCCL described it
  int64_t stop_ns = 0;   // host steady-clock time the record completed (ordering, not wall time)
  // Profiler v7 (NCCL 2.31+); zero before. A symmetric-memory collective runs a kernel variant, not an
  // algorithm/protocol: algo and proto are Default for it, and it must not be mixed with ordinary calls.
  uint64_t userTag = 0;      // ncclCollConfig_t userProfilerTag; 0 untagged
  // The decision found at the call's start (DecisionLog::pack; its call and size are seq and bytes).
  uint64_t decisionPacked = 0, decisionChunkBytes = 0;
  int rank = -1;         // from the event descriptor
  int nChannels = 0;     // channels NCCL used (v4+), max channels before v4
  int nRanks = 0;        // 0 before v4 unless the tuner context supplied it
  int nNodes = 0;
  Collective coll = Collective::AllReduce;
  Algo algo = Algo::Default;    // what NCCL actually ran; Default when unknown
  Proto proto = Proto::Default;
  bool gpuTiming = false;  // false: only cpu_us is meaningful (v1-v3, channels missing)
  uint8_t kernelVariant = 0; // kernelVariantName(id); 0 none
  bool isSymColl = false;
  uint8_t profilerVersion = 0;  // the ncclProfiler_vN NCCL loaded
  // How this call found the tuner's decision: at NCCL's start of the call where the profiler context is
  // linked to this communicator's tuner (the log is a ring a fast job outruns), else by the worker.
  // join == NotAsked: NCCL never consulted the tuner (a CUDA-graph replay): no arm's evidence.
  bool joinedAtStart = false;
  DecisionJoin join = DecisionJoin::NoTuner;
};
static_assert(sizeof(Observation) <= 112, "the queue's element: keep it unpadded");

// A sink gets batches of observations on the worker thread, in completion order. It must not block
// for long (it delays every other sink), must not throw (exceptions are caught and counted) and must
// not register/unregister sinks itself. After unregisterObservationSink returns it is never called again.
// Observations arrive only while a profiler context is live (NCCL_PROFILER_PLUGIN names this library).
using ObservationSink = std::function<void(const Observation* observations, size_t n)>;

// Returns an id for unregisterObservationSink. Safe from any thread, at any time (not the hot path).
int registerObservationSink(ObservationSink sink);
void unregisterObservationSink(int id);

}  // namespace dynamiccl::plugin
