// The profiler role's behaviour, one implementation behind every ABI version's entry points
// (profiler_exports.cpp decodes each version's descriptor into a CollStart).
#pragma once

#include <cstdint>

#include <array>
#include <atomic>
#include <memory>

#include "abi/abi.h"
#include "plugin/context_registry.h"
#include "plugin/profiler/profiler_records.h"

namespace dynamiccl::plugin {

struct ProfilerContext {
  ~ProfilerContext() { unregisterProfilerContext(&link); }
  static constexpr uint64_t kMagic = 0x44796e5072663031ull;  // "DynPrf01": guards against foreign pointers
  uint64_t magic = kMagic;
  int version = 0;
  int rank = -1, nRanks = 0, nNodes = 0;
  DecisionLink link;  // commId, and the decision log of this communicator's tuner context in this process
  std::array<std::atomic<uint64_t>, kNumCollectives> nextCall{};  // the next decision a Coll start matches
  // NCCL's seqNumber less the decision's call index at the last start joined (both count from the
  // communicator's first call; tasks NCCL runs unasked, a group's shared decision, move it on).
  std::array<std::atomic<uint64_t>, kNumCollectives> seqMinusCall{};

  static ProfilerContext* from(void* p) {
    auto* c = static_cast<ProfilerContext*>(p);
    return c && c->magic == kMagic ? c : nullptr;
  }
};

// The event bits we need: Coll, plus KernelCh where it carries GPU timestamps (v4+).
int profilerEventMask(int version);

ncclResult_t profilerInit(int version, void** context, int* eActivationMask, uint64_t commId, int nNodes,
                          int nRanks, int rank, ncclDebugLogger_t logger);
// Hot path. start: completed in place with the context's communicator fields and the channel expectation.
void* profilerStartColl(ProfilerContext& context, CollStart& start);
void* profilerStartKernelCh(void* parentColl, uint8_t channelId, uint64_t startTimer_ns);
ncclResult_t profilerStop(void* eHandle);
ncclResult_t profilerKernelChStop(void* eHandle, uint64_t stopTimer_ns);
ncclResult_t profilerFinalize(void* context);

}  // namespace dynamiccl::plugin
