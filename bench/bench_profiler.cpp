// Profiler hot path through dlopen, as NCCL calls it: ns per callback and observations per second
// pushed through the lock-free queue to the worker (log/store sinks off so the queue is measured).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <thread>

#include "harness/harness.h"

namespace {
using namespace dynamiccl::harness;

struct Session {
  Session() {
    setenv("DYNAMICCL_RECORD", "0", 1);
    unsetenv("DYNAMICCL_OBSERVATION_LOG");
    auto l = ProfilerLibrary::open(builtPluginPath(DYNAMICCL_PLUGIN_DIR), 5);
    if (!l.ok()) return;
    lib = l.value();
    lib->init({}, &mask, &ctx);
  }
  ~Session() {
    if (lib) lib->finalize(ctx);
  }
  std::shared_ptr<ProfilerLibrary> lib;
  int mask = 0;
  void* ctx = nullptr;
};

// Coll start + stop, no channels: one observation per iteration (2 callbacks).
void BM_CollStartStop(benchmark::State& state) {
  static Session s;
  if (!s.lib) return state.SkipWithError("plugin not found");
  ProfilerColl coll;
  coll.nChannels = 0;
  uint64_t seq = 0;
  for (auto _ : state) {
    void* h = nullptr;
    coll.seq = seq++;
    s.lib->startColl(s.ctx, coll, &h);
    s.lib->stop(h);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ns_per_callback"] =
      benchmark::Counter(2.0 * state.iterations(), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CollStartStop)->Threads(1)->Threads(4)->UseRealTime();

// A realistic collective: Coll start, stop, then 4 channels x (start, KernelChStop, stop) = 14 callbacks.
void BM_CollWithFourChannels(benchmark::State& state) {
  static Session s;
  if (!s.lib) return state.SkipWithError("plugin not found");
  ProfilerColl coll;
  coll.nChannels = 4;
  uint64_t seq = 0;
  for (auto _ : state) {
    void* h = nullptr;
    coll.seq = seq++;
    s.lib->startColl(s.ctx, coll, &h);
    s.lib->stop(h);
    for (int ch = 0; ch < 4; ++ch) {
      void* k = nullptr;
      s.lib->startKernelCh(s.ctx, h, ch, 1000 + ch, &k);
      s.lib->kernelChStop(k, 5000 + ch);
      s.lib->stop(k);
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ns_per_callback"] =
      benchmark::Counter(14.0 * state.iterations(), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CollWithFourChannels)->Threads(1)->Threads(4)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
