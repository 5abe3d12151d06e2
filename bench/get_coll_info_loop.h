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

// Times decide(coll, nBytes, table, &nChannels) on a fresh copy of the table each call.
template <typename Decide>
void timeCostTableLoop(benchmark::State& state, Decide&& decide) {
  float master[7][3], table[7][3];
  fillCostTable(master);
  size_t i = 0;
  for (auto _ : state) {
    std::memcpy(table, master, sizeof table);
    int nChannels = 0;
    decide(static_cast<int>(i % 5), sizeAt(i), table, &nChannels);
    benchmark::DoNotOptimize(table);
    benchmark::DoNotOptimize(nChannels);
    ++i;
  }
}

inline void timeGetCollInfo(benchmark::State& state, harness::TunerComm& comm) {
  timeCostTableLoop(state, [&](int coll, uint64_t nBytes, float (&table)[7][3], int* nChannels) {
    comm.getCollInfoRaw(coll, nBytes, 1, reinterpret_cast<float**>(table), 7, 3, 0, nChannels);
  });
}

}  // namespace dynamiccl::bench
