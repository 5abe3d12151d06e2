// Coordination of one communicator at 16 to 1,024 ranks, as threads of this process (NCCL's
// single-process mode), each rank with its own connection to the store, through the plugin's own
// code: the input check (agreeOnInputs) at init, then each rank's read-ahead (followAhead, ticked as
// the epoch agent ticks it) while a leader publishes a 5 KB table half an epoch before each boundary.
// Against a real etcd (one member, started here on loopback) and a directory. Prints per rank and in
// all: store requests and bytes at init, init time, requests and bytes per second in steady state, and
// how long a published table takes to reach every rank; and where the init requests went (joins,
// confirmations, reads, writes) with when the last join and the last confirmation returned. A request is one store operation: one HTTP
// request to etcd (a transaction counts once), one file-system operation group in a directory.
// --per-node N (8): on etcd, ranks N a node, whose epoch records one of them polls for the node
// (node_reads=1, the plugin's default); 1: every rank polls etcd itself.
// --comms N: every rank in N communicators (a job's process groups), each with its own connection as
// the plugin opens one per communicator and checked in a thread of its own as the plugin's check pool
// runs them; the figures per rank then sum its communicators'.
//   bench_coord_scale [--ranks 16,64,256,1024] [--backends etcd,dir] [--steady-s 6] [--epoch-s 2] [--comms 1] [--per-node 8]
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "plugin/online/epoch_agent.h"
#include "plugin/inputs/inputs_check.h"
#include "tests/etcd_fixture.h"

namespace dynamiccl {
namespace {

using Clock = std::chrono::steady_clock;
using coord::RecordStore;

int64_t nowNs() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

// The largest value stored so far (several threads at once).
void keepLatest(std::atomic<int64_t>& at, int64_t t) {
  for (int64_t was = at.load(); was < t && !at.compare_exchange_weak(was, t);) {
  }
}

// The kinds of request the figures split into: what a rank's init requests were spent on.
enum Kind { kWrite, kRead, kJoin, kConfirm, kKinds };

// One rank's view of its store: every operation and its bytes counted, by kind; and when its last
// join and confirmation of the input check returned.
class CountingStore : public RecordStore {
 public:
  explicit CountingStore(std::unique_ptr<RecordStore> inner) : inner_(std::move(inner)) {}
  coord::PublishResult publishBy(uint64_t c, uint64_t b, const std::string& bytes, coord::Deadline by) override {
    count(bytes.size(), 0, kWrite);
    return inner_->publishBy(c, b, bytes, by);
  }
  Expected<std::optional<std::string>> read(uint64_t c, uint64_t b) override {
    auto r = inner_->read(c, b);
    count(0, r.ok() && r->has_value() ? (*r)->size() : 0, kRead);
    return r;
  }
  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t c, const std::vector<uint64_t>& bs,
                                                             size_t presence, coord::Deadline by = coord::kNoDeadline) override {
    auto r = inner_->readMany(c, bs, presence, by);  // one request (etcd: one transaction; a directory: one read each, counted once)
    count(0, r.ok() ? bytesOf(*r) : 0, kRead);
    return r;
  }
  Expected<coord::RecordsAndCount> readAndCount(uint64_t c, const std::vector<uint64_t>& bs, const std::string& s,
                                                const std::string& g) override {
    auto r = inner_->readAndCount(c, bs, s, g);  // one request, as readMany's; the counts about 16 bytes
    count(0, 16 + (r.ok() ? bytesOf(r->records) : 0), kRead);
    return r;
  }
  Expected<coord::SetCount> joinSetBy(uint64_t c, const std::string& s, const std::string& g, const std::string& m,
                                      const std::string& bytes, coord::Deadline by) override {
    const bool confirming = s.rfind("confirm-", 0) == 0;
    count(bytes.size(), 16, confirming ? kConfirm : kJoin);
    auto r = inner_->joinSetBy(c, s, g, m, bytes, by);
    keepLatest(confirming ? lastConfirm_ns : lastJoin_ns, nowNs());
    return r;
  }
  Expected<std::optional<coord::SetMember>> memberOutside(uint64_t c, const std::string& s, const std::string& g) override {
    auto r = inner_->memberOutside(c, s, g);
    count(0, r.ok() && r->has_value() ? (*r)->bytes.size() : 0, kRead);
    return r;
  }
  std::string describe() const override { return inner_->describe(); }

  std::atomic<uint64_t> requests{0}, bytesOut{0}, bytesIn{0};
  std::atomic<uint64_t> byKind[kKinds] = {};
  std::atomic<int64_t> lastJoin_ns{0}, lastConfirm_ns{0};

 private:
  static size_t bytesOf(const std::vector<std::optional<std::string>>& records) {
    size_t n = 0;
    for (const auto& x : records) n += x ? x->size() : 0;
    return n;
  }
  void count(size_t out, size_t in, Kind kind) {
    byKind[kind].fetch_add(1, std::memory_order_relaxed);
    requests.fetch_add(1, std::memory_order_relaxed);
    bytesOut.fetch_add(out, std::memory_order_relaxed);
    bytesIn.fetch_add(in, std::memory_order_relaxed);
  }
  std::unique_ptr<RecordStore> inner_;
};

struct Args {
  std::vector<int> ranks = {16, 64, 256, 1024};
  std::vector<std::string> backends = {"etcd", "dir"};
  double steady_s = 6, epoch_s = 2;
  int comms = 1;
  int perNode = 8;  // ranks a node (etcd): one of them polls for the node (node_reads=1); 1: every rank polls
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');) out.push_back(x);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks") {
      a.ranks.clear();
      for (const auto& x : split(v)) a.ranks.push_back(std::atoi(x.c_str()));
    } else if (k == "--backends") a.backends = split(v);
    else if (k == "--steady-s") a.steady_s = std::atof(v.c_str());
    else if (k == "--epoch-s") a.epoch_s = std::atof(v.c_str());
    else if (k == "--comms") a.comms = std::max(1, std::atoi(v.c_str()));
    else if (k == "--per-node") a.perNode = std::max(1, std::atoi(v.c_str()));
    else {
      std::fprintf(stderr, "usage: %s [--ranks 16,64,256,1024] [--backends etcd,dir] [--steady-s 6] [--epoch-s 2] [--comms 1] [--per-node 8]\n", argv[0]);
      std::exit(2);
    }
  }
  return a;
}

// What a rank's input record looks like (input_fields.cpp's fields, the same on every rank).
std::string inputsRecordOf(int rank) {
  std::string r = std::string(plugin::kInputsHeader) + "\nwho=on host bench (pid " + std::to_string(rank) +
                  ", record " + std::to_string(rank * 7919) + ")\n";
  for (const char* f : {"plugin", "nccl", "DYNAMICCL_ENABLE", "DYNAMICCL_TRUST", "DYNAMICCL_VERIFY", "DYNAMICCL_ONLINE",
                        "NCCL_PROFILER_PLUGIN", "DYNAMICCL_EPOCH_CALLS", "profile", "topology", "DYNAMICCL_WORKLOAD"})
    r += std::string(f) + "=" + std::string(48, 'x') + "\n";
  return r;
}

struct Totals {
  uint64_t requests = 0, bytesIn = 0, bytesOut = 0;
  uint64_t byKind[kKinds] = {};
  int64_t lastJoin_ns = 0, lastConfirm_ns = 0;
};
Totals totals(const std::vector<std::shared_ptr<CountingStore>>& stores) {
  Totals t;
  for (const auto& s : stores) {
    t.requests += s->requests.exchange(0);
    t.bytesIn += s->bytesIn.exchange(0);
    t.bytesOut += s->bytesOut.exchange(0);
    for (int k = 0; k < kKinds; ++k) t.byKind[k] += s->byKind[k].exchange(0);
    t.lastJoin_ns = std::max(t.lastJoin_ns, s->lastJoin_ns.exchange(0));
    t.lastConfirm_ns = std::max(t.lastConfirm_ns, s->lastConfirm_ns.exchange(0));
  }
  return t;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void runOnce(const std::string& backend, int n, const Args& a, const std::function<std::unique_ptr<RecordStore>()>& open,
             uint64_t commId) {
  const int C = a.comms;  // communicators every rank belongs to (a job's process groups); store i = k * n + r
  std::vector<std::shared_ptr<CountingStore>> stores;
  for (int i = 0; i < n * C; ++i) {
    auto inner = open();
    if (!inner) return;
    stores.push_back(std::make_shared<CountingStore>(std::move(inner)));
  }
  // Init: every rank's input checks at once, each communicator's in a thread of its own (as the
  // plugin's check pool runs a process's communicators); a rank's init time is its slowest check's.
  std::vector<double> init_ms(n);
  std::vector<std::atomic<int>> agreed(n);
  std::vector<std::atomic<int64_t>> slowest_us(n);
  int64_t start_ns = 0;  // when every check was let go
  std::barrier start(n * C, [&]() noexcept { start_ns = nowNs(); });
  std::vector<std::thread> threads;
  for (int k = 0; k < C; ++k)
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r, k] {
        const std::string mine = inputsRecordOf(r);
        const uint64_t id = commId + k;
        start.arrive_and_wait();
        const auto t0 = Clock::now();
        const auto v = plugin::agreeOnInputs(*stores[k * n + r], id, n, mine, 60000, plugin::inputsKey(id, mine, ""),
                                             plugin::membersKey(id, ""));
        agreed[r] += v.agree;
        if (!v.agree && (r == 0 || r == n / 2 || r == n - 1)) std::fprintf(stderr, "rank %d did not agree: %s\n", r, v.why.c_str());
        const int64_t took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
        keepLatest(slowest_us[r], took);
      });
  for (auto& t : threads) t.join();
  threads.clear();
  for (int r = 0; r < n; ++r) init_ms[r] = static_cast<double>(slowest_us[r].load()) / 1000;
  const Totals init = totals(stores);
  std::sort(init_ms.begin(), init_ms.end());
  int agreeing = 0;
  for (const auto& x : agreed) agreeing += x.load();

  // Steady state: the leader publishes each boundary's table half an epoch ahead; every rank's
  // read-ahead is ticked every 500 us, as the epoch agent ticks it, by 4 threads (the ranks' agents).
  const uint64_t E = 1000;
  const double callsPerSecond = E / a.epoch_s;
  // On etcd, each rank's epoch records go through one reader per node of a.perNode ranks, each node a
  // directory of its own, as the plugin reads them with node_reads=1.
  char nodesTmpl[] = "/tmp/dynamiccl-coordscale-nodes-XXXXXX";
  const bool perNode = backend == "etcd" && a.perNode > 1;
  const std::string nodes = perNode ? mkdtemp(nodesTmpl) : "";
  std::vector<std::shared_ptr<plugin::OnlineComm>> comms;
  for (int i = 0; i < n * C; ++i) {
    auto c = std::make_shared<plugin::OnlineComm>();
    c->commId = commId + i / n;
    c->epochCalls = E;
    c->store = stores[i];
    if (perNode) {
      auto shared = coord::nodeSharedStore(stores[i], nodes + "/node" + std::to_string(i % n / a.perNode), "bench");
      if (shared.ok()) c->store = std::move(shared.value());
      else std::fprintf(stderr, "no node directory: %s\n", shared.error().c_str());
    }
    comms.push_back(c);
  }
  auto leaderStore = open();
  const std::string table(5220, 't');
  const auto t0 = Clock::now();
  const auto callsNow = [&] { return static_cast<uint64_t>(std::chrono::duration<double>(Clock::now() - t0).count() * callsPerSecond) + 1; };
  std::atomic<bool> stop{false};
  std::mutex m;
  using Place = std::pair<int, uint64_t>;               // (communicator, boundary)
  std::map<Place, Clock::time_point> published;        // when the leader's publish returned
  std::map<Place, Clock::time_point> lastHolder;       // when its last rank held it
  std::map<Place, int> holders;
  std::thread leader([&] {
    std::vector<uint64_t> next(C, E);
    while (!stop.load()) {
      for (int k = 0; k < C; ++k) {
        if (callsNow() + E / 2 < next[k]) continue;
        const std::string bytes = table + std::to_string(next[k]);
        if (leaderStore->publish(commId + k, next[k], bytes) != coord::PublishResult::Failed) {
          std::lock_guard lock(m);
          published[{k, next[k]}] = Clock::now();
          next[k] += E;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const int kAgents = 4;
  std::vector<std::thread> agents;
  for (int w = 0; w < kAgents; ++w)
    agents.emplace_back([&, w] {
      std::map<int, uint64_t> seen;  // store -> highest boundary known held
      while (!stop.load()) {
        for (int i = w; i < n * C; i += kAgents) {
          plugin::OnlineComm& c = *comms[i];
          const uint64_t calls = callsNow();
          const uint64_t upcoming = std::max(E, (calls + E - 1) / E * E);
          plugin::followAhead(c, calls, upcoming, plugin::heldRecord(c, upcoming).has_value());
          for (uint64_t b = seen[i] + E; plugin::heldRecord(c, b); b += E) {
            seen[i] = b;
            std::lock_guard lock(m);
            if (++holders[{i / n, b}] == n) lastHolder[{i / n, b}] = Clock::now();
          }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
  const auto warm = std::chrono::duration<double>(a.epoch_s);  // the first epoch's reads, then measure
  std::this_thread::sleep_for(warm);
  totals(stores);
  const auto m0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(a.steady_s));
  const Totals steady = totals(stores);
  const double window_s = std::chrono::duration<double>(Clock::now() - m0).count();
  stop = true;
  leader.join();
  for (auto& t : agents) t.join();
  comms.clear();
  if (perNode) std::filesystem::remove_all(nodes);
  double reach_ms = 0;
  int boundaries = 0;
  for (const auto& [place, when] : lastHolder)
    if (published.count(place)) reach_ms = std::max(reach_ms, ms(when - published[place])), ++boundaries;

  std::printf("%-4s %6d %5d | %8.1f %8.0f %8.0f | %8.1f %8.1f %5d/%-5d | %8.3f %9.0f %10.0f | %8.1f (%d)\n",
              backend.c_str(), n, C,
              static_cast<double>(init.requests) / n, static_cast<double>(init.bytesOut + init.bytesIn) / n,
              static_cast<double>(init.requests), init_ms[n / 2], init_ms.back(), agreeing, n * C,
              steady.requests / window_s / n, (steady.bytesIn + steady.bytesOut) / window_s / n, steady.requests / window_s,
              reach_ms, boundaries);
  // Where the init requests went, and the check's two phases: the ranks' arrival, then their confirmations.
  const double perRank = n, sinceStart_ms = static_cast<double>(start_ns) / 1e6;
  std::printf("       init per rank: %.2f joins, %.2f confirmations, %.2f reads (polls), %.2f writes; the last join "
              "returned at %.0f ms, the last confirmation at %.0f ms\n",
              init.byKind[kJoin] / perRank, init.byKind[kConfirm] / perRank, init.byKind[kRead] / perRank,
              init.byKind[kWrite] / perRank, static_cast<double>(init.lastJoin_ns) / 1e6 - sinceStart_ms,
              static_cast<double>(init.lastConfirm_ns) / 1e6 - sinceStart_ms);
  std::fflush(stdout);
}

}  // namespace
}  // namespace dynamiccl

int main(int argc, char** argv) {
  using namespace dynamiccl;
  const Args a = parse(argc, argv);
  std::printf("backend ranks comms | init: req/rank bytes/rank req-all | init ms: median  last  agreed | steady: req/s/rank "
              "bytes/s/rank req/s-all | table reaches all ranks, ms max (boundaries)\n");
  uint64_t commId = 0xc0de0000 + static_cast<uint64_t>(getpid());
  for (const std::string& backend : a.backends) {
    std::unique_ptr<testing::EtcdCluster> etcd;
    std::string dir;
    if (backend == "etcd") {
      if (testing::etcdBinary().empty()) {
        std::printf("etcd: no etcd binary (scripts/setup.sh installs etcd-server); skipped\n");
        continue;
      }
      etcd = std::make_unique<testing::EtcdCluster>();
      if (!etcd->ready()) {
        std::printf("etcd: did not start; skipped\n");
        continue;
      }
    } else {
      char tmpl[] = "/tmp/dynamiccl-coordscale-XXXXXX";
      dir = mkdtemp(tmpl);
    }
    for (int n : a.ranks) {
      const auto open = [&]() -> std::unique_ptr<coord::RecordStore> {
        if (etcd) {
          coord::EtcdOptions o;
          o.endpoints = {etcd->endpoint()};
          if (const char* t = std::getenv("BENCH_ETCD_TIMEOUT_MS")) o.timeout_ms = std::atoi(t);
          auto s = coord::openEtcdStore(o);
          return s.ok() ? std::move(s.value()) : nullptr;
        }
        auto s = coord::openDirStore(dir, false);
        return s.ok() ? std::move(s.value()) : nullptr;
      };
      runOnce(backend, n, a, open, commId);
      commId += a.comms;
    }
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  return 0;
}
