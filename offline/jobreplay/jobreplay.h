// jobreplay: a job replayed through the real plugin on real measurements. N forked processes are
// the ranks of one communicator; each loads the tuner and profiler roles through offline/harness,
// runs the same sequence of calls (collective, bytes) cycling over a dataset's measured sizes, and
// feeds the profiler role the latency of what NCCL runs after the tuner: one of that
// configuration's measured repeats, the same draw on every rank for the same call.
//
//   auto job = jobreplay::loadMeasuredJob("normalized.csv").value();
//   auto r = jobreplay::replayJob(job, {.pluginPath = p, .env = {{"DYNAMICCL_PROFILE", f}}, .workDir = d});
//   r->ranksAgree; r->keys[i].vsBest(); r->ranks[0].exploreShare();
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "abi/abi.h"
#include "features/features.h"
#include "offline/model/model.h"
#include "offline/sim/sim.h"
#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::jobreplay {

// One configuration measured at a key, every repeat kept.
struct MeasuredConfig {
  sim::Config config;              // what ran: (algo, proto), and the channel count its rows forced (0: NCCL's own)
  std::vector<double> samples_us;  // the rows' times, in row order
  double mean_us = 0;              // their median: what sim::replay and `dynamiccl replay` judge by
  int ncclChannels = 0;            // NCCL's own channel count for it at this size (the platform's model: simulated)
  bool forced = false;             // forced rows; false: NCCL's default rows (what ran when NCCL chose)
  // Log-latency spread between its repeats, shrunk toward the dataset's pooled spread where they are
  // few (0: use the job's); the replayed job draws each call from it (fitted noise, not resampling).
  double sigma = 0;
  // Where the dataset's runs do not establish this arm's gain over NCCL's default, the replayed job
  // draws it around the default's median instead (MeasuredJob::withholdGains); 0: around mean_us.
  double withheld_us = 0;
  int runs() const { return static_cast<int>(samples_us.size()); }  // the real runs behind it
  double draw_us() const { return withheld_us > 0 ? withheld_us : mean_us; }  // the centre of the job's draws
};

// One (collective, size) of the job.
struct JobKey {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  sim::Config ncclDefault;   // what NCCL runs alone: the configuration of the measured default rows
  measurements::DefaultSettledBy defaultSettledBy = measurements::DefaultSettledBy::Model;  // how buildReplayData settled ncclDefault
  model::CostTable costTable{};  // NCCL's table at getCollInfo; configurations never measured are IGNORE
  int defaultChannels = 0;       // the count the default rows report running here (0: unsaid)
  std::vector<MeasuredConfig> measured;  // NCCL's default first

  // The arm of (algo, proto) at `nChannels` (0: NCCL's own count): the forced one when the tuner forced it, else NCCL's default arm when
  // that is the configuration (else whichever exists); nullptr: never measured here.
  const MeasuredConfig* find(Algo algo, Proto proto, bool forcedByTuner = false, int nChannels = 0) const;
  // What runs when the tuner picks (algo, proto) and writes `tunerChannels` (0: none) under the host's
  // `rule`: the arm whose times the call takes and the channels it ran. A pair its rows time only at
  // forced counts (a channel sweep) runs at the measured count nearest what the host runs: its own count
  // (what the default rows report running at this size, else the model's) or the tuner's; the default's
  // pair at the default's own count is the default. arm nullptr: the pair was never measured here.
  struct Run {
    const MeasuredConfig* arm = nullptr;
    int channels = 0;
  };
  Run run(Algo algo, Proto proto, bool forcedByTuner, int tunerChannels, abi::PickRule rule) const;
  bool measuredPair(Algo algo, Proto proto) const;  // some arm of (algo, proto), at any count
  const MeasuredConfig& best() const;                        // lowest mean
  // Lowest mean among the arms a job can choose: a forced run of NCCL's own (algo, proto) is the same
  // arm as leaving NCCL alone (a real job cannot tell them apart), so it is left out.
  const MeasuredConfig& bestChoosable() const;
  const MeasuredConfig& byDefault() const { return measured.front(); }
  // Lowest draw centre: the best the dataset's runs establish (every arm's median where none is withheld).
  const MeasuredConfig& bestEstablished() const;
};

// The measured keys of one communicator shape of a dataset.
struct MeasuredJob {
  std::string source;  // the CSV
  std::string system;
  int nRanks = 0, nNodes = 0;
  model::Topology topology;  // the platform the system string names, with this shape
  std::vector<JobKey> keys;  // by collective, then size
  // Spread of log-latency between repeats of one configuration at one point, pooled over the
  // dataset (every shape); repeatGroups configurations had two repeats or more. 0.03 where none had.
  double repeatSigma = 0.03;
  int repeatGroups = 0;
  std::vector<std::string> notes;  // rows not used, and why (never dropped silently)
  int keysSettled(measurements::DefaultSettledBy c) const;  // keys whose default rows' configuration was settled so
  std::string standIn;  // measurements::kStandInPlatform where no platform describes the system: topology is its
  // A gain the dataset's runs cannot establish is none the replayed job can find: every arm faster than
  // NCCL's default whose gain `established` denies is drawn around the default's median (its
  // withheld_us). Draws stand for calls, not runs, so they must not decide what the runs cannot.
  // Returns how many arms were withheld.
  int withholdGains(const std::function<bool(const JobKey&, const MeasuredConfig&)>& established);
};

// Which shape: 0 / empty picks the shape with the most keys that have two measured configurations
// or more (ties: more ranks). Keys need NCCL's default measured (a default row, or the forced row of
// the configuration NCCL's model picks) and at least one configuration.
struct ShapeChoice {
  int nRanks = 0, nNodes = 0;
  std::string system;  // substring of the system string
};
Expected<MeasuredJob> loadMeasuredJob(const std::string& csvPath, const ShapeChoice& shape = {});

// A job on the simulated cluster (every figure from it is simulated): at each (collective, size)
// the configurations NCCL's table allows and the simulator can run, (algo, proto) with NCCL's
// channel count, `repeats` noisy samples each; NCCL's default from NCCL's model.
Expected<MeasuredJob> simulatedJob(const model::Topology& topo, const sim::SimParams& params,
                                   const model::NcclReference& nccl, const std::vector<Collective>& collectives,
                                   const std::vector<uint64_t>& sizes, int repeats = 8, uint64_t seed = 1);

// Latency of call `callIndex` running `c`: lognormal around its measured median with its fitted
// spread (c.sigma, else `sigma`), mean-corrected so the job's mean is the median the judge uses. A
// pure function of its arguments: every rank draws the same for the same call, as every rank of a
// real collective sees one time.
double drawLatency_us(const MeasuredConfig& c, double sigma, uint64_t seed, uint64_t callIndex);

// A congestion episode: during calls [fromCall, toCall) of the job (the call index every rank
// shares), at the keys of [minBytes, maxBytes], the listed configurations (empty: every one) run
// `factor` times slower than measured. A pure function of the call, so every rank sees the same.
struct CongestionEpisode {
  uint64_t fromCall = 0, toCall = 0;
  double factor = 1;
  std::vector<sim::Config> configs;  // matched on (algo, proto)
  uint64_t minBytes = 0, maxBytes = UINT64_MAX;

  bool hits(uint64_t callIndex, const JobKey& key, const sim::Config& ran) const;
};
// The latency factor of call `callIndex` running `ran` at `key`: the product of the episodes' that hit it.
double congestionFactor(const std::vector<CongestionEpisode>& episodes, uint64_t callIndex, const JobKey& key,
                        const sim::Config& ran);

// What the replayed job charges a profiled call, and the plugin prices, unless JobOptions names
// another: the published figures of the release the harness emulates (2.28.9: priced as 2.29's).
learner::MeasurementCost defaultMeasurementCost();

struct JobOptions {
  std::string pluginPath;      // the plugin library (tuner and profiler roles)
  // The price of a profiled call: charged on every call the rank's mask profiled, and handed to the
  // plugin (DYNAMICCL_MEASUREMENT_COST) so it prices the same; nullptr: defaultMeasurementCost().
  std::shared_ptr<const learner::MeasurementCost> measurementCost;
  uint64_t iterations = 1000;  // passes over the keys; calls per rank are rounded up to whole epochs
  uint64_t epochCalls = 1000;  // DYNAMICCL_EPOCH_CALLS in every rank, and the epoch of the accounting
  uint64_t seed = 1;           // latency draws
  uint64_t commId = 0;         // 0: derived from the seed
  // Set in every rank before it loads the plugin, after jobreplay's own defaults (which they
  // override): DYNAMICCL_TOPO of the job's topology, NCCL_PROFILER_PLUGIN naming the plugin,
  // DYNAMICCL_EPOCH_CALLS, and DYNAMICCL_COORD_DIR=<workDir>/coord (fresh for every job).
  std::vector<std::pair<std::string, std::string>> env;
  // Set in rank r after `env` (e.g. DYNAMICCL_DB of its node's store file); empty: nothing more.
  std::function<std::vector<std::pair<std::string, std::string>>(int rank)> rankEnv;
  std::string workDir;         // results, each rank's log, coordination directory; created
  double timeout_s = 120;      // per rank: a rank still running then is killed and reported
  // A real job's collectives take microseconds to milliseconds, these calls nanoseconds: each rank
  // sleeps pace_us every paceEvery calls so the profiler's worker keeps up, as in a job.
  int paceEvery = 50;
  int pace_us = 500;
  std::function<void(const std::string&)> progress;  // a line per event (ranks started, finished)
  // Run only the first this many ranks (0: all), the leader among them: a 32-rank simulated job on
  // a 2-core machine. The leader never waits for the others, so what they decide is unchanged.
  int processes = 0;
  std::vector<CongestionEpisode> congestion;  // none: the measurements as they are
  // CUDA graphs: every `every`-th call is also captured, and NCCL replays its plan `replays` times
  // without asking the tuner (the profiler sees each replay, timed latencyFactor x the eager call).
  struct GraphReplays {
    uint64_t every = 0;  // 0: no graphs
    int replays = 0;
    double latencyFactor = 1.0;
  } graphs;
  // Calls running this (algo, proto) report their channels' starts but never their stops, as when
  // NCCL enqueued far ahead: the profiler's sweep completes them on host time, with no GPU time.
  std::optional<sim::Config> loseChannelStopsOf;
};

// What one rank saw.
struct RankOutcome {
  int rank = 0;
  bool finished = false;  // wrote its result; else `failure` says why
  std::string failure;
  uint64_t calls = 0;
  uint64_t decisionHash = 0;      // every call's (algo, proto, channels), in order
  uint64_t unmeasuredCalls = 0;   // NCCL ran a configuration nobody measured there (none expected)
  double total_us = 0;            // collective time: the drawn latencies (what profiling cost: measure_us)
  uint64_t profiledCalls = 0;     // calls NCCL profiled (the mask held the profiler's bits)
  double measure_us = 0;          // what profiling them cost (JobOptions::measurementCost)
  // Per key (job.keys order): the job's time (drawn + measurement), the same calls at NCCL's default
  // unprofiled (the same draws: paired), what measuring cost, how many calls were profiled.
  std::vector<double> keyJob_us, keyDefault_us, keyMeasure_us;
  std::vector<uint64_t> keyProfiled;
  std::vector<uint64_t> epochProfiled;  // per epoch, the calls profiled
  double init_us = 0;                   // from the rank's start (fork) to its first call: both roles loaded and initialized
  // The leader's search at the job's end, from its finalize line: keys with calls, and those still
  // searching (-1: the rank logged none, as a rank that leads nothing).
  int keysAtEnd = -1, keysSearching = -1;
  std::vector<double> boundaryCall_us;  // per epoch boundary crossed, the wall time of the call that crossed it
  // The share of calls profiled over the last `epochs` epochs (a settled job's): at most 1% by default.
  double settledProfiledShare(size_t epochs, uint64_t epochCalls) const {
    const size_t n = std::min(epochs, epochProfiled.size());
    uint64_t p = 0;
    for (size_t i = epochProfiled.size() - n; i < epochProfiled.size(); ++i) p += epochProfiled[i];
    return n ? static_cast<double>(p) / static_cast<double>(n * epochCalls) : 0;
  }
  double explore_us = 0;          // calls off their epoch's majority for the key: excess of that
                                  // configuration's measured mean over the majority's (0 when faster)
  uint64_t exploreCalls = 0;      // how many calls ran off their epoch's majority
  uint64_t graphReplays = 0;      // profiler calls of CUDA-graph replays (JobOptions::graphs): never consulted
  std::vector<sim::Config> finalConfigs;  // per key (job.keys order): the majority of the final epoch
  // Per epoch, per key: the configuration that ran most (Algo::Default where the key had no call).
  std::vector<std::vector<sim::Config>> epochConfigs;
  std::vector<std::vector<size_t>> triedOrder;  // per key: indices into JobKey::measured, in the order first run
  double exploreShare() const { return total_us > 0 ? explore_us / total_us : 0; }
  double measureShare() const { return total_us > 0 ? measure_us / total_us : 0; }
  double profiledShare() const { return calls > 0 ? static_cast<double>(profiledCalls) / calls : 0; }
};

// The job's result per key: what ran in the final epoch against NCCL's default and the measured best
// (the lowest median, JobKey::best), all measured means.
struct KeyOutcome {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  sim::Config ncclDefault, finalConfig, best;
  double default_us = 0, final_us = 0, best_us = 0;
  // The final configuration over two stricter bests: the best arm a job can test (JobKey::bestChoosable:
  // a forced run of NCCL's own configuration left out) and the best the runs establish
  // (JobKey::bestEstablished, on draw centres: a withheld gain is no gain).
  double vsBestChoosable = 1, vsBestEstablished = 1;
  measurements::DefaultSettledBy defaultSettledBy = measurements::DefaultSettledBy::Model;  // how ncclDefault was settled (JobKey's)
  // The search: alternatives to NCCL's default the key has (measured configurations NCCL's table
  // allows), how many the job tried, and after how many trials it had tried the best arm it can test (bestChoosable; 0: that
  // best is NCCL's default; -1: never tried). Trying every arm would take `alternatives` trials.
  int alternatives = 0, tried = 0, trialsToBest = -1;
  double vsBest() const { return final_us / best_us; }
  // The measured best is a forced twin of NCCL's own configuration, which no job can test apart from it.
  bool bestIsDefaultsTwin() const { return vsBest() > vsBestChoosable; }
  double vsDefault() const { return final_us / default_us; }
  // The whole job at this key, learning included: every call as drawn plus what measuring cost,
  // against the same calls at NCCL's default unprofiled (the leader's view: it pays for measuring).
  double job_us = 0, jobDefault_us = 0, measure_us = 0;
  uint64_t calls = 0, profiled = 0;
  double netVsDefault() const { return jobDefault_us > 0 ? job_us / jobDefault_us : 1; }
};

struct JobResult {
  std::vector<RankOutcome> ranks;
  std::vector<KeyOutcome> keys;  // from the first finished rank
  bool allFinished = false;
  bool ranksAgree = false;       // every rank finished with the same decision hash and per-epoch configs
  uint64_t callsPerRank = 0;
  double wall_s = 0;
  std::string workDir;
  uint64_t commId = 0;           // the communicator the ranks formed
  uint64_t epochCalls = 0;
};

// Runs the job: forks job.nRanks processes, waits for each at most o.timeout_s. Errors only when the
// job cannot start (no work dir, fork failed, the plugin already loaded in this process: a forked
// rank would inherit its state instead of loading it); a rank's failure or hang is in the result.
Expected<JobResult> replayJob(const MeasuredJob& job, const JobOptions& o);


// `dynamiccl replay`: a profile's decisions, made by the real plugin (NCCL's cost table from our
// model, the cheapest entry after its edits runs), at every measured point of a dataset, judged on
// the measured times (sim::replay).
struct ProfileJudgingPlan {
  std::string data;                // a normalized.csv
  std::string system;              // only rows whose system contains this
  std::string profile;             // what the plugin loads (DYNAMICCL_PROFILE)
  std::string pluginPath;
  std::string trust = "verified";  // DYNAMICCL_TRUST
  std::string ncclVersion;         // the release the plugin is loaded as; "": the one every row names, else 2.28.9
  bool asMeasured = true;          // the plugin probes the data's hardware (DYNAMICCL_TOPO) where it holds one
};
struct ProfileJudgement {
  std::shared_ptr<const measurements::ReplayData> data;  // the points summary.perPoint and forced name
  sim::ReplaySummary summary;
  std::set<const measurements::ReplayPoint*> forced;     // where the plugin forced its choice (wrote a zero cost)
  std::vector<std::string> hardwareEnv;         // "K=V" the plugin's probe saw; empty: this host's
  bool rcclHost = false;                        // the rows were measured on RCCL: the plugin ran under its rules
  std::string pluginPath;
  int tunerVersion = 0;
};
Expected<ProfileJudgement> judgeProfile(const ProfileJudgingPlan& plan);

// A table the leader published for the job: in force from call `boundary` on.
struct PublishedTable {
  uint64_t boundary = 0;
  bool frozen = false;                          // the FROZEN record: no more versions
  std::shared_ptr<const learner::OnlineTable> table;  // nullptr when frozen
};
// Every record of the job's coordination directory, by boundary, up to the first missing one; read
// after the job. Errors when a record cannot be read or does not parse.
Expected<std::vector<PublishedTable>> publishedTables(const JobResult& result);

}  // namespace dynamiccl::jobreplay
