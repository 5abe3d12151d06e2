// The getCollInfo timing loop both hot-path benchmarks share: NCCL hands a fresh cost table each
// call, and sizes and collectives cycle so the branch predictor cannot learn one path.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "offline/harness/harness.h"

namespace dynamiccl::bench {

// Sizes cycle through 64 values.
inline uint64_t sizeAt(size_t i) { return (uint64_t{1} << (i % 32)) + (i * 2654435761u) % 4096; }

// A plausible table with every entry available (NCCL's float[7][3]).
inline void fillCostTable(float (&table)[7][3]) {
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p) table[a][p] = 10.0f + a + p;
}

inline void timeGetCollInfo(benchmark::State& state, harness::TunerComm& comm) {
  float master[7][3], table[7][3];
  fillCostTable(master);
  size_t i = 0;
  for (auto _ : state) {
    std::memcpy(table, master, sizeof table);
    int nChannels = 0;
    comm.getCollInfoRaw(static_cast<int>(i % 5), sizeAt(i), 1, reinterpret_cast<float**>(table), 7, 3, 0, &nChannels);
    benchmark::DoNotOptimize(table);
    benchmark::DoNotOptimize(nChannels);
    ++i;
  }
}

}  // namespace dynamiccl::bench
