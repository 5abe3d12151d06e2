// Simulator evaluations per second (the budget TPE search and RL training spend their time in).
#include <benchmark/benchmark.h>

#include "offline/sim/sim.h"

using namespace dynamiccl;

static void BM_SimTime(benchmark::State& state) {
  const sim::Simulator s(sim::preset("dgx-h100", 4).value());
  const sim::Config c{Algo::Ring, Proto::LL128, 16, 0};
  uint64_t bytes = 8;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.time_us(Collective::AllReduce, bytes, c));
    bytes = bytes >= (1ull << 32) ? 8 : bytes * 2;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimTime);

static void BM_SimNoisySample(benchmark::State& state) {
  const sim::Simulator s(sim::preset("dgx-h100", 4).value());
  sim::NoiseSource noise(1);
  const sim::Config c{Algo::Tree, Proto::Simple, 16, 0};
  for (auto _ : state) benchmark::DoNotOptimize(s.sample_us(Collective::AllReduce, 1 << 20, c, noise));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimNoisySample);

BENCHMARK_MAIN();
