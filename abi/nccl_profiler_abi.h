// Our own declarations of NCCL's profiler plugin ABI (v1..v7), written from NCCL's
// src/include/plugin/profiler/profiler_v{1..5}.h (v2.28.9-1), profiler_v6.h (v2.29.2-1) and
// profiler_v7.h (v2.31.2-1) and checked
// below at compile time against the sizes/offsets those headers give on LP64 (measured with g++).
// Only the members the profiler role reads are spelled out; the rest is kept as layout padding.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

// Included from the end of abi/nccl_abi.h: ncclResult_t and ncclDebugLogger_t are declared there.

extern "C" {

// Event type bits (nccl_profiler.h); eActivationMask is one process-wide int of these.
enum : uint64_t {
  ncclProfileGroup = 1u << 0,
  ncclProfileColl = 1u << 1,
  ncclProfileP2p = 1u << 2,
  ncclProfileProxyOp = 1u << 3,
  ncclProfileProxyStep = 1u << 4,
  ncclProfileProxyCtrl = 1u << 5,
  ncclProfileKernelCh = 1u << 6,  // v3+; pTimer from v4
  ncclProfileNetPlugin = 1u << 7,
  ncclProfileGroupApi = 1u << 8,  // v5+
  ncclProfileCollApi = 1u << 9,
  ncclProfileP2pApi = 1u << 10,
  ncclProfileKernelLaunch = 1u << 11,
  ncclProfileCeColl = 1u << 12,  // v6+
  ncclProfileCeSync = 1u << 13,
  ncclProfileCeBatch = 1u << 14,
  ncclProfileKernelPhase = 1u << 15,  // v7+: per-channel phases, children of a KernelCh
};

// States; only KernelChStop matters to us, the enum just has NCCL's int width.
typedef enum {
  ncclProfilerProxyOpSendPosted = 0,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupEndApiStart = 24,
  ncclProfilerCeBatchComplete = 30,
  ncclProfilerKernelPhaseStop = 31,  // v7: args.kernelCh.pTimer = the phase's stop
} ncclProfilerEventState_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v7_t;

// ---- v1 (2.23.4): numeric func/datatype/algo/proto ----
typedef struct {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  uint8_t func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  uint8_t datatype;
  uint32_t op;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  uint8_t algo;
  uint8_t proto;
  int isCollnet;
  int isNvls;
} ncclProfilerCollDescr_v1_t;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v1_t coll;
    unsigned char layout_v1[96];  // p2p, proxyOp, proxyStep: not read
  };
} ncclProfilerEventDescr_v1_t;

typedef union {
  struct { size_t transSize; int steps; } proxyOp;
  struct { int appendedProxyOps; } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

// ---- v2 (2.24.3): names as strings ----
typedef struct {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
} ncclProfilerCollDescr_v2_t;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v2_t coll;
  };
} ncclProfilerEventDescr_v2_t;
typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;

// ---- v3 (2.26.2): no trafficBytes; KernelCh (channelId only) ----
typedef struct {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
} ncclProfilerCollDescr_v3_t;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v3_t coll;
    struct { uint8_t channelId; } kernelCh;
  };
} ncclProfilerEventDescr_v3_t;
typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

// ---- v4 (2.27.3): no name/commHash in coll; nChannels = channels used; KernelCh pTimer ----
typedef struct {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
} ncclProfilerCollDescr_v4_t;

typedef struct {
  uint8_t channelId;
  uint64_t pTimer;  // GPU globaltimer (ns) at channel start
} ncclProfilerKernelChDescr_v4_t;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v4_t coll;
    ncclProfilerKernelChDescr_v4_t kernelCh;
  };
} ncclProfilerEventDescr_v4_t;

typedef union {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void* data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;  // GPU globaltimer (ns) at channel stop
} ncclProfilerEventStateArgs_v4_t;

// ---- v5 (2.28.3): 64-bit type; coll gains parentGroup; init takes commId first ----
typedef struct {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;
} ncclProfilerCollDescr_v5_t;

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v5_t coll;
    ncclProfilerKernelChDescr_v4_t kernelCh;
    unsigned char layout_v5[88];
  };
} ncclProfilerEventDescr_v5_t;
typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v5_t;

// ---- v6 (2.29.2): v5 plus CE events (same size) ----
typedef ncclProfilerEventDescr_v5_t ncclProfilerEventDescr_v6_t;
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

// ---- v7 (2.31.2): coll gains kernelVariant, isSymColl, userTag; KernelPhase events ----
typedef struct {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;   // symmetric kernels: the variant's suffix, not an algorithm name
  const char* proto;  // symmetric kernels: ""
  void* parentGroup;
  const char* kernelVariant;  // symmetric kernels only ("AllReduce_AGxLL_R"); null otherwise
  bool isSymColl;
  uint64_t userTag;  // per-call ncclCollConfig_t userProfilerTag; 0 untagged
} ncclProfilerCollDescr_v7_t;

typedef struct {
  uint8_t channelId;
  uint8_t phaseId;  // 0 initial sync, 1 compute, 2 final sync
  const char* phaseName;
  uint64_t pTimer;  // GPU globaltimer (ns) at the phase's start
} ncclProfilerKernelPhaseDescr_v7_t;

typedef struct {
  uint64_t type;
  void* parentObj;  // KernelPhase: the KernelCh handle
  int rank;
  union {
    ncclProfilerCollDescr_v7_t coll;
    ncclProfilerKernelChDescr_v4_t kernelCh;
    ncclProfilerKernelPhaseDescr_v7_t kernelPhase;
    unsigned char layout_v7[112];  // collApi, p2pApi, p2p, ceColl (+userTag) ...: not read
  };
} ncclProfilerEventDescr_v7_t;
typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v7_t;  // KernelPhaseStop reuses kernelCh

#define DYNAMICCL_PROFILER_STRUCT(V, INIT_ARGS)                                                          \
  typedef struct {                                                                                      \
    const char* name;                                                                                   \
    ncclResult_t(*init) INIT_ARGS;                                                                      \
    ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_##V##_t* eDescr);  \
    ncclResult_t (*stopEvent)(void* eHandle);                                                           \
    ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_##V##_t eState,              \
                                     ncclProfilerEventStateArgs_##V##_t* eStateArgs);                   \
    ncclResult_t (*finalize)(void* context);                                                            \
  } ncclProfiler_##V##_t;

DYNAMICCL_PROFILER_STRUCT(v1, (void** context, int* eActivationMask))
DYNAMICCL_PROFILER_STRUCT(v2, (void** context, int* eActivationMask))
DYNAMICCL_PROFILER_STRUCT(v3, (void** context, int* eActivationMask))
DYNAMICCL_PROFILER_STRUCT(v4, (void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                               int nNodes, int nranks, int rank, ncclDebugLogger_t logfn))
DYNAMICCL_PROFILER_STRUCT(v5, (void** context, uint64_t commId, int* eActivationMask, const char* commName,
                               int nNodes, int nranks, int rank, ncclDebugLogger_t logfn))
DYNAMICCL_PROFILER_STRUCT(v6, (void** context, uint64_t commId, int* eActivationMask, const char* commName,
                               int nNodes, int nranks, int rank, ncclDebugLogger_t logfn))
DYNAMICCL_PROFILER_STRUCT(v7, (void** context, uint64_t commId, int* eActivationMask, const char* commName,
                               int nNodes, int nranks, int rank, ncclDebugLogger_t logfn))
#undef DYNAMICCL_PROFILER_STRUCT

}  // extern "C"

// ---- compile-time checks: the numbers NCCL's own headers give (g++, x86-64/aarch64 LP64) ----
#define DYNAMICCL_OFF(T, m) offsetof(ncclProfilerEventDescr_##T##_t, m)
static_assert(sizeof(ncclProfilerEventState_t) == 4);
static_assert(sizeof(ncclProfilerEventDescr_v1_t) == 120 && DYNAMICCL_OFF(v1, parentObj) == 8 &&
              DYNAMICCL_OFF(v1, rank) == 16 && DYNAMICCL_OFF(v1, coll) == 24);
static_assert(DYNAMICCL_OFF(v1, coll.commHash) == 32 && DYNAMICCL_OFF(v1, coll.seqNumber) == 40 &&
              DYNAMICCL_OFF(v1, coll.func) == 48 && DYNAMICCL_OFF(v1, coll.count) == 72 &&
              DYNAMICCL_OFF(v1, coll.datatype) == 84 && DYNAMICCL_OFF(v1, coll.nMaxChannels) == 104 &&
              DYNAMICCL_OFF(v1, coll.algo) == 106 && DYNAMICCL_OFF(v1, coll.proto) == 107 &&
              DYNAMICCL_OFF(v1, coll.isNvls) == 112);
static_assert(sizeof(ncclProfilerEventDescr_v2_t) == 128 && DYNAMICCL_OFF(v2, coll.commHash) == 32 &&
              DYNAMICCL_OFF(v2, coll.seqNumber) == 40 && DYNAMICCL_OFF(v2, coll.func) == 48 &&
              DYNAMICCL_OFF(v2, coll.count) == 72 && DYNAMICCL_OFF(v2, coll.datatype) == 88 &&
              DYNAMICCL_OFF(v2, coll.nMaxChannels) == 104 && DYNAMICCL_OFF(v2, coll.algo) == 112 &&
              DYNAMICCL_OFF(v2, coll.proto) == 120);
static_assert(sizeof(ncclProfilerEventDescr_v3_t) == 120 && DYNAMICCL_OFF(v3, coll.seqNumber) == 40 &&
              DYNAMICCL_OFF(v3, coll.func) == 48 && DYNAMICCL_OFF(v3, coll.count) == 72 &&
              DYNAMICCL_OFF(v3, coll.datatype) == 88 && DYNAMICCL_OFF(v3, coll.nMaxChannels) == 96 &&
              DYNAMICCL_OFF(v3, coll.algo) == 104 && DYNAMICCL_OFF(v3, coll.proto) == 112 &&
              DYNAMICCL_OFF(v3, kernelCh.channelId) == 24);
static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 104 && DYNAMICCL_OFF(v4, coll.seqNumber) == 24 &&
              DYNAMICCL_OFF(v4, coll.func) == 32 && DYNAMICCL_OFF(v4, coll.count) == 56 &&
              DYNAMICCL_OFF(v4, coll.datatype) == 72 && DYNAMICCL_OFF(v4, coll.nChannels) == 80 &&
              DYNAMICCL_OFF(v4, coll.algo) == 88 && DYNAMICCL_OFF(v4, coll.proto) == 96 &&
              DYNAMICCL_OFF(v4, kernelCh.pTimer) == 32);
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112 && DYNAMICCL_OFF(v5, parentObj) == 8 &&
              DYNAMICCL_OFF(v5, rank) == 16 && DYNAMICCL_OFF(v5, coll.seqNumber) == 24 &&
              DYNAMICCL_OFF(v5, coll.func) == 32 && DYNAMICCL_OFF(v5, coll.count) == 56 &&
              DYNAMICCL_OFF(v5, coll.datatype) == 72 && DYNAMICCL_OFF(v5, coll.nChannels) == 80 &&
              DYNAMICCL_OFF(v5, coll.algo) == 88 && DYNAMICCL_OFF(v5, coll.proto) == 96 &&
              DYNAMICCL_OFF(v5, coll.parentGroup) == 104 && DYNAMICCL_OFF(v5, kernelCh.pTimer) == 32);
static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 112, "v6 adds CE members within the same 112 bytes");
static_assert(sizeof(ncclProfilerEventDescr_v7_t) == 136 && DYNAMICCL_OFF(v7, parentObj) == 8 &&
              DYNAMICCL_OFF(v7, rank) == 16 && DYNAMICCL_OFF(v7, coll.seqNumber) == 24 &&
              DYNAMICCL_OFF(v7, coll.func) == 32 && DYNAMICCL_OFF(v7, coll.count) == 56 &&
              DYNAMICCL_OFF(v7, coll.datatype) == 72 && DYNAMICCL_OFF(v7, coll.nChannels) == 80 &&
              DYNAMICCL_OFF(v7, coll.algo) == 88 && DYNAMICCL_OFF(v7, coll.proto) == 96 &&
              DYNAMICCL_OFF(v7, coll.parentGroup) == 104 && DYNAMICCL_OFF(v7, coll.kernelVariant) == 112 &&
              DYNAMICCL_OFF(v7, coll.isSymColl) == 120 && DYNAMICCL_OFF(v7, coll.userTag) == 128);
static_assert(DYNAMICCL_OFF(v7, kernelCh.channelId) == 24 && DYNAMICCL_OFF(v7, kernelCh.pTimer) == 32 &&
              DYNAMICCL_OFF(v7, kernelPhase.channelId) == 24 && DYNAMICCL_OFF(v7, kernelPhase.phaseId) == 25 &&
              DYNAMICCL_OFF(v7, kernelPhase.phaseName) == 32 && DYNAMICCL_OFF(v7, kernelPhase.pTimer) == 40);
static_assert(sizeof(ncclProfilerEventStateArgs_v1_t) == 16 && sizeof(ncclProfilerEventStateArgs_v4_t) == 8);
static_assert(sizeof(ncclProfiler_v1_t) == 48 && offsetof(ncclProfiler_v1_t, finalize) == 40);
static_assert(sizeof(ncclProfiler_v5_t) == 48 && offsetof(ncclProfiler_v5_t, recordEventState) == 32);
static_assert(sizeof(ncclProfiler_v6_t) == 48 && offsetof(ncclProfiler_v6_t, startEvent) == 16);
static_assert(sizeof(ncclProfiler_v7_t) == 48 && offsetof(ncclProfiler_v7_t, recordEventState) == 32 &&
              sizeof(ncclProfilerEventStateArgs_v7_t) == 8);
#undef DYNAMICCL_OFF
