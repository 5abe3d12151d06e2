// The measurement channel's process-wide runtime: the record pool + observation queue the hot path
// uses, and the ONE worker thread that drains the queue into the sinks. Started lazily by the first
// profiler init, stopped (drained, flushed, joined) by the last finalize or at process exit.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "plugin/profiler/observation.h"
#include "plugin/profiler/profiler_records.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {

// Hot path: the pool of the running channel, or nullptr before the first init / after the last finalize.
RecordPool* currentRecordPool();

// Init/finalize only (they lock and may start or join the thread).
RecordPool* acquireMeasurementChannel(std::shared_ptr<const Settings> settings);
void releaseMeasurementChannel();

// A sink the worker owns (store writer, log file): batches, a periodic tick, flushed on destruction.
class WorkerSink {
 public:
  virtual ~WorkerSink() = default;
  virtual void consume(const Observation* observations, size_t n) = 0;
  virtual void tick(int64_t /*now_ns*/) {}
};

// Built on the worker thread when it starts; nullptr when switched off or unavailable.
// giveUp turns true when finalize's bound has passed: the store then stops waiting for locks.
std::unique_ptr<WorkerSink> makeStoreSink(const Settings& s, const std::atomic<bool>* giveUp);  // DYNAMICCL_RECORD=0 disables; DYNAMICCL_DB names the file
std::unique_ptr<WorkerSink> makeLogFileSink(const Settings& s);  // DYNAMICCL_OBSERVATION_LOG=<path>: one CSV line each

}  // namespace dynamiccl::plugin
