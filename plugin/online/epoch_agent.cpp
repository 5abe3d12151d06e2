#include "plugin/online/epoch_agent.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "plugin/log.h"
#include "plugin/profiler/observation.h"

namespace dynamiccl::plugin {
namespace {

using Clock = std::chrono::steady_clock;

struct OnlineSettings {
  bool forcedOn = false, forcedOff = false;
  bool profilerIsUs = false;
  policy::OnlineConfig config;
  int64_t timeout_ms = 60000;
  std::string coordHostPort, tokenFile, sharedDir;
  int delay_ms = 0;
};

long long envNumber(const char* name, long long fallback, long long lo, long long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return end && *end == '\0' && x >= lo && x <= hi ? x : fallback;
}

OnlineSettings readSettings() {
  OnlineSettings s;
  const char* online = std::getenv("DYNAMICCL_ONLINE");
  s.forcedOn = online && std::string(online) == "1";
  s.forcedOff = online && std::string(online) == "0";
  const char* profiler = std::getenv("NCCL_PROFILER_PLUGIN");
  s.profilerIsUs = profiler && std::strstr(profiler, "dynamiccl");
  s.config.epochCalls = static_cast<uint64_t>(envNumber("DYNAMICCL_EPOCH_CALLS", 1000, 10, 1000000000));
  if (const char* b = std::getenv("DYNAMICCL_EXPLORE_BUDGET")) {
    const double x = std::strtod(b, nullptr);
    if (x >= 0 && x <= 0.5) s.config.exploreTimeShare = x;
  }
  s.timeout_ms = envNumber("DYNAMICCL_EPOCH_TIMEOUT_MS", 60000, 1, 86400000);
  s.delay_ms = static_cast<int>(envNumber("DYNAMICCL_COORD_DELAY_MS", 0, 0, 60000));
  if (const char* c = std::getenv("DYNAMICCL_COORD")) s.coordHostPort = c;
  if (const char* t = std::getenv("DYNAMICCL_COORD_TOKEN_FILE")) s.tokenFile = t;
  if (const char* d = std::getenv("DYNAMICCL_COORD_DIR")) s.sharedDir = d;
  return s;
}

// The backend for this shape: TCP coordinator, else shared directory, else node-local (one node).
Expected<std::shared_ptr<coord::RecordStore>> openBackend(const OnlineSettings& s, const CommShape& shape) {
  if (!s.coordHostPort.empty()) {
    const size_t colon = s.coordHostPort.rfind(':');
    const int port = colon == std::string::npos ? 0 : std::atoi(s.coordHostPort.c_str() + colon + 1);
    if (port <= 0 || port > 65535) return makeError("DYNAMICCL_COORD must be host:port");
    auto token = coord::readTokenFile(s.tokenFile);
    if (!token.ok()) return makeError(token.error());
    return std::shared_ptr<coord::RecordStore>(coord::makeTcpStore(s.coordHostPort.substr(0, colon), port, *token));
  }
  if (!s.sharedDir.empty()) {
    auto store = coord::openDirStore(s.sharedDir, false, s.delay_ms);
    if (!store.ok()) return makeError(store.error());
    return std::shared_ptr<coord::RecordStore>(std::move(store.value()));
  }
  if (shape.nNodes != 1) return makeError("no coordination backend for a multi-node communicator");
  auto store = coord::openDirStore(coord::nodeLocalDir(), true, s.delay_ms);
  if (!store.ok()) return makeError(store.error());
  return std::shared_ptr<coord::RecordStore>(std::move(store.value()));
}

class Agent {
 public:
  static Agent& instance() {
    static auto* a = new Agent();  // never destroyed: NCCL may finalize after exit handlers
    return *a;
  }

  void add(std::shared_ptr<OnlineComm> c) {
    std::unique_lock lock(mutex_);
    comms_.push_back(std::move(c));
    if (!thread_.joinable()) {
      stop_ = false;
      thread_ = std::thread([this] { loop(); });
      lock.unlock();
      sinkId_ = registerObservationSink([this](const Observation* o, size_t n) { consume(o, n); });
    }
  }

  void remove(const std::shared_ptr<OnlineComm>& c) {
    std::thread toJoin;
    int sink = -1;
    {
      std::lock_guard lock(mutex_);
      std::erase(comms_, c);
      if (comms_.empty() && thread_.joinable()) {
        stop_ = true;
        toJoin = std::move(thread_);
        sink = sinkId_;
      }
    }
    cv_.notify_all();
    if (toJoin.joinable()) toJoin.join();
    if (sink >= 0) unregisterObservationSink(sink);  // outside mutex_: the sink takes it
  }

  void wake() { cv_.notify_all(); }

 private:
  void consume(const Observation* o, size_t n) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < n; ++i) {
      for (auto& c : comms_) {
        if (c->commId != o[i].commId) continue;
        if (o[i].rank == 0) c->isLeader.store(true, std::memory_order_relaxed);
        if (!c->isLeader.load(std::memory_order_relaxed)) continue;
        const double latency_us = o[i].gpuTiming ? o[i].gpu_us : o[i].cpu_us;
        std::lock_guard comm(c->mutex);
        if (c->learner) c->learner->observe(static_cast<int>(o[i].coll), o[i].bytes, o[i].algo, o[i].proto, latency_us);
      }
    }
  }

  void loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      std::vector<std::shared_ptr<OnlineComm>> comms = comms_;
      lock.unlock();
      for (auto& c : comms) tick(*c);
      lock.lock();
      cv_.wait_for(lock, std::chrono::microseconds(500));
    }
  }

  static void tick(OnlineComm& c) {
    const uint64_t E = c.epochCalls, calls = c.callsSeen.load(std::memory_order_relaxed);
    bool haveStaged = false, stagedFrozen = false;
    uint64_t stagedBoundary = 0;
    {
      std::lock_guard lock(c.mutex);  // reclaim() frees records under this mutex
      if (const StagedRecord* staged = c.staged.load(std::memory_order_acquire)) {
        haveStaged = true;
        stagedFrozen = staged->frozen;
        stagedBoundary = staged->boundary;
      }
    }
    if (stagedFrozen) return;
    const uint64_t upcoming = std::max(E, (calls + E - 1) / E * E);
    // The boundary the hot path is at or heading to (callsSeen is bumped before it waits at one).
    const uint64_t pending = calls == 0 ? E : std::max(E, (calls - 1 + E - 1) / E * E);
    if (c.isLeader.load(std::memory_order_relaxed)) publish(c, pending, calls);
    if ((!haveStaged || stagedBoundary < upcoming) && calls + E / 2 >= upcoming) {
      auto rec = c.store->read(c.commId, upcoming);
      if (rec.ok() && rec->has_value()) stage(c, upcoming, **rec);
    }
  }

  // A leader that learnt its role late still publishes the boundary it waits at; a record that
  // exists already (frozen by a follower, or ours) is simply kept: the store is write-once.
  static void publish(OnlineComm& c, uint64_t pending, uint64_t calls) {
    const uint64_t E = c.epochCalls;
    const uint64_t next = std::max(c.publishedBoundary.load() + E, pending);
    if (calls + E / 2 < next) return;  // publish halfway through the epoch before the boundary
    std::string bytes;
    {
      std::lock_guard lock(c.mutex);
      if (!c.learner) return;
      for (uint32_t k = 0; k < policy::kOnlineKeys; ++k) {
        const int coll = static_cast<int>(k / SizeBucket::kCount), bucket = static_cast<int>(k % SizeBucket::kCount);
        if (const uint8_t d = c.ncclDefault[k].load(std::memory_order_relaxed))
          c.learner->setNcclDefault(coll, bucket, static_cast<Algo>((d - 1) / kNumProtos),
                                    static_cast<Proto>((d - 1) % kNumProtos));
        if (c.modelledKnown[k].load(std::memory_order_acquire)) {
          float table[kNumAlgos * kNumProtos];
          for (int i = 0; i < kNumAlgos * kNumProtos; ++i) table[i] = c.modelled_us[k][i].load(std::memory_order_relaxed);
          c.learner->setModelledCost(coll, bucket, table);
        }
      }
      bytes = c.learner->build(next / E)->serialize();
    }
    const coord::PublishResult r = c.store->publish(c.commId, next, bytes);
    if (r != coord::PublishResult::Failed) c.publishedBoundary.store(next);
  }

 public:
  // Parses a record (the same bytes give the same result on every rank) and makes it the staged one.
  static const StagedRecord* stage(OnlineComm& c, uint64_t boundary, const std::string& bytes) {
    auto rec = std::make_unique<StagedRecord>();
    rec->boundary = boundary;
    if (bytes == coord::kFrozenRecord) {
      rec->frozen = true;
    } else if (auto t = policy::OnlineTable::deserialize(bytes); t.ok()) {
      rec->table = t->get();
      std::lock_guard lock(c.mutex);
      c.tables.push_back(std::move(t.value()));
    } else {
      rec->frozen = true;  // unreadable for every rank alike: freeze
    }
    const StagedRecord* raw = rec.get();
    {
      // Publish before reclaiming, under the mutex tick() reads under: no reader can still hold a
      // record reclaim frees (found by TSan: a use-after-free when the agent lagged 3 epochs).
      std::lock_guard lock(c.mutex);
      c.records.push_back(std::move(rec));
      c.staged.store(raw, std::memory_order_release);
      reclaim(c, boundary);
    }
    return raw;
  }

 private:
  // Records and tables 3+ boundaries older than the newest are past use, except the one in force.
  static void reclaim(OnlineComm& c, uint64_t newest) {
    auto& recs = c.records;
    const policy::OnlineTable* current = c.current.load();
    const uint64_t horizon = newest > 3 * c.epochCalls ? newest - 3 * c.epochCalls : 0;
    std::vector<const policy::OnlineTable*> dropped;
    std::erase_if(recs, [&](const std::unique_ptr<StagedRecord>& r) {
      if (r->boundary >= horizon || r->table == current) return false;
      if (r->table) dropped.push_back(r->table);
      return true;
    });
    std::erase_if(c.tables, [&](const std::unique_ptr<policy::OnlineTable>& t) {
      return std::find(dropped.begin(), dropped.end(), t.get()) != dropped.end();
    });
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<OnlineComm>> comms_;
  std::thread thread_;
  bool stop_ = false;
  int sinkId_ = -1;
};

std::atomic<bool> gWarnedNoBackend{false};
std::atomic<bool> gLoggedOnline{false};
std::atomic<bool> gWarnedNoProfiler{false};

void adopt(OnlineComm& s, const StagedRecord* r) {
  if (r->frozen) {
    s.frozen = true;
    logWarn("online: communicator %016llx froze at boundary %llu (leader's version missing or unreadable); "
            "every rank adopts the same record and keeps its current version",
            static_cast<unsigned long long>(s.commId), static_cast<unsigned long long>(r->boundary));
    return;
  }
  s.current.store(r->table, std::memory_order_release);
  ++s.adoptedVersions;
}

}  // namespace

void adoptAtBoundary(OnlineComm& s, uint64_t boundary) {
  const auto start = Clock::now();
  bool logged = false;
  for (int attempt = 0;; ++attempt) {
    const auto* r = s.staged.load(std::memory_order_acquire);
    if (r && r->boundary == boundary) return adopt(s, r);
    if (attempt > 0) {  // the agent had no record ready: ask the backend ourselves (we wait anyway)
      auto rec = s.store->read(s.commId, boundary);
      if (rec.ok() && rec->has_value()) return adopt(s, Agent::stage(s, boundary, **rec));
    }
    const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (waited_ms >= s.boundaryTimeout_ms) {
      // Claim the boundary for "frozen": the store keeps whichever record came first, and every
      // rank (leader included) adopts that one, so a late leader and a timed-out follower agree.
      const coord::PublishResult p = s.store->publish(s.commId, boundary, coord::kFrozenRecord);
      if (p == coord::PublishResult::Won) return adopt(s, Agent::stage(s, boundary, coord::kFrozenRecord));
      if (p == coord::PublishResult::Lost) {
        auto rec = s.store->read(s.commId, boundary);
        if (rec.ok() && rec->has_value()) return adopt(s, Agent::stage(s, boundary, **rec));
      }
      if (waited_ms >= 2 * s.boundaryTimeout_ms) {
        logWarn("online: %s unreachable at boundary %llu of communicator %016llx; keeping the current version "
                "(ranks that reached the backend may differ: fix the backend)",
                s.store->describe().c_str(), static_cast<unsigned long long>(boundary),
                static_cast<unsigned long long>(s.commId));
        s.frozen = true;
        return;
      }
    }
    if (!logged && waited_ms >= 1000) {
      logged = true;
      logInfo("online: waiting for the leader's version at boundary %llu of communicator %016llx (%s)",
              static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId),
              s.store->describe().c_str());
    }
    Agent::instance().wake();
    std::this_thread::sleep_for(std::chrono::microseconds(attempt < 20 ? 50 : 1000));
  }
}

void ensurePublished(OnlineComm& s, uint64_t boundary) {
  const auto start = Clock::now();
  while (s.publishedBoundary.load() < boundary) {
    if (Clock::now() - start > std::chrono::milliseconds(s.boundaryTimeout_ms)) {
      logWarn("online: leader could not publish boundary %llu of communicator %016llx; followers will freeze",
              static_cast<unsigned long long>(boundary), static_cast<unsigned long long>(s.commId));
      return;
    }
    Agent::instance().wake();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable) {
  const OnlineSettings settings = readSettings();
  if (settings.forcedOff || staticTable.empty()) return nullptr;  // no profile: nothing changes
  // Opt-in: learning changes a job's decisions, and a leader that never measures would stall the
  // first boundary for the epoch timeout; a profiler alone only records.
  if (!settings.forcedOn) return nullptr;
  if (!settings.profilerIsUs && firstTime(gWarnedNoProfiler))
    logWarn("DYNAMICCL_ONLINE=1 without NCCL_PROFILER_PLUGIN naming this library: no rank can measure, "
            "so each communicator freezes on its static table after DYNAMICCL_EPOCH_TIMEOUT_MS");
  auto backend = openBackend(settings, shape);
  if (!backend.ok()) {
    if (firstTime(gWarnedNoBackend))
      logWarn("online updates off (%s); static profile only", backend.error().c_str());
    return nullptr;
  }
  auto c = std::make_shared<OnlineComm>();
  c->commId = shape.commId;
  c->epochCalls = settings.config.epochCalls;
  c->boundaryTimeout_ms = settings.timeout_ms;
  c->store = std::move(backend.value());
  c->learner = std::make_unique<policy::OnlineLearner>(
      settings.config, [table = staticTable](int coll, int bucket) {
        return table.lookup(coll, SizeBucket::lowest(bucket), 1, 0);
      });
  if (firstTime(gLoggedOnline))
    logInfo("online updates on: epoch %llu calls, exploration budget %.3f of time, backend %s",
            static_cast<unsigned long long>(c->epochCalls), settings.config.exploreTimeShare,
            c->store->describe().c_str());
  Agent::instance().add(c);
  return c;
}

void stopOnline(const std::shared_ptr<OnlineComm>& comm) {
  if (!comm) return;
  Agent::instance().remove(comm);
}

}  // namespace dynamiccl::plugin
