#include "plugin/profiler/profiler_api.h"

#include <algorithm>
#include <exception>
#include <memory>

#include "plugin/guard.h"
#include "plugin/log.h"
#include "plugin/measurement_gate.h"
#include "plugin/settings/settings.h"
#include "plugin/profiler/worker.h"

namespace dynamiccl::plugin {
int profilerEventMask(int version) {
  // v3 KernelCh events carry no timestamps: asking for them would only add proxy work to NCCL.
  return static_cast<int>(version >= 4 ? (ncclProfileColl | ncclProfileKernelCh) : ncclProfileColl);
}

ncclResult_t profilerInit(int version, void** context, int* eActivationMask, uint64_t commId, int nNodes,
                          int nRanks, int rank, ncclDebugLogger_t logger) {
  if (!context) return ncclSuccess;
  *context = nullptr;
  setLogger(logger);
  std::shared_ptr<const Settings> settings = currentSettings();
  testThrowPoint(Entry::ProfilerInit);
  auto c = std::make_unique<ProfilerContext>();
  c->version = version;
  c->link.commId = commId;
  c->link.rank = rank;
  c->rank = rank;
  c->nRanks = nRanks;
  c->nNodes = nNodes;
  if (commId != 0) registerProfilerContext(&c->link);
  const bool alwaysOn = version < 4 || settings->budget.record >= 1;
  acquireMeasurementChannel(std::move(settings));
  noteProfilerRoleStarted();
  // One process-wide int shared by every communicator: the gate sets our bits only for the calls a
  // leader measures (v4+ init names the rank); v1-v3 cannot know a leader and profile every call.
  measurementGate().attach(eActivationMask, profilerEventMask(version), alwaysOn);
  *context = c.release();
  return ncclSuccess;
}

// NCCL starts a call right after asking the tuner about it, in the order it asked; a start with no
// decision left to match is a call NCCL ran without asking (a CUDA-graph replay, whose seqNumber NCCL
// still advances, so seq alone cannot join once graphs replay). NCCL numbers every task, measured or
// not, so the call a start belongs to is its seqNumber less the offset the last join saw: that holds
// across calls left unmeasured whatever turned the mask off (another communicator, mid-group). Where
// it does not (the offset moved), the cursor's call joins only if no other call the start could be,
// of the same size, was decided otherwise: else the start is said lost, not given its neighbour's
// decision. A few atomics, at most a ring's length of slots read: no lock, no allocation.
bool anotherDecisionFits(const DecisionLog& log, int coll, uint64_t from, uint64_t to, uint64_t bytes,
                         uint64_t call, const LoggedDecision& d) {
  for (uint64_t i = from; i < to && i - from < DecisionLog::kSlots; ++i) {
    LoggedDecision other;
    if (i != call && log.find(coll, i, bytes, &other) &&
        (DecisionLog::pack(other) != DecisionLog::pack(d) || other.chunkBytes != d.chunkBytes))
      return true;
  }
  return false;
}

void joinAtStart(ProfilerContext& c, const DecisionLog& log, CollStart& start) {
  const int coll = static_cast<int>(start.coll);
  if (coll < 0 || coll >= kNumCollectives) return;
  const uint64_t asked = log.callsSoFar(coll);
  uint64_t next = c.nextCall[coll].load(std::memory_order_relaxed);
  start.joinedAtStart = true;
  if (next >= asked) {
    start.join = DecisionJoin::NotAsked;
    return;
  }
  // Calls enqueued while the measurement gate was off were never started here: resume at the first
  // one it measured, or at the newest decision when the gate turned on as this call was asked about.
  const uint64_t first = std::min(std::max(next, log.measuredFrom(coll)), asked - 1);
  next = first;
  const uint64_t bytes = start.ncclBytes();
  LoggedDecision d;
  const uint64_t byNumber = start.seq - c.seqMinusCall[coll].load(std::memory_order_relaxed);
  bool found = byNumber >= first && byNumber < asked && log.find(coll, byNumber, bytes, &d);
  if (found) {
    next = byNumber;
  } else {
    // A start NCCL never sent (or one beyond the ring) leaves the cursor behind: catch up to the newest.
    found = log.find(coll, next, bytes, &d);
    if (!found && log.find(coll, asked - 1, bytes, &d)) found = true, next = asked - 1;
    if (found && anotherDecisionFits(log, coll, first, asked, bytes, next, d)) found = false;
  }
  if (found) {
    start.decisionPacked = DecisionLog::pack(d), start.decisionChunkBytes = d.chunkBytes;
    c.seqMinusCall[coll].store(start.seq - next, std::memory_order_relaxed);
  }
  c.nextCall[coll].store(next + 1, std::memory_order_relaxed);
  start.join = found ? DecisionJoin::Joined : DecisionJoin::Lost;
}

void* profilerStartColl(ProfilerContext& c, CollStart& start) {
  RecordPool* pool = currentRecordPool();
  if (!pool) return nullptr;
  if (c.link.commId) start.commId = c.link.commId;
  if (c.nRanks > 0) {
    start.nRanks = c.nRanks;
    start.nNodes = c.nNodes;
  }
  if (start.rank < 0) start.rank = c.rank;
  start.profilerVersion = static_cast<uint8_t>(c.version);
  // If NCCL never sends KernelCh (mask overridden, old core), the sweep's forced completions would
  // be the only way out; wait for channels only after one has been seen or while none was forced.
  const ProfilerCounters& counters = profilerCounters();
  const bool waitForChannels = c.version >= 4 && (counters.channelsSeen.load(std::memory_order_relaxed) ||
                                                  counters.forcedCompletions.load(std::memory_order_relaxed) < 16);
  start.expectedChannels = waitForChannels ? start.nChannels : 0;
  if (const DecisionLog* log = c.link.decisions.load(std::memory_order_acquire)) joinAtStart(c, *log, start);
  return pool->startColl(start);
}

void* profilerStartKernelCh(void* parentColl, uint8_t channelId, uint64_t startTimer_ns) {
  RecordPool* pool = currentRecordPool();
  return pool && parentColl ? pool->startKernelCh(parentColl, channelId, startTimer_ns) : nullptr;
}

ncclResult_t profilerStop(void* eHandle) {
  RecordPool* pool = currentRecordPool();
  if (pool && eHandle) pool->stop(eHandle);
  return ncclSuccess;
}

ncclResult_t profilerKernelChStop(void* eHandle, uint64_t stopTimer_ns) {
  RecordPool* pool = currentRecordPool();
  if (pool && eHandle) pool->kernelChStopTime(eHandle, stopTimer_ns);
  return ncclSuccess;
}

ncclResult_t profilerFinalize(void* context) {
  ProfilerContext* c = ProfilerContext::from(context);
  if (!c) return ncclSuccess;
  c->magic = 0;
  delete c;
  testThrowPoint(Entry::ProfilerFinalize);
  releaseMeasurementChannel();  // std::thread::join may throw (system error): the guard logs it
  return ncclSuccess;
}

}  // namespace dynamiccl::plugin
