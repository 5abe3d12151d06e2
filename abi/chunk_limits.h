// The chunk sizes NCCL runs correctly for a tuner's getChunkSize (tuner v6 on), per (algorithm,
// protocol) in NCCL's indices, at NCCL's default buffers, 2.30-2.31. Above the limit NCCL clamps the
// value (most pairs), or, for NVLS and NVLS_TREE, clamps it to 512 KiB over a 128 KiB buffer step, which
// the kernel overruns (NVIDIA/nccl #2408's silent corruption). docs/NCCL_CHUNKS.md has the source lines.
#pragma once

#include <cstdint>

namespace dynamiccl::abi {

// 0: NCCL never runs the pair (no chunk is right for it).
inline constexpr uint64_t kMaxTunerChunkBytes[7][3] = {
    {32768, 576000, 524288},   // Tree: LL, LL128, Simple
    {32768, 576000, 2097152},  // Ring (Simple: allreduce/allgather/reducescatter; NCCL clamps broadcast/reduce to 512 KiB)
    {0, 0, 524288},            // CollNetDirect
    {0, 0, 524288},            // CollNetChain
    {0, 0, 131072},            // NVLS: NCCL_NVLS_CHUNKSIZE's default step
    {0, 0, 131072},            // NVLS_TREE
    {0, 0, 524288},            // PAT
};
// NCCL rounds a chunk down to this grain per protocol; below one grain it becomes 0 (and NCCL divides by it).
inline constexpr uint64_t kChunkGrainBytes[3] = {16, 1920, 512};

// The largest chunk a rule may set for (algo, proto); -1 leaves that part to NCCL: the largest any
// choice it may make runs correctly.
constexpr uint64_t maxTunerChunkBytes(int algo, int proto) {
  uint64_t most = 0;
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p)
      if ((algo < 0 || a == algo) && (proto < 0 || p == proto) && kMaxTunerChunkBytes[a][p] > most)
        most = kMaxTunerChunkBytes[a][p];
  return algo >= 7 || proto >= 3 ? 0 : most;
}

}  // namespace dynamiccl::abi
