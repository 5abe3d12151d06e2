// NCCL 2.28.9 compile-time constants the model needs (device.h, comm.h, topo.h). Internal to model/.
#pragma once

#include <bit>
#include <cstdint>

namespace dynamiccl::model::nccl {

// NCCL's indices (nccl.h, device.h) as the model's tables use them.
inline constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
inline constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
inline constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;
inline constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;

inline constexpr int kWarpSize = 32;
inline constexpr int kMaxNThreads = 640;         // NCCL_MAX_NTHREADS
inline constexpr int kSimpleMaxNThreads = 512;   // NCCL_SIMPLE_MAX_NTHREADS
inline constexpr int kLLMaxNThreads = 512;       // NCCL_LL_MAX_NTHREADS
inline constexpr int kLL128MaxNThreads = 640;    // NCCL_LL128_MAX_NTHREADS
inline constexpr int kLLThreadThreshold = 8;
inline constexpr int kLL128ThreadThreshold = 8;
inline constexpr int kSimpleThreadThreshold = 64;
inline constexpr int kMaxDirectArity = 7;        // CollNet: at most 8 local ranks
inline constexpr int kMaxNvlsArity = 32;
inline constexpr int kMaxChannels = 64;          // MAXCHANNELS
// NCCL_MAX_DEV_WORK_BATCH_BYTES / sizeof(ncclDevWorkColl) = 1024 / 96.
inline constexpr int kMaxDevWorkBatchColls = 10;
inline constexpr float kPciBw = 12.0f;           // PCI_BW, GB/s (PCIe Gen3 x16)
inline constexpr float kNvlsEfficiency[4] = {0.0f, 0.0f, 0.85f, 0.74f};  // Volta..Blackwell

// NCCL's log2i (log2Down): floor(log2(n)), -1 for 0. Returns long as NCCL's does (it matters for
// the float/long arithmetic it feeds).
inline long log2i(long n) { return n <= 0 ? -1 : 63 - std::countl_zero(static_cast<uint64_t>(n)); }

}  // namespace dynamiccl::model::nccl
