#include "plugin/online/verdict_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "plugin/log.h"
#include "plugin/online/verdict_record.h"
#include "store/store.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {
namespace {

// NCCL's communicator destroy waits on the tuner's finalize: the store gets this long, then the
// verdicts go to a side file of their own beside it (this long again at most), which the next job's
// init moves into the store. So finalize ends within a second whatever holds the store's lock.
constexpr auto kStoreBound = std::chrono::milliseconds(400);
constexpr int kBusyTimeout_ms = 2000;  // per attempt; the bound above ends every wait sooner
constexpr int kBusyAttempts = 3;

// Sets `flag` once `bound` has passed (or at destruction): every lock wait of a store opened with it ends.
class GiveUpAfter {
 public:
  explicit GiveUpAfter(std::chrono::milliseconds bound)
      : thread_([this, bound] {
          std::unique_lock lock(mutex_);
          if (!wake_.wait_for(lock, bound, [&] { return done_; })) flag_.store(true);
        }) {}
  ~GiveUpAfter() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  const std::atomic<bool>* flag() const { return &flag_; }

 private:
  std::atomic<bool> flag_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members it uses exist
};

std::string databasePath(const VerdictScope& scope) {
  return scope.dbPath.empty() ? store::defaultDatabasePath() : scope.dbPath;
}

Expected<std::unique_ptr<store::Store>> openStore(const std::string& path, const std::atomic<bool>* giveUp = nullptr) {
  store::StoreOptions options;
  options.path = path;
  options.busy_timeout_ms = kBusyTimeout_ms;
  options.busy_attempts = kBusyAttempts;
  options.give_up = giveUp;
  return store::Store::open(options);
}

// Writes rows into the store at `path` within `bound`.
Status writeWithin(const std::string& path, const std::vector<store::VerdictRow>& rows, std::chrono::milliseconds bound) {
  GiveUpAfter giveUp(bound);
  auto db = openStore(path, giveUp.flag());
  return db.ok() ? db.value()->addVerdicts(rows) : makeError(db.error());
}

void removeStoreFiles(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

// Moves the verdicts of side files into the store (each file removed once its rows are in), so the
// learner resumes from them and `dynamiccl export --from-store` sees them. A file that cannot be
// moved now stays for the next init.
void movePendingVerdicts(const std::string& path) {
  size_t moved = 0;
  for (const std::string& side : store::pendingVerdictsFiles(path)) {
    Expected<std::vector<store::VerdictRow>> rows = makeError("not opened");
    {  // the side store is closed before it is removed
      store::StoreOptions options;
      options.path = side;
      options.read_only = true;
      auto from = store::Store::open(options);
      rows = from.ok() ? from.value()->latestVerdicts() : Expected<std::vector<store::VerdictRow>>(makeError(from.error()));
    }
    if (!rows.ok()) {
      logWarn("in-job verification: verdicts left in %s unreadable (%s); left there", side.c_str(), rows.error().c_str());
      continue;
    }
    if (Status s = writeWithin(path, *rows, kStoreBound); !s) {
      logWarn("in-job verification: %zu verdict(s) in %s not yet moved into %s (%s); the next init tries again",
              rows->size(), side.c_str(), path.c_str(), s.error().c_str());
      continue;
    }
    removeStoreFiles(side);
    moved += rows->size();
  }
  if (moved) logInfo("in-job verification: %zu verdict(s) an earlier job left beside %s (its store was locked) moved into it",
                     moved, path.c_str());
}

uint64_t bucketHighest(int bucket) {
  return bucket + 1 >= SizeBucket::kCount ? UINT64_MAX : SizeBucket::lowest(bucket + 1) - 1;
}

// This node's store: the latest verdicts of the scope (moving in what a locked finalize left beside it).
std::vector<store::VerdictRow> localVerdicts(const VerdictScope& scope, const std::string& path) {
  movePendingVerdicts(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};  // no store yet: nothing to resume
  auto db = openStore(path);
  if (!db.ok()) {
    logWarn("in-job verification: store unavailable (%s); not resumed from it", db.error().c_str());
    return {};
  }
  auto rows = db.value()->latestVerdicts(scope.fingerprint, scope.nRanks, scope.nNodes);
  if (!rows.ok()) {
    logWarn("in-job verification: %s; not resumed from the store", rows.error().c_str());
    return {};
  }
  std::erase_if(*rows, [&](const store::VerdictRow& r) { return r.fingerprint != scope.fingerprint; });  // "" selects all
  return std::move(*rows);
}

// The cluster's copy, after this node's: with what is left until `by`, so that a backend that does
// not answer costs finalize no more than its bound. kept: where the verdicts are ("" when nowhere).
void publishTravelling(std::vector<store::VerdictRow> rows, const VerdictScope& scope, coord::Deadline by,
                       const std::string& kept) {
  if (!scope.backend) return;
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (store::VerdictRow& r : rows) r.ts_ns = now_ns;
  const auto start = std::chrono::steady_clock::now();
  const Expected<uint64_t> slot = publishVerdicts(*scope.backend, scope, rows, by);
  const double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::string where = kept.empty() ? "not stored either: lost" : "kept in " + kept;
  if (slot.ok())
    logInfo("in-job verification: %zu verdict(s) published through %s (slot %llu): the next job resumes from them on "
            "any node", rows.size(), scope.backend->describe().c_str(), static_cast<unsigned long long>(*slot));
  else if (reachedDeadline(by))
    logWarn("in-job verification: publishing %zu verdict(s) through %s cut short after %.0f ms at finalize's 1 s "
            "bound (%s); %s: the next job on this node resumes from them and publishes those it tests again",
            rows.size(), scope.backend->describe().c_str(), took_ms, slot.error().c_str(), where.c_str());
  else
    logWarn("in-job verification: verdicts not published through %s (%s); %s", scope.backend->describe().c_str(),
            slot.error().c_str(), where.c_str());
}

}  // namespace

VerdictScope verdictScope(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                          const Settings& settings) {
  VerdictScope s;
  s.nRanks = shape.nRanks;
  s.nNodes = shape.nNodes;
  s.dbPath = settings.dbPath;
  s.record = settings.record;
  const RuleFingerprint rf = fingerprintForRules(shape, declared, localHostSources(settings.topo));
  if (rf.fingerprint && rf.fingerprint->computeCap > 0 && rf.fingerprint->nicsPerNode > 0) {
    ClusterHardware hw;
    hw.computeCap = rf.fingerprint->computeCap;
    hw.nvlinkBwPerGpu_GBps = rf.fingerprint->nvlinkBwPerGpu_GBps;
    hw.nicsPerNode = rf.fingerprint->nicsPerNode;
    hw.nicSpeed_GBps = rf.fingerprint->nicSpeed_GBps;
    s.fingerprint = policy::clusterHardwareToJson(hw);
  }
  return s;
}

size_t resumeVerdicts(learner::OnlineLearner& learner, const VerdictScope& scope) {
  if (!scope.record) return 0;
  const std::string path = databasePath(scope);
  std::vector<store::VerdictRow> rows = localVerdicts(scope, path);
  const size_t local = rows.size();
  size_t travelled = 0;
  if (scope.backend)  // the newer of the two wins per candidate: the store is this node's, the backend the cluster's
    for (store::VerdictRow& t : readTravelledVerdicts(*scope.backend, scope)) {
      auto same = std::find_if(rows.begin(), rows.end(), [&](const store::VerdictRow& r) {
        return r.collective == t.collective && r.min_bytes == t.min_bytes && r.algo == t.algo && r.proto == t.proto &&
               r.n_channels == t.n_channels;
      });
      if (same != rows.end() && same->ts_ns >= t.ts_ns) continue;
      ++travelled;
      if (same != rows.end()) *same = std::move(t);
      else rows.push_back(std::move(t));
    }
  size_t resumed = 0;
  for (const store::VerdictRow& r : rows) {
    const auto coll = parseCollective(r.collective);
    const auto a = parseAlgo(r.algo), ba = parseAlgo(r.base_algo);
    const auto p = parseProto(r.proto), bp = parseProto(r.base_proto);
    if (!r.problem.empty() || !coll || !a || !p || !ba || !bp || r.n < 0 || r.base_n < 0) continue;
    const int bucket = SizeBucket::of(r.min_bytes);
    learner.seed(static_cast<int>(*coll), bucket,
                 learner::ArmSummary{*a, *p, static_cast<uint64_t>(r.n), r.mean_log_us, r.var_log_us,
                                     r.n_channels > 0 ? static_cast<int>(r.n_channels) : 0},
                 r.state == learner::verdictStateName(learner::VerdictState::Promoted));
    learner.seed(static_cast<int>(*coll), bucket,
                 learner::ArmSummary{*ba, *bp, static_cast<uint64_t>(r.base_n), r.base_mean_log_us, r.base_var_log_us});
    ++resumed;
  }
  if (resumed)
    logInfo("in-job verification resumes %zu candidate(s) (%zu in %s, %zu newer through %s)", resumed, local,
            path.c_str(), travelled, scope.backend ? scope.backend->describe().c_str() : "no backend");
  return resumed;
}

void saveVerdicts(const std::vector<learner::Verdict>& verdicts, const VerdictScope& scope, coord::Deadline by) {
  if (verdicts.empty()) return;
  size_t promoted = 0, dropped = 0;
  std::vector<store::VerdictRow> rows;
  for (const learner::Verdict& v : verdicts) {
    promoted += v.state == learner::VerdictState::Promoted;
    dropped += v.state == learner::VerdictState::Dropped;
    store::VerdictRow r;
    r.fingerprint = scope.fingerprint;
    r.nccl_version = scope.ncclVersion;
    r.n_ranks = scope.nRanks;
    r.n_nodes = scope.nNodes;
    r.collective = std::string(collectiveName(static_cast<Collective>(v.coll)));
    r.min_bytes = SizeBucket::lowest(v.bucket);
    r.max_bytes = bucketHighest(v.bucket);
    r.algo = store::algoStoredName(v.candidate.algo);
    r.proto = store::protoStoredName(v.candidate.proto);
    r.n_channels = v.candidate.nChannels > 0 ? v.candidate.nChannels : -1;
    r.chunk = v.candidate.chunkBytes > 0 ? static_cast<int64_t>(v.candidate.chunkBytes) : -1;
    r.base_algo = store::algoStoredName(v.baselineArm.algo);
    r.base_proto = store::protoStoredName(v.baselineArm.proto);
    r.n = static_cast<int64_t>(v.candidateArm.n);
    r.mean_log_us = v.candidateArm.meanLog;
    r.var_log_us = v.candidateArm.varLog;
    r.base_n = static_cast<int64_t>(v.baselineArm.n);
    r.base_mean_log_us = v.baselineArm.meanLog;
    r.base_var_log_us = v.baselineArm.varLog;
    r.gain = v.gain;
    r.gain_low = v.gainLow;
    r.gain_high = v.gainHigh;
    r.state = std::string(learner::verdictStateName(v.state));
    rows.push_back(std::move(r));
  }
  const size_t testing = verdicts.size() - promoted - dropped;
  if (!scope.record) {
    logInfo("in-job verification: %zu candidate(s): %zu promoted, %zu dropped, %zu still testing (not stored: "
            "DYNAMICCL_RECORD=0)", verdicts.size(), promoted, dropped, testing);
    return;
  }
  const std::string path = databasePath(scope);
  const char* unknownHardware =
      scope.fingerprint.empty() ? " (hardware unknown: `dynamiccl export --from-store` cannot mark them verified)" : "";
  const Status s = writeWithin(path, rows, kStoreBound);
  if (s) {
    logInfo("in-job verification: %zu candidate(s): %zu promoted, %zu dropped, %zu still testing; stored in %s%s",
            verdicts.size(), promoted, dropped, testing, path.c_str(), unknownHardware);
    publishTravelling(rows, scope, by, path);
    return;
  }
  // The store is locked (or failing): a side file of this job's own, moved into the store at the next init.
  const std::string side =
      store::pendingVerdictsPath(path, getpid(), std::chrono::system_clock::now().time_since_epoch().count());
  for (store::VerdictRow& r : rows)  // their time is now, not when the next job moves them
    r.ts_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (const Status kept = writeWithin(side, rows, kStoreBound); !kept) {
    removeStoreFiles(side);
    logWarn("in-job verification: %zu verdict(s) not stored (%s; nor beside it: %s)", rows.size(), s.error().c_str(),
            kept.error().c_str());
    publishTravelling(rows, scope, by, "");
    return;
  }
  logInfo("in-job verification: %zu candidate(s): %zu promoted, %zu dropped, %zu still testing; %s unavailable within "
          "%lld ms (%s), so kept in %s, which the next job's init moves into it%s",
          verdicts.size(), promoted, dropped, testing, path.c_str(), static_cast<long long>(kStoreBound.count()),
          s.error().c_str(), side.c_str(), unknownHardware);
  publishTravelling(rows, scope, by, side);
}

}  // namespace dynamiccl::plugin
