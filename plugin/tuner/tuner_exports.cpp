// The exported tuner symbols, v2..v7: thin adapters onto tuner_api, each through the one exception
// boundary (plugin/guard.h). NCCL probes newest first (2.32.6: v7). The plugin reads no tuning constant
// and edits none, so every compute-capability row (v7's fifth, Rubin, too) reaches NCCL as NCCL wrote it.
#include <cstring>

#include "abi/abi.h"
#include "plugin/guard.h"
#include "plugin/log.h"
#include "plugin/tuner/tuner_api.h"

namespace dp = dynamiccl::plugin;
using dp::Entry;
using dp::guarded;

namespace {
constexpr const char* kName = "DynamICCL";

// NCCL passes collectives outside ncclFunc_t's enumerators (alltoall, send/recv): carry it as the int
// it is, since loading an enum lvalue holding such a value is undefined (UBSan reports it).
int collAsInt(const ncclFunc_t& coll) {
  int v;
  std::memcpy(&v, &coll, sizeof v);
  return v;
}

ncclResult_t init(int version, void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                  const ncclNvlDomainInfo_v5_t* nvl) {
  if (ctx) *ctx = nullptr;  // an exception before the context exists: none, NCCL's own choices
  dp::setLogger(logger);    // so that even that is logged through NCCL
  return guarded(Entry::TunerInit, [&] { return dp::tunerInit(version, ctx, commId, nRanks, nNodes, logger, nvl); });
}

ncclResult_t initV2(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** ctx) {
  return init(2, ctx, 0, nRanks, nNodes, logger, nullptr);
}
ncclResult_t initV3(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** ctx) {
  return init(3, ctx, 0, nRanks, nNodes, logger, nullptr);
}
ncclResult_t initV4(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** ctx) {
  return init(4, ctx, 0, nRanks, nNodes, logger, nullptr);
}
ncclResult_t initV5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                    ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t*) {
  return init(5, ctx, commId, nRanks, nNodes, logger, nvl);
}
ncclResult_t initV6(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                    ncclNvlDomainInfo_v6_t* nvl, ncclTunerConstants_v6_t*) {
  return init(6, ctx, commId, nRanks, nNodes, logger, nvl);
}
ncclResult_t initV7(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                    ncclNvlDomainInfo_v7_t* nvl, ncclTunerConstants_v7_t*) {
  return init(7, ctx, commId, nRanks, nNodes, logger, nvl);
}
ncclResult_t getCollInfoV2(void* ctx, ncclFunc_t coll, size_t nBytes, int collNetSupport, int nvlsSupport,
                           int numPipeOps, int* algorithm, int* protocol, int* nChannels) {
  const int c = collAsInt(coll);
  return guarded(Entry::GetCollInfo, [&] {
    return dp::tunerGetCollInfoV2(ctx, static_cast<ncclFunc_t>(c), nBytes, collNetSupport, nvlsSupport, numPipeOps,
                                  algorithm, protocol, nChannels);
  });
}
ncclResult_t getCollInfoV3(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                           int numProto, int* nChannels) {
  const int c = collAsInt(coll);
  return guarded(Entry::GetCollInfo, [&] {
    return dp::tunerGetCollInfo(ctx, static_cast<ncclFunc_t>(c), nBytes, numPipeOps, table, numAlgo, numProto, 0,
                                nChannels);
  });
}
ncclResult_t getCollInfo(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                         int numProto, int regBuff, int* nChannels) {
  const int c = collAsInt(coll);
  return guarded(Entry::GetCollInfo, [&] {
    return dp::tunerGetCollInfo(ctx, static_cast<ncclFunc_t>(c), nBytes, numPipeOps, table, numAlgo, numProto, regBuff,
                                nChannels);
  });
}
ncclResult_t getChunkSize(void* ctx, ncclFunc_t coll, size_t nBytes, int algo, int proto, int nChannels,
                          size_t* chunkSize) {
  const int c = collAsInt(coll);
  return guarded(Entry::GetChunkSize, [&] {
    return dp::tunerGetChunkSize(ctx, static_cast<ncclFunc_t>(c), nBytes, algo, proto, nChannels, chunkSize);
  });
}
ncclResult_t finalize(void* ctx) {
  return guarded(Entry::TunerFinalize, [&] { return dp::tunerFinalize(ctx); });
}
}  // namespace

extern "C" {
extern __attribute__((visibility("default"))) const ncclTuner_v2_t ncclTunerPlugin_v2;
extern __attribute__((visibility("default"))) const ncclTuner_v3_t ncclTunerPlugin_v3;
extern __attribute__((visibility("default"))) const ncclTuner_v4_t ncclTunerPlugin_v4;
extern __attribute__((visibility("default"))) const ncclTuner_v5_t ncclTunerPlugin_v5;
extern __attribute__((visibility("default"))) const ncclTuner_v6_t ncclTunerPlugin_v6;
extern __attribute__((visibility("default"))) const ncclTuner_v7_t ncclTunerPlugin_v7;

const ncclTuner_v2_t ncclTunerPlugin_v2 = {.name = kName, .init = initV2, .getCollInfo = getCollInfoV2, .destroy = finalize};
const ncclTuner_v3_t ncclTunerPlugin_v3 = {.name = kName, .init = initV3, .getCollInfo = getCollInfoV3, .destroy = finalize};
const ncclTuner_v4_t ncclTunerPlugin_v4 = {.name = kName, .init = initV4, .getCollInfo = getCollInfo, .destroy = finalize};
const ncclTuner_v5_t ncclTunerPlugin_v5 = {.name = kName, .init = initV5, .getCollInfo = getCollInfo, .finalize = finalize};
const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = kName, .init = initV6, .getCollInfo = getCollInfo, .finalize = finalize, .getChunkSize = getChunkSize};
const ncclTuner_v7_t ncclTunerPlugin_v7 = {
    .name = kName, .init = initV7, .getCollInfo = getCollInfo, .finalize = finalize, .getChunkSize = getChunkSize};
}
