// The first sink: observations into the SQLite store (store/store.h), batched per the Writer's
// contract (~10k rows or ~100 ms per transaction) on a committer thread of its own. The only file of
// the profiler role that knows the store's API.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>

#include "plugin/log.h"
#include "plugin/nccl_version.h"
#include "plugin/profiler/profiler_names.h"
#include "plugin/profiler/worker.h"
#include "store/store.h"

namespace dynamiccl::plugin {
namespace {

constexpr size_t kRowsPerCommit = 10'000;
constexpr auto kCommitEvery = std::chrono::milliseconds(100);
// Rows waiting while the store is locked by other processes: beyond this they are dropped and
// counted (about 32 MB), never blocking the worker, whose other sinks (the online learner) must go on.
constexpr size_t kMaxPendingRows = 200'000;

using CommKey = std::tuple<uint64_t, int, int, int>;  // commId, rank, nRanks, nNodes

// What the worker hands over: plain copies; the committer thread builds the rows (strings). Built on the
// worker they took ~60% of its CPU (`demo --quick`: 62-68 ms, now 24-25 ms) and, beside busy loops on
// a 2-core host, starved the online learner for whole epochs (docs/ONLINE.md).
struct PendingRow {
  Observation observation;
  JoinedDecision joined;
};
static_assert(std::is_trivially_copyable_v<PendingRow>, "the worker appends these with one copy");

// The worker queues observations with their joined decisions (the decision log is a ring: joined now); a committer
// thread of its own owns the Store and waits for SQLite's locks, so 8 ranks sharing one host's store
// never hold up the measurement feed.
class StoreSink final : public WorkerSink {
 public:
  StoreSink(const Settings& settings, const std::atomic<bool>* giveUp)
      : ncclAlgo_(settings.ncclAlgo), ncclProto_(settings.ncclProto) {
    // Whose channel semantics the applied report reads these rows under (the worker thread: dlopen is fine).
    if (const int code = ncclVersionInForce(settings)) ncclVersion_ = ncclVersionText(code);
    rccl_ = hostInForce(settings) == abi::Host::Rccl;
    fixed_ = {{"NCCL_MIN_NCHANNELS", settings.ncclMinChannels}, {"NCCL_MAX_NCHANNELS", settings.ncclMaxChannels}};
    if (rccl_) {
      fixed_.push_back({"RCCL_OVERRIDE_ALGO", settings.rcclOverrideAlgo});
      fixed_.push_back({"RCCL_OVERRIDE_PROTO", settings.rcclOverrideProto});
    }
    options_.path = settings.dbPath;
    options_.max_bytes = settings.dbMaxBytes;
    options_.give_up = giveUp;
    // Observations carry steady-clock times; the table wants wall-clock ns.
    const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::system_clock::now().time_since_epoch()).count();
    wallMinusSteady_ns_ = wall - steadyNowNs();
    thread_ = std::thread([this] { run(); });
  }
  ~StoreSink() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  void consume(const Observation* o, const JoinedDecision* joins, size_t n) override {
    if (skipping_.load(std::memory_order_relaxed)) {  // no store, or another process records
      notStored().fetch_add(n, std::memory_order_relaxed);
      return;
    }
    size_t lost = 0;
    bool full = false;
    {
      std::lock_guard lock(mutex_);
      if (unusable_ || pending_.size() + n > kMaxPendingRows) {
        lost = n;
      } else {
        if (pending_.capacity() == 0) pending_.reserve(kRowsPerCommit);  // then kept: the committer swaps buffers
        for (size_t i = 0; i < n; ++i) pending_.push_back(PendingRow{o[i], joins[i]});
      }
      full = pending_.size() >= kRowsPerCommit;
    }
    if (lost) profilerCounters().unwritten.fetch_add(lost, std::memory_order_relaxed);
    if (full) wake_.notify_one();
  }

 private:
  static const char* joinName(DecisionJoin j) {
    switch (j) {
      case DecisionJoin::Joined: return "joined";
      case DecisionJoin::NotAsked: return "not_asked";
      case DecisionJoin::Lost: return "lost";
      default: return "no_tuner";
    }
  }

  // An observation as the store's row (committer thread).
  store::ObservationRow observationRow(const Observation& o, const JoinedDecision& joined) const {
    store::ObservationRow row;
    row.seq = static_cast<int64_t>(o.seq);
    row.collective = std::string(collectiveName(o.coll));
    row.bytes = o.bytes;
    row.algo = o.algo;
    row.proto = o.proto;
    row.n_channels = o.nChannels > 0 ? o.nChannels : -1;
    row.gpu_us = o.gpuTiming ? o.gpu_us : NAN;
    row.cpu_us = o.cpu_us > 0 ? o.cpu_us : NAN;
    row.timing = o.gpuTiming ? store::TimingSource::Gpu : store::TimingSource::Host;
    row.ts_ns = o.stop_ns + wallMinusSteady_ns_;
    row.profiler_version = o.profilerVersion;
    if (o.profilerVersion >= 7) {  // fields NCCL gives from v7 on; NULL before
      row.is_sym_coll = o.isSymColl ? 1 : 0;
      row.user_tag = o.userTag;
      if (o.kernelVariant) row.kernel_variant = kernelVariantName(o.kernelVariant);
    }
    row.decision_join = joinName(joined.join);
    return row;
  }

  // The tuner's decision for the same call, as the worker joined it.
  static store::DecisionRow decisionRow(const LoggedDecision& d, const store::ObservationRow& obs) {
    store::DecisionRow row;
    row.comm_row = obs.comm_row;
    row.seq = obs.seq;
    row.collective = obs.collective;
    row.bytes = d.nBytes;
    row.algo = d.algo;
    row.proto = d.proto;
    row.n_channels = d.nChannels > 0 ? d.nChannels : -1;
    row.chunk = d.chunkBytes > 0 ? static_cast<int64_t>(d.chunkBytes) : -1;
    row.source = d.source == DecisionSource::Table ? "table" : d.source == DecisionSource::Online ? "online" : "default";
    row.ts_ns = obs.ts_ns;
    return row;
  }

  // Committer thread: opens the store once there is something to record (waiting for locks here, not
  // in the worker), then commits what the worker queued every ~100 ms or ~10k rows, and once more when
  // the sink closes. A rank that records nothing (by default, one that decides nothing) never opens it:
  // no file, no lock, no race with the node's recorder when hundreds of ranks start at once.
  void run() {
    {
      std::unique_lock lock(mutex_);
      while (!stopping_ && pending_.empty()) wake_.wait_for(lock, kCommitEvery);
      if (pending_.empty()) return;
    }
    if (!open()) return stopRecording(0);
    std::vector<PendingRow> rows;
    for (;;) {
      bool last;
      {
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, kCommitEvery, [&] { return stopping_ || pending_.size() >= kRowsPerCommit; });
        rows.swap(pending_);
        last = stopping_;
      }
      commit(rows);
      rows.clear();
      if (last) return;
    }
  }

  bool open() {
    auto db = store::Store::open(options_);
    if (!db.ok()) {
      logWarn("profiler: store unavailable (%s); observations are not recorded", db.error().c_str());
      return false;
    }
    if (!db.value()->notice().empty()) logWarn("profiler: %s", db.value()->notice().c_str());
    db_ = std::move(db.value());
    return true;
  }

  // The first rows to write claim the store file: one recorder per file, so the node's other ranks
  // leave it to that one (SQLite's lock would queue them, and drop what waits too long). A rank with
  // nothing to record (it decides nothing) never takes it from one that has.
  bool claim() {
    auto lock = store::RecorderLock::tryTake(db_->path());
    if (lock.ok() && !lock.value()) {
      const std::string holder = store::RecorderLock::holder(db_->path());
      logInfo("profiler: another process (%s) records into %s; this one records nothing (its observations are "
              "counted as left to the node's recorder)", holder.empty() ? "unknown" : holder.c_str(), db_->path().c_str());
      otherRecorder_.store(true, std::memory_order_relaxed);
      return false;
    }
    if (!lock.ok()) logWarn("profiler: store: %s; recording without the one-recorder lock", lock.error().c_str());
    else recorderLock_ = std::move(lock.value());
    store::RunInfo run;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    run.host = host;
    run.source = "plugin";
    run.env_json = envJson();
    run.nccl_version = ncclVersion_;
    auto runId = db_->addRun(run);
    auto writer = runId.ok() ? store::Writer::create(*db_) : makeError(runId.error());
    if (!writer.ok()) {
      logWarn("profiler: store unusable (%s); observations are not recorded", writer.error().c_str());
      return false;
    }
    writer_ = std::move(writer.value());
    runId_ = runId.value();
    return true;
  }

  // From now on every observation is counted as not written, `lost` of them already taken off the queue.
  void stopRecording(size_t lost) {
    db_.reset();
    recorderLock_.reset();  // another process may record what this one cannot
    std::lock_guard lock(mutex_);
    unusable_ = true;
    skipping_.store(true, std::memory_order_relaxed);
    notStored().fetch_add(lost + pending_.size(), std::memory_order_relaxed);
    pending_.clear();
  }

  void commit(std::vector<PendingRow>& rows) {
    if (rows.empty() || skipping_.load(std::memory_order_relaxed)) return;
    if (!writer_ && !claim()) return stopRecording(rows.size());
    store::Batch batch;
    uint64_t skipped = 0;
    for (const PendingRow& r : rows) {
      const Observation& o = r.observation;
      const int64_t comm = commRow(CommKey{o.commId, o.rank, o.nRanks, o.nNodes});
      if (comm == 0) {
        ++skipped;
        continue;
      }
      store::ObservationRow row = observationRow(o, r.joined);
      row.comm_row = comm;
      if (r.joined.join == DecisionJoin::Joined) batch.decisions.push_back(decisionRow(r.joined.decision, row));
      batch.observations.push_back(std::move(row));
    }
    if (skipped) profilerCounters().unwritten.fetch_add(skipped, std::memory_order_relaxed);
    if (batch.rows() == 0) return;
    store::WriteResult w = writer_->write(batch);
    if (!w.committed) profilerCounters().unwritten.fetch_add(batch.observations.size(), std::memory_order_relaxed);
    if (!w.report_once.empty()) logWarn("profiler: store: %s", w.report_once.c_str());
  }

  int64_t commRow(const CommKey& key) {
    auto it = comms_.find(key);
    if (it != comms_.end()) return it->second;
    store::CommInfo info;
    info.run_id = runId_;
    std::tie(info.comm_id, info.rank, info.n_ranks, info.n_nodes) = key;
    auto id = db_->addCommunicator(info);
    if (!id.ok()) {
      if (!warnedComm_) logWarn("profiler: store: cannot add communicator (%s)", id.error().c_str());
      warnedComm_ = true;
      return 0;
    }
    return comms_[key] = id.value();
  }

  // NCCL's selection knobs of this run as a JSON object (the applied report's likely causes).
  std::string envJson() const {
    auto quoted = [](const std::string& v) {
      std::string out = "\"";
      for (const char ch : v) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
      }
      return out + "\"";
    };
    std::string json = "{";
    if (!ncclAlgo_.empty()) json += "\"NCCL_ALGO\":" + quoted(ncclAlgo_);
    if (!ncclProto_.empty()) json += std::string(json.size() > 1 ? "," : "") + "\"NCCL_PROTO\":" + quoted(ncclProto_);
    for (const auto& [name, value] : fixed_)  // knobs the user fixed (the plugin left them alone)
      if (!value.empty()) json += std::string(json.size() > 1 ? "," : "") + "\"" + name + "\":" + quoted(value);
    if (rccl_) json += std::string(json.size() > 1 ? "," : "") + "\"host\":\"rccl\"";  // NCCL: no key, as before
    return json + "}";
  }

  store::StoreOptions options_;
  std::string ncclAlgo_, ncclProto_, ncclVersion_;
  bool rccl_ = false;
  std::vector<std::pair<const char*, std::string>> fixed_;
  int64_t wallMinusSteady_ns_ = 0;

  std::mutex mutex_;  // pending_, stopping_, unusable_
  std::condition_variable wake_;
  std::vector<PendingRow> pending_;
  bool stopping_ = false, unusable_ = false;
  std::atomic<bool> skipping_{false};  // unusable_, read without the mutex
  std::atomic<bool> otherRecorder_{false};  // unusable because another process of the node records
  // Where what this sink does not store is counted: a loss, or left to the process that records.
  std::atomic<uint64_t>& notStored() {
    return otherRecorder_.load(std::memory_order_relaxed) ? profilerCounters().leftToRecorder
                                                          : profilerCounters().unwritten;
  }
  std::thread thread_;

  // Committer thread only. The lock outlives the store's connection (members go in reverse order).
  std::unique_ptr<store::RecorderLock> recorderLock_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<store::Writer> writer_;
  int64_t runId_ = 0;
  std::map<CommKey, int64_t> comms_;
  bool warnedComm_ = false;
};

}  // namespace

std::unique_ptr<WorkerSink> makeStoreSink(const Settings& s, const std::atomic<bool>* giveUp) {
  if (!s.record) return nullptr;
  return std::make_unique<StoreSink>(s, giveUp);
}

}  // namespace dynamiccl::plugin
