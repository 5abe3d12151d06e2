// One rank's life, as NCCL would drive the plugin in it: tuner and profiler roles loaded through
// the harness, then for every call the cost table, the decision, and the measured latency of what
// NCCL runs reported through profiler events. Its accounting: per key and epoch, which
// configuration ran most (the epoch's choice) and what the others cost beyond it (exploration).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "offline/files/files.h"
#include "offline/harness/harness.h"
#include "offline/jobreplay/rank.h"
#include "learner/learner.h"

namespace dynamiccl::jobreplay {
namespace {

constexpr int kMaxReportedChannels = 64;  // NCCL's MAXCHANNELS
// The leader's finalize line ends "; S of K keys still searching" (the plugin's online_start.cpp).
constexpr const char* kKeysSearchingMark = " keys still searching";

enum ExitCode : int { kOk = 0, kTunerOpen = 20, kProfilerOpen, kTunerInit, kProfilerInit, kResultWrite };

using learner::mix64;

// What NCCL's Coll descriptor says of the call: element count (per rank for allgather and
// reducescatter, whose nBytes is the gathered total) and type.
void describeCount(Collective coll, uint64_t bytes, int nRanks, harness::ProfilerColl& pc) {
  const bool perRank = coll == Collective::AllGather || coll == Collective::ReduceScatter;
  const uint64_t share = perRank ? bytes / static_cast<uint64_t>(nRanks) : bytes;
  const bool floats = share % 4 == 0;
  pc.datatype = floats ? "ncclFloat32" : "ncclInt8";
  pc.count = floats ? share / 4 : share;
}

// Per key: the configurations (indices into key.measured) run in the current epoch.
class EpochAccount {
 public:
  explicit EpochAccount(const MeasuredJob& job) : job_(job), ran_(job.keys.size()), tried_(job.keys.size()) {
    for (const JobKey& k : job.keys) finals_.push_back(k.ncclDefault);
  }
  void add(size_t key, size_t config) {
    ran_[key].push_back(config);
    if (std::find(tried_[key].begin(), tried_[key].end(), config) == tried_[key].end()) tried_[key].push_back(config);
  }
  // Per key, the measured configurations in the order the job first ran them (the search's trials).
  const std::vector<std::vector<size_t>>& tried() const { return tried_; }
  // Closes the epoch: calls off the majority cost their mean's excess over the majority's.
  void close() {
    std::vector<sim::Config> epoch(ran_.size());  // Algo::Default: the key had no call
    for (size_t k = 0; k < ran_.size(); ++k) {
      if (ran_[k].empty()) continue;
      const JobKey& key = job_.keys[k];
      std::vector<uint64_t> counts(key.measured.size(), 0);
      for (size_t c : ran_[k]) ++counts[c];
      const size_t majority = static_cast<size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
      const double majority_us = key.measured[majority].mean_us;
      for (size_t c : ran_[k])
        if (c != majority) explore_us_ += std::max(0.0, key.measured[c].mean_us - majority_us), ++exploreCalls_;
      finals_[k] = key.measured[majority].config;
      epoch[k] = key.measured[majority].config;
      ran_[k].clear();
    }
    epochs_.push_back(std::move(epoch));
  }
  double explore_us() const { return explore_us_; }
  uint64_t exploreCalls() const { return exploreCalls_; }
  const std::vector<sim::Config>& finals() const { return finals_; }
  const std::vector<std::vector<sim::Config>>& epochs() const { return epochs_; }

 private:
  const MeasuredJob& job_;
  std::vector<std::vector<size_t>> ran_, tried_;
  std::vector<sim::Config> finals_;
  std::vector<std::vector<sim::Config>> epochs_;
  double explore_us_ = 0;
  uint64_t exploreCalls_ = 0;
};

void writeLog(const std::string& path) {
  std::string log;
  for (const std::string& l : harness::LogCapture::lines()) log += l + "\n";
  (void)files::writeFile(path, log);  // best effort: the exit code, not the log, says whether the rank failed
}

[[noreturn]] void leave(int code, const RankPlan& plan) {
  writeLog(plan.logPath);
  _exit(code);  // no destructors or atexit handlers of the parent's state
}

}  // namespace

learner::MeasurementCost defaultMeasurementCost() {
  return learner::MeasurementCost::published(harness::OpenOptions{}.ncclVersion);
}

void runRank(const RankPlan& plan) {
  const MeasuredJob& job = *plan.job;
  const JobOptions& o = *plan.options;
  const auto born = std::chrono::steady_clock::now();
  for (const auto& [name, value] : plan.env) setenv(name.c_str(), value.c_str(), 1);
  auto tuner = harness::TunerLibrary::open(o.pluginPath);
  if (!tuner) leave(kTunerOpen, plan);
  auto prof = harness::ProfilerLibrary::open(o.pluginPath);
  if (!prof) leave(kProfilerOpen, plan);
  ncclTunerConstants_v5_t constants = model::defaultTunerConstants();
  harness::CommSpec spec;
  spec.commId = plan.commId;
  spec.nRanks = job.nRanks;
  spec.nNodes = job.nNodes;
  spec.minRanksPerNode = spec.maxRanksPerNode = job.nRanks / job.nNodes;
  spec.constants = &constants;
  auto comm = (*tuner)->init(spec);
  if (!comm) leave(kTunerInit, plan);
  const abi::PickRule rule = (*tuner)->pickRule();
  int mask = 0;
  void* pctx = nullptr;
  if ((*prof)->init(harness::ProfilerCommSpec{plan.commId, job.nRanks, job.nNodes, plan.rank}, &mask, &pctx) !=
          ncclSuccess ||
      !pctx)
    leave(kProfilerInit, plan);

  RankOutcome r;
  r.rank = plan.rank;
  r.keyJob_us.assign(job.keys.size(), 0);
  r.keyDefault_us.assign(job.keys.size(), 0);
  r.keyMeasure_us.assign(job.keys.size(), 0);
  r.keyProfiled.assign(job.keys.size(), 0);
  // NCCL profiles a call only when the mask holds the profiler's bits as the call is enqueued.
  const int bits = (*prof)->version() >= 4 ? int(ncclProfileColl | ncclProfileKernelCh) : int(ncclProfileColl);
  const learner::MeasurementCost price = o.measurementCost ? *o.measurementCost : defaultMeasurementCost();
  EpochAccount account(job);
  uint64_t epochProfiled = 0;
  uint64_t clock_ns = 1'000'000;
  std::array<uint64_t, kNumCollectives> ncclSeq{};  // NCCL's seqNumber per collective: graph replays advance it too
  // One Coll as NCCL's profiler events give it: every channel spans the call (the profiler waits for each).
  auto emitColl = [&](const JobKey& key, const MeasuredConfig& ran, int nChannels, double lat_us) {
    harness::ProfilerColl pc;
    pc.seq = ncclSeq[static_cast<size_t>(key.coll)]++;
    pc.func = collectiveNcclName(key.coll).data();
    describeCount(key.coll, key.bytes, job.nRanks, pc);
    const std::string algo(algoNcclName(ran.config.algo)), proto(protoNcclName(ran.config.proto));
    pc.algo = algo.c_str();
    pc.proto = proto.c_str();
    pc.nChannels = nChannels;
    pc.rank = plan.rank;
    const auto lat_ns = static_cast<uint64_t>(lat_us * 1000);
    const bool loseStops = o.loseChannelStopsOf && o.loseChannelStopsOf->algo == ran.config.algo &&
                           o.loseChannelStopsOf->proto == ran.config.proto;
    void* h = nullptr;
    (*prof)->startColl(pctx, pc, &h);
    for (int ch = 0; ch < nChannels; ++ch) {
      void* kernel = nullptr;
      (*prof)->startKernelCh(pctx, h, ch, clock_ns, &kernel);
      if (loseStops) continue;
      (*prof)->kernelChStop(kernel, clock_ns + lat_ns);
      (*prof)->stop(kernel);
    }
    (*prof)->stop(h);
    clock_ns += lat_ns + 1000;
  };
  r.init_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - born).count();
  for (uint64_t i = 0; i < plan.calls; ++i) {
    const size_t k = i % job.keys.size();
    const JobKey& key = job.keys[k];
    const bool profiled = (__atomic_load_n(&mask, __ATOMIC_RELAXED) & bits) == bits;  // read at enqueue, as NCCL does
    const auto callStart = std::chrono::steady_clock::now();
    const harness::Outcome outcome = (*comm)->run(int(key.coll), key.bytes, key.costTable, 0);
    // An epoch boundary's cost: the leader publishes at the epoch's last call, every rank adopts at the next's first.
    const double call_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - callStart).count();
    if ((i + 1) % o.epochCalls == 0) r.boundaryCall_us.push_back(call_us);
    else if (i % o.epochCalls == 0 && i > 0) r.boundaryCall_us.back() += call_us;
    const harness::Choice& c = outcome.choice;
    r.decisionHash = mix64(r.decisionHash ^ (static_cast<uint64_t>(c.algo + 1) << 8 | static_cast<uint64_t>(c.proto + 1)) ^
                           (static_cast<uint64_t>(c.nChannels) << 16));
    // What the tuner forced runs as its forced rows measured it; what NCCL chose, as its default rows.
    // NCCL's own choice (the tuner chose nothing) is the default's pair at whatever count the tuner wrote.
    JobKey::Run run = c.algo < 0 ? key.run(key.ncclDefault.algo, key.ncclDefault.proto, false, c.nChannels, rule)
                                 : key.run(Algo(c.algo), Proto(c.proto), outcome.forced, c.nChannels, rule);
    if (c.algo < 0 && !run.arm) run = {&key.byDefault(), std::max(key.byDefault().ncclChannels, 1)};
    const MeasuredConfig* ran = run.arm;
    if (!ran) {
      ++r.unmeasuredCalls;  // NCCL's table marked it IGNORE: a plugin that picks it anyway is a finding
    } else {
      const double lat_us =
          drawLatency_us(*ran, job.repeatSigma, o.seed, i) * congestionFactor(o.congestion, i, key, ran->config);
      // The same call had NCCL been left alone, unprofiled: the job's net figure is paired call by call.
      const double default_us = drawLatency_us(key.byDefault(), job.repeatSigma, o.seed, i) *
                                congestionFactor(o.congestion, i, key, key.byDefault().config);
      const double measure_us = profiled ? lat_us * price.share(key.bytes) : 0;
      r.total_us += lat_us;
      r.measure_us += measure_us;
      r.keyJob_us[k] += lat_us + measure_us;
      r.keyDefault_us[k] += default_us;
      r.keyMeasure_us[k] += measure_us;
      r.keyProfiled[k] += profiled ? 1 : 0;
      r.profiledCalls += profiled ? 1 : 0;
      account.add(k, static_cast<size_t>(ran - key.measured.data()));
      // The channels NCCL runs under the release emulated (JobKey::run): the plugin's count replaces NCCL's
      // own before 2.31 and only lowers it from 2.31; on a channel sweep, the nearest measured count.
      const int channels = std::clamp(run.channels, 1, kMaxReportedChannels);
      if (profiled) emitColl(key, *ran, channels, lat_us);
      // This call was also captured into a CUDA graph: NCCL replays its plan without asking the tuner.
      if (profiled && o.graphs.every > 0 && i % o.graphs.every == o.graphs.every - 1)
        for (int g = 0; g < o.graphs.replays; ++g, ++r.graphReplays)
          emitColl(key, *ran, channels, lat_us * o.graphs.latencyFactor);
    }
    epochProfiled += profiled ? 1 : 0;
    if ((i + 1) % o.epochCalls == 0 || i + 1 == plan.calls) {
      account.close();
      r.epochProfiled.push_back(epochProfiled);
      epochProfiled = 0;
    }
    if (o.paceEvery > 0 && i % o.paceEvery == static_cast<uint64_t>(o.paceEvery - 1))
      std::this_thread::sleep_for(std::chrono::microseconds(o.pace_us));
  }
  (*prof)->finalize(pctx);
  comm.value().reset();  // the tuner's finalize: the leader stores its verdicts here
  r.calls = plan.calls;
  // The leader's finalize line says how many of its keys still search (plugin/online/online_start.cpp).
  for (const std::string& l : harness::LogCapture::lines())
    if (const size_t at = l.find(kKeysSearchingMark); at != std::string::npos) {
      const size_t from = l.rfind("; ", at);
      if (from != std::string::npos) std::sscanf(l.c_str() + from + 2, "%d of %d", &r.keysSearching, &r.keysAtEnd);
    }
  r.explore_us = account.explore_us();
  r.exploreCalls = account.exploreCalls();

  nlohmann::json out;
  out["calls"] = r.calls;
  out["hash"] = r.decisionHash;
  out["unmeasured"] = r.unmeasuredCalls;
  out["total_us"] = r.total_us;
  out["explore_us"] = r.explore_us;
  out["explore_calls"] = r.exploreCalls;
  out["graph_replays"] = r.graphReplays;
  out["profiled"] = r.profiledCalls;
  out["measure_us"] = r.measure_us;
  out["key_job_us"] = r.keyJob_us;
  out["key_default_us"] = r.keyDefault_us;
  out["key_measure_us"] = r.keyMeasure_us;
  out["key_profiled"] = r.keyProfiled;
  out["epoch_profiled"] = r.epochProfiled;
  out["init_us"] = r.init_us;
  out["keys_at_end"] = r.keysAtEnd;
  out["keys_searching"] = r.keysSearching;
  out["boundary_call_us"] = r.boundaryCall_us;
  for (const sim::Config& f : account.finals()) out["finals"].push_back({int(f.algo), int(f.proto), f.nChannels});
  out["tried"] = account.tried();
  out["epochs"] = nlohmann::json::array();
  for (const auto& epoch : account.epochs()) {
    nlohmann::json e = nlohmann::json::array();
    for (const sim::Config& c : epoch) e.push_back({int(c.algo), int(c.proto), c.nChannels});
    out["epochs"].push_back(std::move(e));
  }
  if (!files::writeFile(plan.resultPath, out.dump())) leave(kResultWrite, plan);
  leave(kOk, plan);
}

std::string rankExitReason(int code) {
  switch (code) {
    case kTunerOpen: return "could not open the tuner role";
    case kProfilerOpen: return "could not open the profiler role";
    case kTunerInit: return "the tuner's init failed";
    case kProfilerInit: return "the profiler's init failed";
    case kResultWrite: return "could not write its result";
    default: return "exit code " + std::to_string(code);
  }
}

Expected<RankOutcome> readRankResult(const std::string& path, int rank, size_t nKeys) {
  std::ifstream in(path);
  if (!in) return makeError("wrote no result");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("wrote an unreadable result");
  RankOutcome r;
  r.rank = rank;
  r.finished = true;
  r.calls = j.value("calls", uint64_t{0});
  r.decisionHash = j.value("hash", uint64_t{0});
  r.unmeasuredCalls = j.value("unmeasured", uint64_t{0});
  r.total_us = j.value("total_us", 0.0);
  r.explore_us = j.value("explore_us", 0.0);
  r.exploreCalls = j.value("explore_calls", uint64_t{0});
  r.graphReplays = j.value("graph_replays", uint64_t{0});
  r.profiledCalls = j.value("profiled", uint64_t{0});
  r.measure_us = j.value("measure_us", 0.0);
  r.keyJob_us = j.value("key_job_us", std::vector<double>{});
  r.keyDefault_us = j.value("key_default_us", std::vector<double>{});
  r.keyMeasure_us = j.value("key_measure_us", std::vector<double>{});
  r.keyProfiled = j.value("key_profiled", std::vector<uint64_t>{});
  r.epochProfiled = j.value("epoch_profiled", std::vector<uint64_t>{});
  r.init_us = j.value("init_us", 0.0);
  r.keysAtEnd = j.value("keys_at_end", -1);
  r.keysSearching = j.value("keys_searching", -1);
  r.boundaryCall_us = j.value("boundary_call_us", std::vector<double>{});
  if (r.keyJob_us.size() != nKeys || r.keyDefault_us.size() != nKeys) return makeError("wrote a result for other keys");
  if (!j.contains("finals") || j["finals"].size() != nKeys) return makeError("wrote a result for other keys");
  auto config = [](const nlohmann::json& c) {
    return sim::Config{Algo(c.at(0).get<int>()), Proto(c.at(1).get<int>()), c.size() > 2 ? c.at(2).get<int>() : 0, 0};
  };
  for (const auto& f : j["finals"]) r.finalConfigs.push_back(config(f));
  for (const auto& t : j.value("tried", nlohmann::json::array())) r.triedOrder.push_back(t.get<std::vector<size_t>>());
  for (const auto& e : j.value("epochs", nlohmann::json::array())) {
    if (e.size() != nKeys) return makeError("wrote an epoch for other keys");
    r.epochConfigs.emplace_back();
    for (const auto& c : e) r.epochConfigs.back().push_back(config(c));
  }
  return r;
}

}  // namespace dynamiccl::jobreplay
