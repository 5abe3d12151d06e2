// An epoch boundary's cost in the coordination store: the leader publishes the next table version
// (write-once) and a rank reads and parses it (adopts it), with a table of every key filled; and the
// cost of one read-ahead poll, which every rank makes every 10 ms. Backends: etcd on loopback
// (started here on free ports; skipped without the etcd binary) and a directory (the single-node default).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "coord/coord.h"
#include "policy/policy.h"
#include "learner/learner.h"
#include "tests/etcd_fixture.h"

namespace {

using namespace dynamiccl;

std::string fullTable() {
  learner::OnlineTable t;
  t.setVersion(7);
  for (uint32_t k = 0; k < learner::kOnlineKeys; ++k) t.entry(k).exploit.count = 1;
  return t.serialize();
}

void boundaries(benchmark::State& state, coord::RecordStore& store) {
  const std::string bytes = fullTable();
  static uint64_t commId = 0xb0b0000000000000ull + static_cast<uint64_t>(getpid()) * 1000;
  ++commId;
  uint64_t boundary = 0;
  for (auto _ : state) {
    boundary += 1000;
    if (store.publish(commId, boundary, bytes) != coord::PublishResult::Won) state.SkipWithError("publish failed");
    auto back = store.read(commId, boundary);
    if (!back.ok() || !back->has_value() || **back != bytes) state.SkipWithError("read failed");
    auto adopted = learner::OnlineTable::deserialize(**back);  // what a rank does with it at the boundary
    if (!adopted.ok()) state.SkipWithError("the table does not parse");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.SetLabel(std::to_string(bytes.size()) + "-byte table: publish + read + parse");
}

// Every rank's read-ahead poll (once a second; every 20 ms near a boundary): whether the newest record
// it holds is still there (not its bytes) and the next two boundaries, which do not exist yet, in one request.
void readAheadPolls(benchmark::State& state, coord::RecordStore& store) {
  const std::string bytes = fullTable();
  static uint64_t commId = 0xb0b1000000000000ull + static_cast<uint64_t>(getpid()) * 1000;
  ++commId;
  if (store.publish(commId, 1000, bytes) != coord::PublishResult::Won) return state.SkipWithError("publish failed");
  for (auto _ : state) {
    auto recs = store.readMany(commId, {1000, 2000, 3000}, 1);
    if (!recs.ok() || recs->size() != 3 || (*recs)[0] != std::string() || (*recs)[1]) state.SkipWithError("read failed");
  }
  state.SetLabel("held record + 2 boundaries ahead, one request");
}

template <class Bench>
void onEtcd(benchmark::State& state, Bench bench) {
  if (testing::etcdBinary().empty()) return state.SkipWithError("no etcd binary (scripts/setup.sh)");
  static testing::EtcdCluster etcd;
  static const bool ready = etcd.ready();
  if (!ready) return state.SkipWithError("etcd did not start");
  coord::EtcdOptions o;
  o.endpoints = {etcd.endpoint()};
  auto store = coord::openEtcdStore(o);
  if (!store.ok()) return state.SkipWithError(store.error().c_str());
  bench(state, **store);
}

template <class Bench>
void inDirectory(benchmark::State& state, Bench bench) {
  char tmpl[] = "/tmp/dynamiccl-bench-dir-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto store = coord::openDirStore(dir, true);
  if (!store.ok()) return state.SkipWithError(store.error().c_str());
  bench(state, **store);
  std::filesystem::remove_all(dir);
}

void BM_BoundaryEtcdLoopback(benchmark::State& state) { onEtcd(state, boundaries); }
BENCHMARK(BM_BoundaryEtcdLoopback)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_BoundaryDirectory(benchmark::State& state) { inDirectory(state, boundaries); }
BENCHMARK(BM_BoundaryDirectory)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ReadAheadPollEtcdLoopback(benchmark::State& state) { onEtcd(state, readAheadPolls); }
BENCHMARK(BM_ReadAheadPollEtcdLoopback)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ReadAheadPollDirectory(benchmark::State& state) { inDirectory(state, readAheadPolls); }
BENCHMARK(BM_ReadAheadPollDirectory)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
