// The tuner role's behaviour, one implementation behind every ABI version's entry points.
#pragma once

#include "abi/abi.h"

namespace dynamiccl::plugin {

ncclResult_t tunerInit(int abiVersion, void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logger, const ncclNvlDomainInfo_v5_t* nvlDomainInfo);
ncclResult_t tunerGetCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
ncclResult_t tunerGetCollInfoV2(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                                int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels);
ncclResult_t tunerGetChunkSize(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                               int nChannels, size_t* chunkSize);
ncclResult_t tunerFinalize(void* context);

}  // namespace dynamiccl::plugin
