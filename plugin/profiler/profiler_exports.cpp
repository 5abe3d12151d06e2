// The exported profiler symbols, v1..v7: each decodes its version's descriptor and hands a
// version-neutral CollStart to profiler_api, through the one exception boundary (plugin/guard.h).
// NCCL 2.28.9 probes v5 first, 2.29/2.30 v6 first, 2.31+ v7 first.
#include "abi/abi.h"
#include "plugin/guard.h"
#include "plugin/log.h"
#include "plugin/profiler/profiler_api.h"
#include "plugin/profiler/profiler_names.h"

namespace dp = dynamiccl::plugin;
using dp::Entry;
using dp::guarded;
using dynamiccl::Collective;

namespace {
constexpr const char* kName = "DynamICCL";

// v2..v6 Coll descriptors name things with strings; v4+ drop commHash and report channels used.
template <typename Coll>
bool decodeNamed(const Coll& in, dp::CollStart& out) {
  std::optional<Collective> coll = dp::collectiveFromNcclName(in.func);
  if (!coll) return false;  // p2p-like functions: not tuned, not measured
  out.coll = *coll;
  out.seq = in.seqNumber;
  out.elemBytes = static_cast<uint64_t>(in.count) * dp::typeSizeFromNcclName(in.datatype);
  out.algo = dp::algoFromNcclName(in.algo);
  out.proto = dp::protoFromNcclName(in.proto);
  if constexpr (requires { in.nChannels; }) out.nChannels = in.nChannels;
  else out.nChannels = in.nMaxChannels;
  if constexpr (requires { in.commHash; }) out.commId = in.commHash;
  if constexpr (requires { in.isSymColl; }) {
    out.userTag = in.userTag;
    out.isSymColl = in.isSymColl;
    if (in.isSymColl) {
      // NCCL names a symmetric kernel's variant where the algorithm would be: no algorithm/protocol ran.
      out.algo = dynamiccl::Algo::Default;
      out.proto = dynamiccl::Proto::Default;
      out.kernelVariant = dp::internKernelVariant(in.kernelVariant);
    }
  }
  return true;
}

bool decodeV1(const ncclProfilerCollDescr_v1_t& in, dp::CollStart& out) {
  std::optional<Collective> coll = dp::collectiveFromNcclFunc(in.func);
  if (!coll) return false;
  out.coll = *coll;
  out.seq = in.seqNumber;
  out.commId = in.commHash;
  out.elemBytes = static_cast<uint64_t>(in.count) * dp::typeSizeFromNcclType(in.datatype);
  out.algo = dp::algoFromIndex(in.algo);
  out.proto = dp::protoFromIndex(in.proto);
  out.nChannels = in.nMaxChannels;
  return true;
}

template <typename Descr>
ncclResult_t startEvent(void* context, void** eHandle, Descr* eDescr) {
  if (eHandle) *eHandle = nullptr;  // an exception below: no handle, this event is not measured
  return guarded(Entry::StartEvent, [&] {
    dp::ProfilerContext* c = dp::ProfilerContext::from(context);
    if (!eHandle || !c || !eDescr) return ncclSuccess;
    if (eDescr->type == ncclProfileColl) {
      dp::CollStart start;
      start.rank = eDescr->rank;
      bool ok;
      if constexpr (std::is_same_v<Descr, ncclProfilerEventDescr_v1_t>) ok = decodeV1(eDescr->coll, start);
      else ok = decodeNamed(eDescr->coll, start);
      if (ok) *eHandle = dp::profilerStartColl(*c, start);
    } else if constexpr (requires { eDescr->kernelCh.pTimer; }) {
      // KernelPhase (v7) and anything newer: no handle, so NCCL sends neither its state nor its stop.
      if (eDescr->type == ncclProfileKernelCh)
        *eHandle = dp::profilerStartKernelCh(eDescr->parentObj, eDescr->kernelCh.channelId, eDescr->kernelCh.pTimer);
    }
    return ncclSuccess;
  });
}

ncclResult_t stopEvent(void* eHandle) {
  return guarded(Entry::StopEvent, [&] { return dp::profilerStop(eHandle); });
}

template <typename State, typename Args>
ncclResult_t recordEventState(void* eHandle, State eState, Args* eStateArgs) {
  return guarded(Entry::RecordEventState, [&] {
    if constexpr (requires { eStateArgs->kernelCh.pTimer; }) {
      if (eState == ncclProfilerKernelChStop && eStateArgs) dp::profilerKernelChStop(eHandle, eStateArgs->kernelCh.pTimer);
    }
    return ncclSuccess;
  });
}

ncclResult_t finalize(void* context) {
  return guarded(Entry::ProfilerFinalize, [&] { return dp::profilerFinalize(context); });
}

// An error from init would only make NCCL log; measurements are optional.
ncclResult_t init(int version, void** ctx, int* mask, uint64_t commId, int nNodes, int nRanks, int rank,
                  ncclDebugLogger_t logger) {
  if (ctx) *ctx = nullptr;
  dp::setLogger(logger);
  return guarded(Entry::ProfilerInit,
                 [&] { return dp::profilerInit(version, ctx, mask, commId, nNodes, nRanks, rank, logger); });
}

ncclResult_t initV1(void** ctx, int* mask) { return init(1, ctx, mask, 0, 0, 0, -1, nullptr); }
ncclResult_t initV2(void** ctx, int* mask) { return init(2, ctx, mask, 0, 0, 0, -1, nullptr); }
ncclResult_t initV3(void** ctx, int* mask) { return init(3, ctx, mask, 0, 0, 0, -1, nullptr); }
ncclResult_t initV4(void** ctx, int* mask, const char*, uint64_t commHash, int nNodes, int nRanks, int rank,
                    ncclDebugLogger_t logger) {
  return init(4, ctx, mask, commHash, nNodes, nRanks, rank, logger);
}
ncclResult_t initV5(void** ctx, uint64_t commId, int* mask, const char*, int nNodes, int nRanks, int rank,
                    ncclDebugLogger_t logger) {
  return init(5, ctx, mask, commId, nNodes, nRanks, rank, logger);
}
ncclResult_t initV6(void** ctx, uint64_t commId, int* mask, const char*, int nNodes, int nRanks, int rank,
                    ncclDebugLogger_t logger) {
  return init(6, ctx, mask, commId, nNodes, nRanks, rank, logger);
}
ncclResult_t initV7(void** ctx, uint64_t commId, int* mask, const char*, int nNodes, int nRanks, int rank,
                    ncclDebugLogger_t logger) {
  return init(7, ctx, mask, commId, nNodes, nRanks, rank, logger);
}

#define DYNAMICCL_PROFILER_TABLE(V, INIT)                                                                  \
  {.name = kName,                                                                                         \
   .init = INIT,                                                                                          \
   .startEvent = startEvent<ncclProfilerEventDescr_##V##_t>,                                              \
   .stopEvent = stopEvent,                                                                                \
   .recordEventState = recordEventState<ncclProfilerEventState_##V##_t, ncclProfilerEventStateArgs_##V##_t>, \
   .finalize = finalize}

}  // namespace

extern "C" {
extern __attribute__((visibility("default"))) const ncclProfiler_v1_t ncclProfiler_v1;
extern __attribute__((visibility("default"))) const ncclProfiler_v2_t ncclProfiler_v2;
extern __attribute__((visibility("default"))) const ncclProfiler_v3_t ncclProfiler_v3;
extern __attribute__((visibility("default"))) const ncclProfiler_v4_t ncclProfiler_v4;
extern __attribute__((visibility("default"))) const ncclProfiler_v5_t ncclProfiler_v5;
extern __attribute__((visibility("default"))) const ncclProfiler_v6_t ncclProfiler_v6;
extern __attribute__((visibility("default"))) const ncclProfiler_v7_t ncclProfiler_v7;

const ncclProfiler_v1_t ncclProfiler_v1 = DYNAMICCL_PROFILER_TABLE(v1, initV1);
const ncclProfiler_v2_t ncclProfiler_v2 = DYNAMICCL_PROFILER_TABLE(v2, initV2);
const ncclProfiler_v3_t ncclProfiler_v3 = DYNAMICCL_PROFILER_TABLE(v3, initV3);
const ncclProfiler_v4_t ncclProfiler_v4 = DYNAMICCL_PROFILER_TABLE(v4, initV4);
const ncclProfiler_v5_t ncclProfiler_v5 = DYNAMICCL_PROFILER_TABLE(v5, initV5);
const ncclProfiler_v6_t ncclProfiler_v6 = DYNAMICCL_PROFILER_TABLE(v6, initV6);
const ncclProfiler_v7_t ncclProfiler_v7 = DYNAMICCL_PROFILER_TABLE(v7, initV7);
}
