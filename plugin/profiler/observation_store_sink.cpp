// The first sink: observations into the SQLite store (store/store.h), batched per the Writer's
// contract (~10k rows or ~100 ms per transaction). The only file that knows the store's API.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "plugin/context_registry.h"
#include "plugin/log.h"
#include "plugin/tuner/tuner_context.h"
#include "plugin/profiler/worker.h"
#include "store/store.h"

namespace dynamiccl::plugin {
namespace {

constexpr size_t kRowsPerCommit = 10'000;
constexpr int64_t kCommitEvery_ns = 100'000'000;

class StoreSink final : public WorkerSink {
 public:
  StoreSink(std::unique_ptr<store::Store> db, std::unique_ptr<store::Writer> writer, int64_t runId)
      : db_(std::move(db)), writer_(std::move(writer)), runId_(runId) {
    // Observations carry steady-clock times; the table wants wall-clock ns.
    const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::system_clock::now().time_since_epoch()).count();
    wallMinusSteady_ns_ = wall - steadyNowNs();
  }
  ~StoreSink() override { commit(); }

  void consume(const Observation* o, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      store::ObservationRow row;
      row.comm_row = commRow(o[i]);
      if (row.comm_row == 0) {
        profilerCounters().unwritten.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      row.seq = static_cast<int64_t>(o[i].seq);
      row.collective = std::string(collectiveName(o[i].coll));
      row.bytes = o[i].bytes;
      row.algo = o[i].algo;
      row.proto = o[i].proto;
      row.n_channels = o[i].nChannels > 0 ? o[i].nChannels : -1;
      row.gpu_us = o[i].gpuTiming ? o[i].gpu_us : NAN;
      row.cpu_us = o[i].cpu_us > 0 ? o[i].cpu_us : NAN;
      row.timing = o[i].gpuTiming ? store::TimingSource::Gpu : store::TimingSource::Host;
      row.ts_ns = o[i].stop_ns + wallMinusSteady_ns_;
      batch_.observations.push_back(std::move(row));
      addDecision(o[i], batch_.observations.back());
    }
    if (batch_.rows() >= kRowsPerCommit) commit();
  }

  void tick(int64_t now_ns) override {
    if (now_ns - lastCommit_ns_ >= kCommitEvery_ns) commit();
  }

 private:
  // The tuner's decision for the same communicator and call (commId joins the two roles; every
  // context of one commId decides identically, so any of them will do).
  void addDecision(const Observation& o, const store::ObservationRow& obs) {
    LoggedDecision d;
    bool found = false;
    forEachContextWithCommId(o.commId, [&](TunerContext& c) {
      if (!found) found = c.decisions.find(static_cast<int>(o.coll), o.seq, o.bytes, &d);
    });
    if (!found) return;
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
    batch_.decisions.push_back(std::move(row));
  }

  int64_t commRow(const Observation& o) {
    const auto key = std::make_tuple(o.commId, o.rank, o.nRanks, o.nNodes);
    auto it = comms_.find(key);
    if (it != comms_.end()) return it->second;
    store::CommInfo info;
    info.run_id = runId_;
    info.comm_id = o.commId;
    info.n_ranks = o.nRanks;
    info.n_nodes = o.nNodes;
    info.rank = o.rank;
    auto id = db_->addCommunicator(info);
    if (!id.ok()) {
      if (!warnedComm_) logWarn("profiler: store: cannot add communicator (%s)", id.error().c_str());
      warnedComm_ = true;
      return 0;
    }
    return comms_[key] = id.value();
  }

  void commit() {
    lastCommit_ns_ = steadyNowNs();
    if (batch_.rows() == 0) return;
    store::WriteResult r = writer_->write(batch_);
    if (!r.committed) profilerCounters().unwritten.fetch_add(batch_.observations.size(), std::memory_order_relaxed);
    if (!r.report_once.empty()) logWarn("profiler: store: %s", r.report_once.c_str());
    batch_.clear();
  }

  std::unique_ptr<store::Store> db_;
  std::unique_ptr<store::Writer> writer_;
  int64_t runId_;
  int64_t wallMinusSteady_ns_ = 0;
  int64_t lastCommit_ns_ = 0;
  store::Batch batch_;
  std::map<std::tuple<uint64_t, int, int, int>, int64_t> comms_;
  bool warnedComm_ = false;
};

}  // namespace

std::unique_ptr<WorkerSink> makeStoreSink(const Settings& s, const std::atomic<bool>* giveUp) {
  if (!s.record) return nullptr;
  store::StoreOptions options;
  options.path = s.dbPath;
  options.max_bytes = s.dbMaxBytes;
  options.give_up = giveUp;
  auto db = store::Store::open(options);
  if (!db.ok()) {
    logWarn("profiler: store unavailable (%s); observations are not recorded", db.error().c_str());
    return nullptr;
  }
  store::RunInfo run;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  run.host = host;
  run.source = "plugin";
  auto runId = db.value()->addRun(run);
  auto writer = store::Writer::create(*db.value());
  if (!runId.ok() || !writer.ok()) {
    logWarn("profiler: store unusable (%s); observations are not recorded",
            (!runId.ok() ? runId.error() : writer.error()).c_str());
    return nullptr;
  }
  return std::make_unique<StoreSink>(std::move(db.value()), std::move(writer.value()), runId.value());
}

}  // namespace dynamiccl::plugin
