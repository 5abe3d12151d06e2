#include "plugin/online/verdict_store.h"

#include <sys/stat.h>

#include <cmath>

#include "plugin/log.h"
#include "store/store.h"

namespace dynamiccl::plugin {
namespace {

// A finalize waits at most 3 x 1 s for a lock other ranks' observation writers hold (they flush at
// finalize too), then drops the verdicts with one line.
constexpr int kBusyTimeout_ms = 2000;  // the job's outcome, a few rows: worth more wait than observations (still bounded)
constexpr int kBusyAttempts = 3;

Expected<std::unique_ptr<store::Store>> openStore(const VerdictScope& scope) {
  store::StoreOptions options;
  options.path = scope.dbPath.empty() ? store::defaultDatabasePath() : scope.dbPath;
  options.busy_timeout_ms = kBusyTimeout_ms;
  options.busy_attempts = kBusyAttempts;
  return store::Store::open(options);
}

uint64_t bucketHighest(int bucket) {
  return bucket + 1 >= SizeBucket::kCount ? UINT64_MAX : SizeBucket::lowest(bucket + 1) - 1;
}

}  // namespace

VerdictScope verdictScope(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                          const Settings& settings) {
  VerdictScope s;
  s.nRanks = shape.nRanks;
  s.nNodes = shape.nNodes;
  s.dbPath = settings.dbPath;
  s.record = settings.record;
  HostSources host = localHostSources();
  host.overrides = settings.topo;
  const RuleFingerprint rf = fingerprintForRules(shape, declared, host);
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

size_t resumeVerdicts(policy::OnlineLearner& learner, const VerdictScope& scope) {
  if (!scope.record) return 0;
  const std::string path = scope.dbPath.empty() ? store::defaultDatabasePath() : scope.dbPath;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;  // no store yet: nothing to resume
  auto db = openStore(scope);
  if (!db.ok()) {
    logWarn("in-job verification starts afresh: store unavailable (%s)", db.error().c_str());
    return 0;
  }
  auto rows = db.value()->latestVerdicts(scope.fingerprint, scope.nRanks, scope.nNodes);
  if (!rows.ok()) {
    logWarn("in-job verification starts afresh: %s", rows.error().c_str());
    return 0;
  }
  size_t resumed = 0;
  for (const store::VerdictRow& r : *rows) {
    if (r.fingerprint != scope.fingerprint) continue;  // "" selects every fingerprint in the query
    const auto coll = parseCollective(r.collective);
    const auto a = parseAlgo(r.algo), ba = parseAlgo(r.base_algo);
    const auto p = parseProto(r.proto), bp = parseProto(r.base_proto);
    if (!r.problem.empty() || !coll || !a || !p || !ba || !bp || r.n < 0 || r.base_n < 0) continue;
    const int bucket = SizeBucket::of(r.min_bytes);
    learner.seed(static_cast<int>(*coll), bucket,
                 policy::ArmSummary{*a, *p, static_cast<uint64_t>(r.n), r.mean_log_us, r.var_log_us});
    learner.seed(static_cast<int>(*coll), bucket,
                 policy::ArmSummary{*ba, *bp, static_cast<uint64_t>(r.base_n), r.base_mean_log_us, r.base_var_log_us});
    ++resumed;
  }
  if (resumed) logInfo("in-job verification resumes %zu candidate(s) from %s", resumed, path.c_str());
  return resumed;
}

void saveVerdicts(const std::vector<policy::Verdict>& verdicts, const VerdictScope& scope) {
  if (verdicts.empty()) return;
  size_t promoted = 0, dropped = 0;
  std::vector<store::VerdictRow> rows;
  for (const policy::Verdict& v : verdicts) {
    promoted += v.state == policy::VerdictState::Promoted;
    dropped += v.state == policy::VerdictState::Dropped;
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
    r.state = std::string(policy::verdictStateName(v.state));
    rows.push_back(std::move(r));
  }
  const size_t testing = verdicts.size() - promoted - dropped;
  if (!scope.record) {
    logInfo("in-job verification: %zu candidate(s): %zu promoted, %zu dropped, %zu still testing (not stored: "
            "DYNAMICCL_RECORD=0)", verdicts.size(), promoted, dropped, testing);
    return;
  }
  auto db = openStore(scope);
  Status s = db.ok() ? db.value()->addVerdicts(rows) : makeError(db.error());
  if (!s) {
    logWarn("in-job verification: %zu verdict(s) not stored (%s)", rows.size(), s.error().c_str());
    return;
  }
  logInfo("in-job verification: %zu candidate(s): %zu promoted, %zu dropped, %zu still testing; stored in %s%s",
          verdicts.size(), promoted, dropped, testing, db.value()->path().c_str(),
          scope.fingerprint.empty() ? " (hardware unknown: `dynamiccl export --from-store` cannot mark them verified)" : "");
}

}  // namespace dynamiccl::plugin
