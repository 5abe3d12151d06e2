// A stand-in tuner for the harness's v7 test: its v7 init edits the fifth (Rubin) compute-capability
// row, its v6 init the fourth (Blackwell), so a test sees which constants each interface reaches.
#include "abi/abi.h"

namespace {
ncclResult_t initV7(void** ctx, uint64_t, size_t, size_t, ncclDebugLogger_t, ncclNvlDomainInfo_v7_t*,
                    ncclTunerConstants_v7_t* k) {
  *ctx = nullptr;
  if (k) k->perChMaxTreeBws[DYNAMICCL_NCCL_RUBIN_COMPCAP_IDX][0] += 1.0;
  return ncclSuccess;
}
ncclResult_t initV6(void** ctx, uint64_t, size_t, size_t, ncclDebugLogger_t, ncclNvlDomainInfo_v6_t*,
                    ncclTunerConstants_v6_t* k) {
  *ctx = nullptr;
  if (k) k->perChMaxTreeBws[DYNAMICCL_NCCL_NUM_COMPCAPS_V5 - 1][0] += 1.0;
  return ncclSuccess;
}
ncclResult_t getCollInfo(void*, ncclFunc_t, size_t, int, float**, int, int, int, int*) { return ncclSuccess; }
ncclResult_t finalize(void*) { return ncclSuccess; }
}  // namespace

extern "C" {
__attribute__((visibility("default"))) extern const ncclTuner_v7_t ncclTunerPlugin_v7;
__attribute__((visibility("default"))) extern const ncclTuner_v6_t ncclTunerPlugin_v6;
const ncclTuner_v7_t ncclTunerPlugin_v7 = {"RubinRow", initV7, getCollInfo, finalize, nullptr};
const ncclTuner_v6_t ncclTunerPlugin_v6 = {"RubinRow", initV6, getCollInfo, finalize, nullptr};
}
