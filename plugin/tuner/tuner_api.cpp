#include "plugin/tuner/tuner_api.h"

#include <algorithm>
#include <new>
#include <string>

#include "plugin/context_registry.h"
#include "plugin/guard.h"
#include "plugin/log.h"
#include "plugin/measurement_gate.h"
#include "plugin/metrics/comm_metrics.h"
#include "plugin/metrics/metrics_file.h"
#include "plugin/nccl_version.h"
#include "plugin/online_contract.h"
#include "plugin/settings/settings.h"
#include "plugin/tuner/background_work.h"
#include "plugin/tuner/cost_table_edit.h"
#include "plugin/tuner/tuner_context.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {
namespace {

std::atomic<bool> gWarnedBadTableShape{false};
std::atomic<bool> gWarnedOddTable{false};  // per process: jobs create hundreds of communicators

[[gnu::always_inline]] inline void rememberChunk(TunerContext& c, int coll, const policy::Decision* d) {
  TunerContext::ChunkMemory& m = c.lastChunk[coll];
  m.valid = d && d->chunkBytes > 0;
  m.algo = d ? static_cast<int8_t>(d->algo) : -1;
  m.proto = d ? static_cast<int8_t>(d->proto) : -1;
  m.chunkBytes = d ? d->chunkBytes : 0;
}

[[gnu::always_inline]] inline void logDecision(TunerContext& c, int coll, uint64_t nBytes, const policy::Decision* d, bool online) {
  if (!d) {
    c.view.decisions->record(coll, nBytes, Algo::Default, Proto::Default, 0, 0, DecisionSource::NcclDefault);
    return;
  }
  c.view.decisions->record(coll, nBytes, d->algo, d->proto, d->nChannels, d->chunkBytes,
                     online ? DecisionSource::Online : DecisionSource::Table);
}

// Measuring costs the job: only a context with a stake steers NCCL's mask (the leader of an online
// communicator, or DYNAMICCL_BUDGET record=), and only for the next call, which NCCL reads it for.
[[gnu::noinline]] void steerMeasuring(TunerContext& c) {
  const bool leads = c.online && c.view.decisions->leaderHere();
  // The profiler's rank says who leads from init on: the leader need not wait for a measured call
  // (the first epoch measures none) to learn that it publishes.
  if (leads && !c.online->isLeader.load(std::memory_order_relaxed)) c.online->isLeader.store(true, std::memory_order_relaxed);
  if (!leads && !c.recordThreshold) return;
  const uint64_t next = c.online ? c.online->callIndex : 0;
  bool on = leads && measuresCall(*c.online, next);
  if (!on && c.recordThreshold) {
    uint64_t calls = 0;
    for (int k = 0; k < kNumCollectives; ++k) calls += c.view.decisions->callsSoFar(k);
    on = learner::measuredCall(c.view.shape.commId, calls, 0, c.recordThreshold);
  }
  if (measurementGate().set(on)) c.view.decisions->measuredFromNow();
}
[[gnu::always_inline]] inline void steerMeasurement(TunerContext& c) {
  if (c.online || c.recordThreshold) steerMeasuring(c);  // most contexts have no stake: one test
}

// Every decided call ends here: what ran is remembered for getChunkSize and logged for the profiler.
[[gnu::always_inline]] inline void endCall(TunerContext& c, int coll, uint64_t nBytes, const policy::Decision* applied,
                                           policy::Decision& ran, bool online) {
  if (applied && !c.host->callsGetChunkSize) ran.chunkBytes = 0;  // never asked: no chunk is ours to claim
  if (c.host->callsGetChunkSize) rememberChunk(c, coll, applied ? &ran : nullptr);  // read by getChunkSize alone
  logDecision(c, coll, nBytes, applied ? &ran : nullptr, online);
  steerMeasurement(c);
}

// Whether a call may take the usual path (tunerGetCollInfo): the static table alone decides, nothing the
// user fixed stands in its way, and the host takes NCCL's 7x3. Set at init and when prepared decisions land.
bool takesUsualPath(const TunerContext& c) {
  return !c.awaitingPrepared && !c.table.empty() && !c.online && !c.fixed.keepAlgo && !c.fixed.limits.keepProto &&
         abi::acceptsShape(*c.host, kNumAlgos, kNumProtos);
}

// At finalize, one line: of the calls the profiler saw, the share the tuner was asked about (the rest
// are no samples and no "not honoured"). Calls neither saw (RCCL's direct path without a kernel event)
// are not counted.
void logReach(const DecisionLog& d, uint64_t commId) {
  using Ran = DecisionLog::Ran;
  const uint64_t asked = d.profiled(Ran::Honoured) + d.profiled(Ran::NotHonoured) + d.profiled(Ran::NcclChoice);
  const uint64_t all = asked + d.profiled(Ran::NotAsked);
  if (all == 0) return;
  logInfo("communicator %llx: %llu of %llu profiled calls reached the tuner (%.1f%%); NCCL never asked it about the "
          "rest (CUDA-graph replays; on RCCL, its direct path): not samples, not counted against it",
          static_cast<unsigned long long>(commId), static_cast<unsigned long long>(asked),
          static_cast<unsigned long long>(all), 100.0 * static_cast<double>(asked) / static_cast<double>(all));
}

// Decisions prepared off NCCL's init path (a big profile's parse, the ranks' input check): NCCL's
// choices before their first call; at that call they take over (waiting for them only where the
// preparation is not done yet).
bool beforePrepared(TunerContext& c) {
  if (c.callsUntilPrepared > 0) {
    --c.callsUntilPrepared;
    return true;
  }
  PendingDecisions& p = *c.pending;
  p.ready.wait(false, std::memory_order_acquire);  // no system call once ready
  c.table = std::move(p.decisions.table);
  c.unverified = std::move(p.decisions.unverified);
  c.online = std::move(p.decisions.online);
  c.awaitingPrepared = false;
  return false;
}

}  // namespace

ncclResult_t tunerInit(int abiVersion, void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logger, const ncclNvlDomainInfo_v5_t* nvlDomainInfo) {
  if (!context) return ncclSuccess;
  *context = nullptr;
  setLogger(logger);
  const std::shared_ptr<const Settings> settings = currentSettings();
  testThrowPoint(Entry::TunerInit);
  std::shared_ptr<const LoadedProfile> loaded = currentProfile(*settings);
  reapBackgroundWork();  // a parse that ended is joined here, off the hot path
  // Strict mode parses at init, so `bad` is final here (a background parse may still be writing it).
  if (loaded->settings.strict && loaded->bad) return ncclInvalidUsage;
  auto c = std::make_unique<TunerContext>();
  c->abiVersion = abiVersion;
  const NcclRules rules = resolveNcclRules(*settings);
  c->pickRule = rules.rule;
  c->host = &rules.hostRules();
  c->fixed = userFixed(*settings, rules);
  c->view.shape.commId = commId;
  c->view.shape.nRanks = static_cast<int>(nRanks);
  c->view.shape.nNodes = static_cast<int>(nNodes);
  if (nvlDomainInfo) {
    c->view.shape.minRanksPerNode = nvlDomainInfo->minRanksPerNvlDomain;
    c->view.shape.maxRanksPerNode = nvlDomainInfo->maxRanksPerNvlDomain;
  }
  c->loaded = std::move(loaded);
  CommSetup setup;
  setup.shape = c->view.shape;
  setup.settings = settings;
  setup.rules = rules;
  setup.decisions = c->view.decisions;
  // Every rank decides alike only on alike inputs: where they differ, no rank of the communicator tunes.
  // A check through the store runs off NCCL's init path; the decisions switch at a call every rank knows.
  if (inputsCheckedThroughStore(*settings, c->view.shape)) {
    c->callsUntilPrepared = setup.firstCall = std::max(c->loaded->firstCall, kCheckedFirstCall);
    c->awaitingPrepared = true;
    c->pending = prepareAfterInputCheck(c->loaded, std::move(setup));
  } else {
    // Nothing to check through a store: agreed (a multi-node communicator without a backend says so once).
    setup.inputs = ranksAgreeOnInputs(*settings, c->loaded->sourceDigest, c->view.shape, rules);
    if (c->loaded->firstCall == 0) {
      CommDecisions d = compileDecisions(*c->loaded, c->view.shape, *settings, rules);
      startOnlineFor(d, *c->loaded, setup);
      c->table = std::move(d.table);
      c->unverified = std::move(d.unverified);
      c->online = std::move(d.online);
    } else {
      c->callsUntilPrepared = setup.firstCall = c->loaded->firstCall;
      c->awaitingPrepared = true;
      c->pending = prepareWhenParsed(c->loaded, std::move(setup));
    }
  }
  c->recordThreshold = learner::rateThreshold(settings->budget.record);
  c->metrics = {settings->metricsDir, settings->slurmJobId};
  c->usualPath = takesUsualPath(*c);
  registerContext(&c->view);
  *context = c.release();
  return ncclSuccess;
}

namespace {

[[gnu::noinline, gnu::cold]] void warnOddTable(int coll) {
  if (firstTime(gWarnedOddTable))
    logWarn("cost table with NaN/infinite entries for %s; NCCL's own choices stand for such calls",
            collectiveName(Collective(coll)).data());
}

// The candidates applied to the host's table, and the call's end: both paths' last step.
[[gnu::always_inline]] inline void decideOnTable(TunerContext& c, int coll, uint64_t nBytes, const CostCells& cells,
                                                 const policy::Candidates& candidates, int* nChannels, bool online) {
  policy::Decision ran;  // what the host is told: the decision less what the user or the host keeps
  const policy::Decision* applied = nullptr;
  if (candidates.count) {
    const CellScan scan = scanCostTable(cells);
    if (scan.finite) [[likely]]
      applied = applyCandidates(candidates, cells, nChannels, c.pickRule, c.fixed.limits, scan, &ran);
    else
      warnOddTable(coll);
  }
  endCall(c, coll, nBytes, applied, ran, online);
}

// Every call the usual path does not take: every state, host shape and table.
[[gnu::noinline]] ncclResult_t getCollInfoInGeneral(TunerContext* c, ncclFunc_t collType, size_t nBytes,
                                                    int numPipeOps, float** collCostTable, int numAlgo, int numProto,
                                                    int regBuff, int* nChannels) {
  if (!c || !isTunable(collType)) return ncclSuccess;
  const int coll = static_cast<int>(collType);
  // Logged even with no rules: the log's call count tells an unasked call (graph replay) from a kept choice.
  if ((c->awaitingPrepared && beforePrepared(*c)) || (c->table.empty() && !c->online)) {
    logDecision(*c, coll, nBytes, nullptr, false);
    steerMeasurement(*c);
    return ncclSuccess;
  }
  const abi::HostRules& host = *c->host;
  if (!abi::acceptsShape(host, numAlgo, numProto) || !collCostTable || !nChannels) {
    if (firstTime(gWarnedBadTableShape)) {
      if (host.minAlgos == host.maxAlgos && host.minProtos == host.maxProtos)
        logWarn("cost table of %dx%d (expected %dx%d) or null argument; NCCL's own choices stand", numAlgo, numProto,
                host.minAlgos, host.minProtos);
      else
        logWarn("cost table of %dx%d (%s hands %d-%d x %d-%d) or null argument; %s's own choices stand", numAlgo,
                numProto, host.name, host.minAlgos, host.maxAlgos, host.minProtos, host.maxProtos, host.name);
    }
    rememberChunk(*c, coll, nullptr);
    logDecision(*c, coll, nBytes, nullptr, false);
    return ncclSuccess;
  }
  if (c->fixed.keepAlgo) {  // RCCL_OVERRIDE_ALGO: RCCL runs the user's algorithm whatever the table says
    rememberChunk(*c, coll, nullptr);
    logDecision(*c, coll, nBytes, nullptr, false);
    steerMeasurement(*c);
    return ncclSuccess;
  }
  const CostCells cells{reinterpret_cast<float*>(collCostTable), numAlgo, numProto};
  float scratch[kNumAlgos * kNumProtos];
  const policy::Candidates* learned =
      c->online ? onlinePick(*c->online, coll, nBytes, cells.ours(scratch), c->pickRule) : nullptr;
  const policy::Candidates& candidates = learned ? *learned : c->table.lookup(coll, nBytes, numPipeOps, regBuff);
  decideOnTable(*c, coll, nBytes, cells, candidates, nChannels, learned != nullptr);
  return ncclSuccess;
}

}  // namespace

// The usual call (takesUsualPath, and the table NCCL's 7x3) decides here, without the general path's checks,
// which its state has passed once and for all; any other call takes the general path.
ncclResult_t tunerGetCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels) {
  TunerContext* c = TunerContext::from(context);
  if (c && c->usualPath && numAlgo == kNumAlgos && numProto == kNumProtos && collCostTable && nChannels &&
      isTunable(collType)) [[likely]] {
    const int coll = static_cast<int>(collType);
    const CostCells cells{reinterpret_cast<float*>(collCostTable), kNumAlgos, kNumProtos};
    decideOnTable(*c, coll, nBytes, cells, c->table.lookup(coll, nBytes, numPipeOps, regBuff), nChannels, false);
    return ncclSuccess;
  }
  return getCollInfoInGeneral(c, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, regBuff, nChannels);
}

ncclResult_t tunerGetCollInfoV2(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                                int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels) {
  TunerContext* c = TunerContext::from(context);
  if (!c || !isTunable(collType)) return ncclSuccess;
  const int coll = static_cast<int>(collType);
  if ((c->awaitingPrepared && beforePrepared(*c)) || (c->table.empty() && !c->online) || !algorithm || !protocol ||
      !nChannels)
    return logDecision(*c, coll, nBytes, nullptr, false), ncclSuccess;
  const policy::Candidates* learned = c->online ? onlinePick(*c->online, coll, nBytes, nullptr, c->pickRule) : nullptr;
  const policy::Decision* d =
      c->fixed.keepAlgo ? nullptr
                        : firstFeasibleV2(learned ? *learned : c->table.lookup(coll, nBytes, numPipeOps, 0),
                                          nvlsSupport != 0, collNetSupport != 0, c->view.shape.nNodes);
  policy::Decision ran;
  if (d) {
    ran = *d;
    if (c->fixed.limits.keepChannels) ran.nChannels = 0;
    if (!c->host->callsGetChunkSize) ran.chunkBytes = 0;
    if (!d->keepsAlgoProto()) {
      *algorithm = static_cast<int>(d->algo);
      if (c->fixed.limits.keepProto) ran.proto = Proto::Default;
      else *protocol = static_cast<int>(d->proto);
    }
    if (ran.nChannels > 0) *nChannels = ran.nChannels;
  }
  rememberChunk(*c, coll, d ? &ran : nullptr);
  logDecision(*c, coll, nBytes, d ? &ran : nullptr, learned != nullptr);
  steerMeasurement(*c);
  return ncclSuccess;
}

ncclResult_t tunerGetChunkSize(void* context, ncclFunc_t collType, size_t, int algo, int proto, int,
                               size_t* chunkSize) {
  TunerContext* c = TunerContext::from(context);
  if (!c || !chunkSize || !c->host->callsGetChunkSize || !isTunable(collType) || proto < 0 || proto >= kNumProtos || algo < 0 || algo >= kNumAlgos)
    return ncclSuccess;
  const TunerContext::ChunkMemory& m = c->lastChunk[static_cast<int>(collType)];
  if (!m.valid) return ncclSuccess;
  // NCCL ran something else (a rule that leaves the protocol to NCCL matches any protocol of its algorithm).
  if (m.algo >= 0 && (m.algo != algo || (m.proto >= 0 && m.proto != proto))) return ncclSuccess;
  if (m.chunkBytes > abi::maxTunerChunkBytes(algo, proto)) [[unlikely]] {  // a rule that leaves algo or proto to NCCL
    if (!c->chunksKept++) c->firstChunkKeptPair = algo * kNumProtos + proto;
    return ncclSuccess;
  }
  const uint64_t grain = abi::kChunkGrainBytes[proto];
  *chunkSize = static_cast<size_t>(m.chunkBytes < grain ? grain : m.chunkBytes - m.chunkBytes % grain);
  return ncclSuccess;
}

ncclResult_t tunerFinalize(void* context) {
  // NCCL's communicator destroy waits on this: all of it, the backend's requests included, ends
  // within a second (this bound and what follows it).
  constexpr auto kFinalizeBound = std::chrono::milliseconds(900);
  const coord::Deadline by = std::chrono::steady_clock::now() + kFinalizeBound;
  TunerContext* c = TunerContext::from(context);
  if (!c) return ncclSuccess;
  unregisterContext(&c->view);
  logReach(*c->view.decisions, c->view.shape.commId);
  if (c->chunksKept)  // counted on the hot path, said here: one line per communicator
    logWarn("a rule's chunk was more than NCCL runs correctly for %s/%s (docs/NCCL_CHUNKS.md) on %llu call(s): NCCL's "
            "own chunk stood for them", algoName(static_cast<Algo>(c->firstChunkKeptPair / kNumProtos)).data(),
            protoName(static_cast<Proto>(c->firstChunkKeptPair % kNumProtos)).data(),
            static_cast<unsigned long long>(c->chunksKept));
  struct Free {  // the context goes even when stopping the online agent throws
    TunerContext* c;
    ~Free() {
      c->magic = 0;
      delete c;
    }
  } free{c};
  testThrowPoint(Entry::TunerFinalize);
  reapBackgroundWork();
  if (c->awaitingPrepared) abandonPending(*c->pending, by);
  stopOnline(c->online, by);
  if (!c->metrics.dir.empty()) {
    CommMetrics m = snapshotMetrics(c->view.shape, *c->view.decisions, c->host->name, c->online.get());
    m.ended = true;
    noteMetrics(c->metrics, m);
  }
  return ncclSuccess;
}

}  // namespace dynamiccl::plugin
