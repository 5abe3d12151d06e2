// Our own declarations of NCCL's tuner plugin ABI (v2..v7), written from shared/NCCL_FACTS.md and NCCL's
// tuner_v*.h (v7: 2.32.6), checked below at compile time (sizes and member offsets on LP64). Header-only; no NCCL header needed.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

// Subsystem flags NCCL's logger filters on.
enum : unsigned long { NCCL_INIT = 0x1, NCCL_TUNING = 0x40, NCCL_PROFILE = 0x4000 };

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);

typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclNumFuncs = 8,  // 2.28 core has more (AlltoAll, Scatter, Gather); only 0..4 reach the tuner
} ncclFunc_t;

#define DYNAMICCL_NCCL_NUM_ALGORITHMS 7
#define DYNAMICCL_NCCL_NUM_PROTOCOLS 3
#define DYNAMICCL_NCCL_ALGO_PROTO_IGNORE (-1.0f)

// ---- tuner v2 (NCCL 2.21.5+) ----
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int* algorithm, int* protocol,
                              int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

// ---- tuner v3 (2.22.3+): the cost table; collCostTable is float[7][3] cast to float** ----
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

// ---- tuner v4 (2.24.3+): regBuff before nChannels ----
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

// ---- tuner v5 (2.28.3+): context first, commId, NVL domain info, tuning constants, finalize ----
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

// NCCL core's layout (with perChMaxNVLSTreeBws; the example header lacks it). Never copy by sizeof.
typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
} ncclTunerConstants_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

// ---- tuner v6 (2.30.3+): optional getChunkSize, last member ----
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;
typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                       ncclTunerConstants_v6_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t* chunkSize);
} ncclTuner_v6_t;

// ---- tuner v7 (2.32.6+): a fifth compute-capability row (Rubin) in the constants; calls as v6 ----
#define DYNAMICCL_NCCL_NUM_COMPCAPS_V5 4
#define DYNAMICCL_NCCL_NUM_COMPCAPS_V7 5  // Volta, Ampere, Hopper, Blackwell, Rubin
#define DYNAMICCL_NCCL_RUBIN_COMPCAP_IDX 4
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v7_t;
typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[DYNAMICCL_NCCL_NUM_COMPCAPS_V7][3];
  double perChMaxRingLL128Bws[DYNAMICCL_NCCL_NUM_COMPCAPS_V7][3];
  double perChMaxTreeLL128Bws[DYNAMICCL_NCCL_NUM_COMPCAPS_V7][3];
  double perChMaxTreeBws[DYNAMICCL_NCCL_NUM_COMPCAPS_V7][3];
  double perChMaxNVLSTreeBws[DYNAMICCL_NCCL_NUM_COMPCAPS_V7][3];
} ncclTunerConstants_v7_t;
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t* nvlDomainInfo,
                       ncclTunerConstants_v7_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t* chunkSize);
} ncclTuner_v7_t;

}  // extern "C"

// ---- compile-time checks of the layout NCCL expects (LP64) ----
static_assert(sizeof(void*) == 8, "DynamICCL targets LP64 platforms");
static_assert(sizeof(ncclFunc_t) == 4 && sizeof(ncclResult_t) == 4);
static_assert(sizeof(ncclTuner_v2_t) == 32 && offsetof(ncclTuner_v2_t, getCollInfo) == 16);
static_assert(sizeof(ncclTuner_v3_t) == 32 && offsetof(ncclTuner_v3_t, destroy) == 24);
static_assert(sizeof(ncclTuner_v4_t) == 32 && offsetof(ncclTuner_v4_t, destroy) == 24);
static_assert(sizeof(ncclTuner_v5_t) == 32 && offsetof(ncclTuner_v5_t, finalize) == 24);
static_assert(sizeof(ncclTuner_v6_t) == 40 && offsetof(ncclTuner_v6_t, getChunkSize) == 32);
static_assert(sizeof(ncclNvlDomainInfo_v5_t) == 12);
static_assert(sizeof(ncclTunerConstants_v5_t) == 1152, "core layout: (21 + 63 + 5*12) doubles");
static_assert(offsetof(ncclTunerConstants_v5_t, hwLatencies) == 21 * 8);
static_assert(offsetof(ncclTunerConstants_v5_t, llMaxBws) == 84 * 8);
static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxRingLL128Bws) == 96 * 8);
static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxTreeLL128Bws) == 108 * 8);
static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxTreeBws) == 120 * 8);
static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws) == 132 * 8);
static_assert(sizeof(ncclTuner_v7_t) == 40 && offsetof(ncclTuner_v7_t, init) == 8 &&
              offsetof(ncclTuner_v7_t, getCollInfo) == 16 && offsetof(ncclTuner_v7_t, finalize) == 24 &&
              offsetof(ncclTuner_v7_t, getChunkSize) == 32);
static_assert(sizeof(ncclNvlDomainInfo_v7_t) == 12);
static_assert(sizeof(ncclTunerConstants_v7_t) == 1272, "2.32.6: (21 + 63 + 5*15) doubles");
static_assert(offsetof(ncclTunerConstants_v7_t, hwLatencies) == 21 * 8);
static_assert(offsetof(ncclTunerConstants_v7_t, llMaxBws) == 84 * 8);
static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxRingLL128Bws) == 99 * 8);
static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxTreeLL128Bws) == 114 * 8);
static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxTreeBws) == 129 * 8);
static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxNVLSTreeBws) == 144 * 8);

namespace dynamiccl::abi {
// NCCL's cost table is a contiguous float[7][3]; index it through this type, never as float**.
using CostTable = float (*)[DYNAMICCL_NCCL_NUM_PROTOCOLS];
inline CostTable asCostTable(float** table) { return reinterpret_cast<CostTable>(table); }
inline float** asNcclArgument(float (*table)[DYNAMICCL_NCCL_NUM_PROTOCOLS]) {
  return reinterpret_cast<float**>(table);
}
}  // namespace dynamiccl::abi
#include "abi/nccl_profiler_abi.h"  // profiler ABI v1..v7 (needs ncclResult_t, ncclDebugLogger_t above)
