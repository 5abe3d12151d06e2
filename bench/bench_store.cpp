// Rows per second into SQLite through the batched Writer (budget: >= 100k rows/s, ARCHITECTURE.md).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "store/store.h"

namespace {

using namespace dynamiccl;

void BM_WriterRowsPerSecond(benchmark::State& state) {
  char tmpl[] = "/tmp/dynamiccl_bench_store_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto store = store::Store::open({.path = dir + "/bench.db"});
  if (!store) return state.SkipWithError(store.error().c_str());
  store::RunInfo runInfo;
  runInfo.source = "bench";
  auto run = (*store)->addRun(runInfo);
  auto comm = (*store)->addCommunicator({*run, 1, 8, 1, 0});
  auto writer = store::Writer::create(**store);
  if (!comm || !writer) return state.SkipWithError("setup failed");

  const auto batchRows = static_cast<int>(state.range(0));
  store::Batch batch;
  for (int i = 0; i < batchRows; ++i) {
    store::ObservationRow o;
    o.comm_row = *comm;
    o.seq = i;
    o.collective = "allreduce";
    o.bytes = uint64_t{1} << (i % 32);
    o.algo = i % 2 ? Algo::Ring : Algo::Tree;
    o.proto = Proto::Simple;
    o.n_channels = 16;
    o.gpu_us = 12.5 + i;
    o.cpu_us = 14.0 + i;
    o.ts_ns = i;
    batch.observations.push_back(o);
  }
  for (auto _ : state) {
    if (!(*writer)->write(batch).committed) state.SkipWithError("batch dropped");
  }
  state.counters["rows_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()) * batchRows,
                                                    benchmark::Counter::kIsRate);
  std::system(("rm -rf " + dir).c_str());
}
BENCHMARK(BM_WriterRowsPerSecond)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
