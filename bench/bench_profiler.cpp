// Profiler hot path through dlopen, as NCCL calls it: ns per callback and observations per second
// pushed through the lock-free queue to the worker (log/store sinks off so the queue is measured), and
// each callback kind alone (BM_OneCallback, median_ns against the ~50 ns budget).
// DYNAMICCL_PLUGIN_PATH=<.so> measures another build of the plugin (before/after comparisons).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "offline/harness/harness.h"

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

// One callback kind alone: a batch of collectives is brought up to the measured step untimed, that step
// is timed over the whole batch (steady_clock, manual time), the rest untimed. median_ns: the median
// batch per call, which a preempted batch (2-core machines, a busy neighbour) hardly moves.
enum Step : int { kCollStart, kCollStop, kChannelStart, kChannelStopTime, kChannelStop };
constexpr int kBatch = 128;

void runStep(const Session& s, int step, void** colls, void* (*chans)[4], int nChannels, int i,
             const ProfilerColl& coll) {
  void** c = &colls[i];
  switch (step) {
    case kCollStart: s.lib->startColl(s.ctx, coll, c); break;
    case kCollStop: s.lib->stop(*c); break;
    case kChannelStart:
      for (int ch = 0; ch < nChannels; ++ch) s.lib->startKernelCh(s.ctx, *c, ch, 1000 + ch, &chans[i][ch]);
      break;
    case kChannelStopTime:
      for (int ch = 0; ch < nChannels; ++ch) s.lib->kernelChStop(chans[i][ch], 5000 + ch);
      break;
    case kChannelStop:
      for (int ch = 0; ch < nChannels; ++ch) s.lib->stop(chans[i][ch]);
      break;
  }
}

// Args: {step, channels}. With 0 channels the Coll stop completes the record (and pushes to the queue);
// with 4 the last channel stop does.
void BM_OneCallback(benchmark::State& state) {
  static Session s;
  if (!s.lib) return state.SkipWithError("plugin not found");
  const int measured = static_cast<int>(state.range(0));
  const int nChannels = static_cast<int>(state.range(1));
  const int lastStep = nChannels ? kChannelStop : kCollStop;
  const int callsPerBatch = kBatch * (measured >= kChannelStart ? nChannels : 1);
  ProfilerColl coll;
  coll.nChannels = nChannels;
  void* colls[kBatch];
  void* chans[kBatch][4];
  uint64_t seq = 0;
  std::vector<double> batch_ns;
  batch_ns.reserve(1 << 20);
  for (auto _ : state) {
    for (int step = kCollStart; step <= lastStep; ++step) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kBatch; ++i) {
        if (step == kCollStart) coll.seq = seq++;
        runStep(s, step, colls, chans, nChannels, i, coll);
      }
      if (step != measured) continue;
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      state.SetIterationTime(took.count());
      if (batch_ns.size() < batch_ns.capacity()) batch_ns.push_back(took.count() * 1e9);
    }
  }
  state.counters["ns_per_callback"] =
      benchmark::Counter(callsPerBatch, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  if (!batch_ns.empty()) {
    std::nth_element(batch_ns.begin(), batch_ns.begin() + batch_ns.size() / 2, batch_ns.end());
    state.counters["median_ns"] = batch_ns[batch_ns.size() / 2] / callsPerBatch;
  }
}
BENCHMARK(BM_OneCallback)
    ->ArgNames({"step", "channels"})
    ->Args({kCollStart, 0})
    ->Args({kCollStop, 0})
    ->Args({kCollStart, 4})
    ->Args({kCollStop, 4})
    ->Args({kChannelStart, 4})
    ->Args({kChannelStopTime, 4})
    ->Args({kChannelStop, 4})
    ->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
