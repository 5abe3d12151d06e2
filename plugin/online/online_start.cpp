#include "plugin/online_contract.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>

#include "abi/abi.h"
#include "features/features.h"
#include "plugin/log.h"
#include "plugin/nccl_version.h"
#include "plugin/online/epoch_agent.h"
#include "plugin/inputs/inputs_check.h"
#include "plugin/online_backend.h"
#include "plugin/online/verdict_store.h"
#include "learner/learner.h"
#include "plugin/learned_network.h"

namespace dynamiccl::plugin {
namespace {
std::atomic<bool> gWarnedNoBackend{false};
std::atomic<bool> gWarnedNoNodeReads{false};
std::atomic<bool> gLoggedOnline{false};
std::atomic<bool> gWarnedNoProfiler{false};
std::atomic<bool> gLoggedVerifyNeedsProfiler{false};
std::atomic<bool> gLoggedVerify{false};
std::atomic<bool> gLoggedPrice{false};

// What profiling a call costs here: the user's calibration, else the published figures for the release.
learner::MeasurementCost measurementCost(const Settings& settings, int ncclVersionCode) {
  learner::MeasurementCost published = learner::MeasurementCost::published(ncclVersionCode);
  if (settings.measurementCost.empty()) {
    if (firstTime(gLoggedPrice))
      logInfo("measurement priced at %.1f%%-%.1f%% of a profiled call's time (%s; DYNAMICCL_MEASUREMENT_COST names a "
              "calibration of this cluster)",
              100 * published.points().front().share, 100 * published.points().back().share, published.source().c_str());
    return published;
  }
  constexpr uint64_t kMaxCalibrationBytes = 1 << 20;
  auto text = readRegularFile(settings.measurementCost, kMaxCalibrationBytes);
  auto model = text ? learner::MeasurementCost::fromJson(*text) : Expected<learner::MeasurementCost>(makeError(text.error()));
  if (!model) {
    if (firstTime(gLoggedPrice))
      logWarn("DYNAMICCL_MEASUREMENT_COST=%s not used (%s); measurement priced by %s", settings.measurementCost.c_str(),
              model.error().c_str(), published.source().c_str());
    return published;
  }
  if (firstTime(gLoggedPrice))
    logInfo("measurement priced by %s (%zu sizes)", model->source().c_str(), model->points().size());
  return *model;
}
}  // namespace

namespace {

// The fingerprint a learned network's rules are generated for, where the profile has a network.
std::optional<TopologyFingerprint> networkFingerprint(const CommShape& shape, const policy::Profile& profile,
                                                      const NetworkPtr& network, const Settings& settings) {
  if (!network) return std::nullopt;
  return fingerprintForRules(shape, profile.hardware, localHostSources(settings.topo)).fingerprint;
}

learner::OnlineConfig learnerConfig(const Settings& settings, learner::LearnerMode mode, int ncclVersionCode) {
  learner::OnlineConfig config;
  config.epochCalls = settings.epochCalls;
  config.exploreTimeShare = settings.budget.explore;
  config.mode = mode;
  config.learnedRulesApply = settings.trust == policy::Trust::All;
  const learner::MeasurementCost price = measurementCost(settings, ncclVersionCode);
  for (int b = 0; b < SizeBucket::kCount; ++b) config.measureCostShare[b] = price.share(SizeBucket::lowest(b));
  config.settledMeasureShare = settings.budget.measure;
  // The channel search asks above NCCL's own count only where the release lets a tuner raise it
  // (before 2.31); an unknown release is taken at its newest rules, where the count is a cap.
  config.channelsCapOnly = ncclVersionCode <= 0 || abi::channelsAreCap(abi::pickRuleFor(ncclVersionCode));
  // Unset: on under RCCL, whose own counts run few channels where more win (the MI355X sweep: 0.84x of
  // RCCL's default in the replayed job); off under NCCL, where no public sweep shows a count to win and
  // a step costs a key of fourteen its promotion on the H100 NVLS set.
  config.searchChannels = settings.searchChannels == OnlineSwitch::Unset ? hostInForce(settings) == abi::Host::Rccl
                                                                           : settings.searchChannels == OnlineSwitch::On;
  return config;
}

void sayStarted(const OnlineComm& c, bool learn, bool verify, bool searchOnly, double budget) {
  logInfo("%s: epoch %llu calls, exploration budget %.3f of time (trials and measurement), backend %s",
          learn ? (verify ? "online updates and in-job verification on" : "online updates on")
          : searchOnly ? "in-job search of NCCL's alternatives on (DYNAMICCL_VERIFY=1, no unverified rule: every "
                         "configuration NCCL's table allows is measured against its choice)"
                       : "in-job verification of unverified rules on (DYNAMICCL_VERIFY=0 turns it off)",
          static_cast<unsigned long long>(c.epochCalls), budget, c.store->describe().c_str());
}

// Where the epoch records are read: etcd through one reader per node (node_reads), unless the node
// has no private directory for it; the verdicts' ring, whose records are removed, never (its reads
// must be the store's).
std::shared_ptr<coord::RecordStore> epochRecordsStore(const std::shared_ptr<coord::RecordStore>& raw,
                                                      const Settings& settings, const std::string& key) {
  if (settings.etcdEndpoints.empty() || !settings.etcd.nodeReads) return raw;
  auto shared = coord::nodeSharedStore(raw, coord::nodeLocalDir(), coord::hex(sha256(key)));
  if (shared.ok()) return std::move(shared.value());
  if (firstTime(gWarnedNoNodeReads))
    logInfo("online: every rank polls %s itself (%s)", raw->describe().c_str(), shared.error().c_str());
  return raw;
}

}  // namespace

std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable,
                                        const policy::DecisionTable& unverified, const policy::Profile& profile,
                                        const NetworkPtr& network,
                                        const Settings& settings, int ncclVersionCode, const std::string& epochKey,
                                        uint64_t firstCall) {
  // No profile: nothing changes. A profile of unverified rules only is a prior to learn from.
  const bool learn = settings.online == OnlineSwitch::On && (!staticTable.empty() || !unverified.empty());
  // Unverified rules are tested in the job wherever this library measures (the profiler role), unless
  // DYNAMICCL_VERIFY=0; with DYNAMICCL_TRUST=all they already apply and there is nothing to verify.
  // A learned network proposes candidates in the job even where its init-time rules are none (its
  // confidence margin keeps them out until measured): it needs a fingerprint every rank shares.
  const std::optional<TopologyFingerprint> networkFp = networkFingerprint(shape, profile, network, settings);
  // DYNAMICCL_VERIFY=1 asks for the search even without a profile: the job then tries what NCCL's own
  // cost table allows at every key (hardware no profile describes yet, on day one).
  const bool searchAsked = settings.verify == VerifySwitch::On;
  const bool candidates =
      settings.trust == policy::Trust::Verified && (!unverified.empty() || networkFp || searchAsked);
  bool verify = candidates && settings.verify != VerifySwitch::Off;
  if (verify && !settings.profilerIsUs) {
    verify = false;
    if (settings.verify == VerifySwitch::On ? firstTime(gWarnedNoProfiler) : firstTime(gLoggedVerifyNeedsProfiler))
      logInfo("%zu unverified rule(s)%s wait for in-job verification, which needs NCCL_PROFILER_PLUGIN to name "
              "this library (it measures them); NCCL's choices stand",
              unverified.ruleCount(), networkFp ? " and the learned policy's proposals" : "");
  }
  if (!learn && !verify) return nullptr;
  // Without the profiler role no rank measures, no leader ever publishes, and every rank would wait
  // out DYNAMICCL_EPOCH_TIMEOUT_MS inside getCollInfo at the first boundary: refuse instead.
  if (!settings.profilerIsUs) {
    if (firstTime(gWarnedNoProfiler))
      logWarn("DYNAMICCL_ONLINE=1 refused: NCCL_PROFILER_PLUGIN does not name this library, so no rank can "
              "measure; static profile only");
    return nullptr;
  }
  auto backend = openOnlineBackend(settings, shape);
  if (!backend.ok()) {
    if (firstTime(gWarnedNoBackend))
      logWarn("%s off (%s); static profile only", learn ? "online updates" : "in-job verification",
              backend.error().c_str());
    return nullptr;
  }
  const learner::OnlineConfig config = learnerConfig(
      settings,
      // Verifying with a learned network: its arm model ranks what the search measures.
      learn ? learner::LearnerMode::Learn : networkFp ? learner::LearnerMode::RankedSearch : learner::LearnerMode::Search,
      ncclVersionCode);
  auto c = std::make_shared<OnlineComm>();
  c->commId = shape.commId;
  c->epochCalls = config.epochCalls;
  c->firstCall = firstCall;
  c->nRanks = std::max(shape.nRanks, 1);
  c->voter = randomHex(3);
  c->callIndex = firstCall;
  c->callsSeen.store(firstCall, std::memory_order_relaxed);
  c->boundaryTimeout_ms = settings.epochTimeout_ms;
  // Epoch records sealed under the key the input check left (bound to its verdict): a table or FROZEN
  // this job's leader did not write reads, on every rank alike, as no table (frozen there).
  const std::shared_ptr<coord::RecordStore> raw = std::move(backend.value());  // verdicts travel unsealed
  const std::string key = epochKey.empty() ? epochKeyUnchecked(shape.commId, coordToken(settings)) : epochKey;
  c->store = coord::sealedStore(epochRecordsStore(raw, settings, key), key,
                                [seen = c->foreignRecords](uint64_t commId, uint64_t boundary) {
                                  if (seen->fetch_add(1, std::memory_order_relaxed) == 0)
                                    logWarn("online: the record of boundary %llu of communicator %016llx is not sealed "
                                            "under this job's key (forged, planted, or an earlier job's): not adopted; "
                                            "every rank freezes there alike",
                                            static_cast<unsigned long long>(boundary),
                                            static_cast<unsigned long long>(commId));
                                });
  learner::CandidateFn candidate;
  if (verify)
    candidate = [table = unverified](int coll, int bucket) { return table.lookup(coll, SizeBucket::lowest(bucket), 1, 0); };
  c->learner = std::make_unique<learner::OnlineLearner>(
      config,
      [table = staticTable](int coll, int bucket) { return table.lookup(coll, SizeBucket::lowest(bucket), 1, 0); },
      std::move(candidate));
  // Before any table: the share the learner's first plan starts from (one formula, the learner's).
  c->initialMeasureThreshold = learner::rateThreshold(c->learner->measurementPlan().rate);
  if (networkFp && (verify || learn)) attachNetwork(*c->learner, network, *networkFp, settings.workload, shape);
  if (verify) {
    c->verifying = true;
    c->verdictScope = verdictScope(shape, profile.hardware, settings);
    c->verdictScope.backend = raw;
    resumeVerdicts(*c->learner, c->verdictScope);
  }
  if (learn ? firstTime(gLoggedOnline) : firstTime(gLoggedVerify))
    sayStarted(*c, learn, verify, unverified.empty() && !networkFp, config.exploreTimeShare);
  addToEpochAgent(c);
  return c;
}

void stopOnline(const std::shared_ptr<OnlineComm>& comm, coord::Deadline by) {
  if (!comm) return;
  removeFromEpochAgent(comm);
  const uint64_t foreign = comm->foreignRecords->load(std::memory_order_relaxed);
  const uint64_t other = comm->otherRecords.load(std::memory_order_relaxed);
  if (foreign > 1 || other > 1)
    logWarn("online: communicator %016llx read %llu record(s) not sealed under this job's key and found %llu other than "
            "it adopted, in all (the first of each said above)",
            static_cast<unsigned long long>(comm->commId), static_cast<unsigned long long>(foreign),
            static_cast<unsigned long long>(other));
  if (!comm->isLeader.load(std::memory_order_relaxed)) return;
  std::vector<learner::Verdict> verdicts;
  uint64_t refreshes = 0, refits = 0, measured = 0;
  learner::MeasurementPlan plan;
  {
    std::lock_guard lock(comm->mutex);
    if (comm->learner) {
      if (comm->verifying) verdicts = comm->learner->verdicts();
      refreshes = comm->learner->learnedRefreshes();
      refits = comm->learner->modelRefits();
      measured = comm->learner->counters().observations;
      plan = comm->learner->measurementPlan();
    }
  }
  // What learning cost, as every figure compared with NCCL should count it.
  const uint64_t calls = comm->callsSeen.load(std::memory_order_relaxed);
  logInfo("online: communicator %016llx measured %llu of %llu calls (%.2f%%); at the end %s %.2f%% of calls, priced at "
          "%.2f%% of collective time; gained %.2f%% over NCCL's choices where settled; %d of %d keys still searching",
          static_cast<unsigned long long>(comm->commId), static_cast<unsigned long long>(measured),
          static_cast<unsigned long long>(calls), calls ? 100.0 * static_cast<double>(measured) / static_cast<double>(calls) : 0.0,
          plan.stopped ? "measuring stopped," : plan.searching ? "still searching," : "settled,", 100 * plan.rate,
          100 * plan.costShare, 100 * plan.gainShare, plan.searchingKeys, plan.keys);
  if (refreshes || refits)
    logInfo("online: communicator %016llx re-evaluated its learned rules with recent timings %llu time(s) and refit "
            "the network's last layer on this job's measurements %llu time(s)",
            static_cast<unsigned long long>(comm->commId), static_cast<unsigned long long>(refreshes),
            static_cast<unsigned long long>(refits));
  saveVerdicts(verdicts, comm->verdictScope, by);
}

}  // namespace dynamiccl::plugin
