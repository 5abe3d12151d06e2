// The exported tuner symbols, v2..v6: thin adapters onto tuner_api. NCCL probes newest first.
#include "plugin/abi/abi.h"
#include "plugin/tuner/tuner_api.h"

namespace dp = dynamiccl::plugin;

namespace {
constexpr const char* kName = "DynamICCL";

ncclResult_t initV2(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** ctx) {
  return dp::tunerInit(2, ctx, 0, nRanks, nNodes, logger, nullptr);
}
ncclResult_t initV3(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** ctx) {
  return dp::tunerInit(3, ctx, 0, nRanks, nNodes, logger, nullptr);
}
ncclResult_t initV4(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** ctx) {
  return dp::tunerInit(4, ctx, 0, nRanks, nNodes, logger, nullptr);
}
ncclResult_t initV5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                    ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t*) {
  return dp::tunerInit(5, ctx, commId, nRanks, nNodes, logger, nvl);
}
ncclResult_t initV6(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                    ncclNvlDomainInfo_v6_t* nvl, ncclTunerConstants_v6_t*) {
  return dp::tunerInit(6, ctx, commId, nRanks, nNodes, logger, nvl);
}
ncclResult_t getCollInfoV3(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                           int numProto, int* nChannels) {
  return dp::tunerGetCollInfo(ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, 0, nChannels);
}
}  // namespace

extern "C" {
extern __attribute__((visibility("default"))) const ncclTuner_v2_t ncclTunerPlugin_v2;
extern __attribute__((visibility("default"))) const ncclTuner_v3_t ncclTunerPlugin_v3;
extern __attribute__((visibility("default"))) const ncclTuner_v4_t ncclTunerPlugin_v4;
extern __attribute__((visibility("default"))) const ncclTuner_v5_t ncclTunerPlugin_v5;
extern __attribute__((visibility("default"))) const ncclTuner_v6_t ncclTunerPlugin_v6;

const ncclTuner_v2_t ncclTunerPlugin_v2 = {kName, initV2, dp::tunerGetCollInfoV2, dp::tunerFinalize};
const ncclTuner_v3_t ncclTunerPlugin_v3 = {kName, initV3, getCollInfoV3, dp::tunerFinalize};
const ncclTuner_v4_t ncclTunerPlugin_v4 = {kName, initV4, dp::tunerGetCollInfo, dp::tunerFinalize};
const ncclTuner_v5_t ncclTunerPlugin_v5 = {kName, initV5, dp::tunerGetCollInfo, dp::tunerFinalize};
const ncclTuner_v6_t ncclTunerPlugin_v6 = {kName, initV6, dp::tunerGetCollInfo, dp::tunerFinalize,
                                           dp::tunerGetChunkSize};
}
