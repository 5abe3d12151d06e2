// The measurement channel's process-wide runtime: the record pool + observation queue the hot path
// uses, and the ONE worker thread that drains the queue into the sinks. Started lazily by the first
// profiler init, stopped (drained, flushed, joined) by the last finalize or at process exit.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "plugin/decision_log.h"
#include "plugin/observation.h"
#include "plugin/profiler/profiler_records.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {

// Process-wide counters of the measurement channel (monotonic since load).
struct ObservationCounters {
  uint64_t delivered = 0;       // observations handed to sinks
  uint64_t droppedQueueFull = 0;
  uint64_t droppedPoolFull = 0; // Coll starts that found no free record
  uint64_t unknownHandles = 0;  // events whose handle was stale, foreign or already completed
  uint64_t forcedCompletions = 0;  // records completed by the worker's sweep (missing stop/channels)
  uint64_t sinkErrors = 0;
  uint64_t unwritten = 0;       // delivered but lost by the store or log (full disk, lock held, shutdown bound)
  uint64_t leftToRecorder = 0;  // not stored here because another process of the node records into the file
};
ObservationCounters observationCounters();

// Hot path: the pool of the running channel, or nullptr before the first init / after the last finalize.
RecordPool* currentRecordPool();

// Init/finalize only (they lock and may start or join the thread).
RecordPool* acquireMeasurementChannel(std::shared_ptr<const Settings> settings);
void releaseMeasurementChannel();

// The tuner's decision for an observation's call, joined by the worker (the decision log is a ring).
struct JoinedDecision {
  DecisionJoin join = DecisionJoin::NoTuner;
  LoggedDecision decision;  // valid when join == Joined
};

// A sink the worker owns (store writer, log file): batches, a periodic tick, flushed on destruction.
class WorkerSink {
 public:
  virtual ~WorkerSink() = default;
  // decisions[i] belongs to observations[i].
  virtual void consume(const Observation* observations, const JoinedDecision* decisions, size_t n) = 0;
  virtual void tick(int64_t /*now_ns*/) {}
};

// Built on the worker thread when it starts; nullptr when switched off or unavailable.
// giveUp turns true when finalize's bound has passed: the store then stops waiting for locks.
std::unique_ptr<WorkerSink> makeStoreSink(const Settings& s, const std::atomic<bool>* giveUp);  // DYNAMICCL_RECORD=0 disables; DYNAMICCL_DB names the file
std::unique_ptr<WorkerSink> makeLogFileSink(const Settings& s);  // DYNAMICCL_OBSERVATION_LOG=<path>: one CSV line each

}  // namespace dynamiccl::plugin
