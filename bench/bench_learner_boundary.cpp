// The learner's boundary cost (OnlineLearner::build, on the leader off the hot path, once per epoch)
// against the arms it holds per key. Each case runs a searching job over `keys` keys whose cost tables
// allow `pairs` (algorithm, protocol) cells, each timed at the channel count it ran (the channel search
// adds arms of its own), then times one build. Printed per case: us per build, the arms measured per
// key (pairs and channel counts together) and the keys.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "learner/learner.h"

namespace {

using namespace dynamiccl;
using namespace dynamiccl::learner;

constexpr int kAllReduce = 4;

// A host that runs the asked count up to 64 channels, else its own 8; latency falls with channels to a
// knee, and differs by pair.
double latency_us(int pair, int channels, uint64_t bytes) {
  const double c = channels > 0 ? channels : 8;
  return (10 + pair) * (1 + std::log2(static_cast<double>(bytes)) / 20) + 200.0 / c + 0.3 * c;
}

struct Job {
  std::unique_ptr<OnlineLearner> learner;
  std::unique_ptr<OnlineTable> table;
  double armsPerKey = 0;
  uint64_t version = 0;
};

Job searchedJob(int keys, int pairs, uint64_t callsPerKey) {
  OnlineConfig config;
  config.mode = LearnerMode::Search;
  config.channelsCapOnly = false;
  config.maxChannels = 64;
  Job job;
  job.learner = std::make_unique<OnlineLearner>(config, [](int, int) { return Candidates{}; },
                                                [](int, int) { return Candidates{}; });
  std::vector<uint64_t> sizes;
  for (int k = 0; k < keys; ++k) sizes.push_back(uint64_t{1} << (10 + k % 20));  // 20 sizes per collective
  std::vector<std::set<std::tuple<int, int, int>>> armsSeen(keys);
  for (int k = 0; k < keys; ++k) {
    const int coll = kAllReduce - k / 20;
    const int bucket = SizeBucket::of(sizes[k]);
    job.learner->setNcclDefault(coll, bucket, Algo::Ring, Proto::Simple);
    float table[kNumAlgos * kNumProtos];
    std::fill(std::begin(table), std::end(table), -1.0f);
    for (int p = 0; p < pairs; ++p) table[p] = 10.0f + 0.5f * static_cast<float>(p);
    table[static_cast<int>(Algo::Ring) * kNumProtos + static_cast<int>(Proto::Simple)] = 10.0f;
    job.learner->setModelledCost(coll, bucket, table);
  }
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0, 0.03);
  const Decision nccl{Algo::Ring, Proto::Simple, 0, 0};
  for (uint64_t i = 0; i < callsPerKey * keys; ++i) {
    if (i % 1000 == 0) job.table = job.learner->build(++job.version);
    const int k = static_cast<int>(i % keys);
    const int coll = kAllReduce - k / 20;
    const Candidates* c = job.table->pick(coll, sizes[k], 0xabc, i);
    const Decision d = c ? c->decisions[0] : nccl;
    const int pair = static_cast<int>(d.algo) * kNumProtos + static_cast<int>(d.proto);
    const int ran = d.nChannels > 0 ? std::min(d.nChannels, 64) : 8;
    armsSeen[k].insert({static_cast<int>(d.algo), static_cast<int>(d.proto), ran});
    job.learner->observe(coll, sizes[k], d.algo, d.proto, ran, latency_us(pair, ran, sizes[k]) * noise(rng), d.nChannels);
  }
  double arms = 0;
  for (const auto& s : armsSeen) arms += static_cast<double>(s.size());
  job.armsPerKey = arms / keys;
  return job;
}

void BM_LearnerBoundary(benchmark::State& state) {
  const int keys = static_cast<int>(state.range(0)), pairs = static_cast<int>(state.range(1));
  Job job = searchedJob(keys, pairs, 2000);
  for (auto _ : state) {
    auto t = job.learner->build(++job.version);
    benchmark::DoNotOptimize(t);
  }
  state.counters["arms_per_key"] = job.armsPerKey;
  state.counters["keys"] = keys;
}
BENCHMARK(BM_LearnerBoundary)
    ->ArgsProduct({{18, 90}, {1, 3, 9, 21}})
    ->ArgNames({"keys", "pairs"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
