// The online learner: per (collective, size bucket) a bandit over (algo, proto) arms on
// log-latency, with the static profile's choice as the incumbent prior. Pure and deterministic:
// the same observations in the same order build the same table. Runs on the leader only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <cmath>
#include <vector>

#include "features/features.h"
#include "policy/decision_rule.h"
#include "policy/decision_table.h"
#include "policy/measurement_plan.h"
#include "policy/online_table.h"

namespace dynamiccl::policy {

struct OnlineConfig {
  uint64_t epochCalls = 1000;      // DYNAMICCL_EPOCH_CALLS: calls per table version
  double exploreTimeShare = 0.01;  // DYNAMICCL_BUDGET explore=: expected extra time from exploring
  double exploreCallShare = 0.25;  // at most this share of a key's calls explore (the time budget bounds what they cost)
  double raceCallShare = 0.2;      // an undecided arm measured ahead of the incumbent: this share of calls
  double retestEvery = 1000;       // a clearly worse arm is re-measured about once per this many calls
  int minSamples = 6;              // before an arm's mean is trusted
  double halfLifeCalls = 1000;     // a key's old measurements count half after this many of its calls
  double noiseFloor = 0.02;        // log-latency sigma assumed at least (run-to-run noise)
  DecisionRule rule;               // ahead, behind or no gain beyond noise: the rule `tune` applies too
  // Prior for arms not yet measured: NCCL's modelled time relative to the incumbent's, times this
  // allowance for the model's error; without a model, an unknown arm is assumed this much slower.
  double modelErrorFactor = 1.5;
  double unknownRatio = 2.0;
  double maxModelledRatio = 2.0;   // untried arms the model puts beyond this x the incumbent: not explored
  // In-job verification without online learning: the only arms are the static answer (a verified
  // rule or NCCL's default), NCCL's default and the key's unverified candidate; keys without a
  // candidate are left to the static table.
  bool candidatesOnly = false;
  // Verifying: once a key's candidate is decided (or where it has none), every other configuration
  // NCCL's cost table allows there is tried in turn, cheapest first by NCCL's own cost (the prior),
  // each until decided: ahead or behind beyond noise, far behind after a sample or two, or measured
  // proposalSamples times. Arms NCCL prices beyond maxTrialRatio x its choice are tried last, after
  // every arm within it is decided (a slow one is dropped after a sample or two).
  bool modelRunnerUp = true;
  double maxTrialRatio = 3.0;
  double seedWeightCap = 30;       // a previous job's samples count as at most this many calls
  // Recent timings: log(observed / this arm's usual latency), the usual one a slow average (this
  // half-life, in calls of the key) so a congestion episode shows and its end shows too.
  double usualHalfLifeCalls = 20000;
  bool learnedRulesApply = false;  // DYNAMICCL_TRUST=all: refreshed learned rules are the prior, else candidates
  // The arm model proposes an arm for measurement where it believes, optimistically by this many
  // standard deviations, that the arm beats what runs by at least minProposedGain.
  double proposalSigmas = 1.0;
  double minProposedGain = 0.01;
  int proposalSamples = 30;        // a proposal neither promoted nor lost by then gives way to the next
  // Every search ends: an arm measured this many times (this job's and a previous job's samples), or
  // offered twice as many trials (minSamples where none was ever timed), whose gain is not established is settled as
  // undecided (its evidence kept for the next job) and only re-tested for drift. At the replay's 2-3%
  // spread, 20 samples a side establish gains of about 2%: a 20,000-call job of 25 keys settles in its
  // first half at a few % of calls profiled; a smaller gain is left to re-tests and the next job.
  int settleSamples = 16;
  // Measuring costs the job (policy/measurement_plan.h): what profiling a call costs per size bucket
  // (share of its time), the share of calls still measured once the search settles
  // (DYNAMICCL_BUDGET measure=), and the gain a search may plausibly find (share of a key's time), which
  // must repay its measurement within the job for the key to be searched at all.
  std::array<double, SizeBucket::kCount> measureCostShare{};
  double settledMeasureShare = 1.0;
  double plausibleGain = 0.1;
};

// How a candidate rule stands against NCCL's default in this job (what the store keeps).
enum class VerdictState : uint8_t { Testing, Promoted, Dropped };
std::string_view verdictStateName(VerdictState s);  // "testing", "promoted", "dropped"

// Log-latency statistics of one arm: what a verdict carries and what seeds the next job.
struct ArmSummary {
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  uint64_t n = 0;        // samples
  double meanLog = 0;    // mean of log(latency_us)
  double varLog = 0;     // variance of log(latency_us)
};

struct Verdict {
  int coll = 0, bucket = 0;
  Decision candidate;
  ArmSummary candidateArm, baselineArm;  // baseline: NCCL's default (or the static answer when unknown)
  double gain = NAN, gainLow = NAN, gainHigh = NAN;  // speed-up over the baseline minus 1, 95% interval
  VerdictState state = VerdictState::Testing;
};

// Static candidates of a key: the profile's answer at the bucket's smallest size (the prior).
using PriorFn = std::function<Candidates(int coll, int bucket)>;
// A key's unverified candidate rule (same form); count 0: none.
using CandidateFn = std::function<Candidates(int coll, int bucket)>;
// The learned network's rules evaluated again with the recent timings (run at a build, off the hot
// path, on the leader only): they replace the rules it gave at init, as candidates (verification)
// or as the prior (DYNAMICCL_TRUST=all).
using LearnedRefresh = std::function<DecisionTable(const TimingWindows& windows)>;

// What this job measured of one arm of a key (discounted weight, mean log-latency in log us).
struct MeasuredArm {
  int coll = 0, bucket = 0;
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  double weight = 0;
  double meanLog = 0;
};

// A model's belief about an arm's log-latency (log us): mean and standard deviation.
struct ArmBelief {
  double meanLog = 0;
  double sdLog = 0;
};

// The learned policy inside the job (policy/learned_arm_model.h): refit from what the job measured
// at each table build, then asked which arm of a key it believes in. The measurement still decides.
class ArmModel {
 public:
  virtual ~ArmModel() = default;
  virtual void refit(const std::vector<MeasuredArm>& measured, const TimingWindows& windows) = 0;
  // nullopt: the model does not score this arm (CollNet, ...) or this key.
  virtual std::optional<ArmBelief> belief(int coll, int bucket, Algo algo, Proto proto) const = 0;
  // Belief in arm a's log-latency minus arm b's at the key (shared uncertainty cancels).
  virtual std::optional<ArmBelief> difference(int coll, int bucket, Algo a, Proto pa, Algo b, Proto pb) const = 0;
};

class OnlineLearner {
 public:
  OnlineLearner(OnlineConfig config, PriorFn prior, CandidateFn candidate = {});

  // What NCCL would have run for the key when left alone (the guard's reference).
  void setNcclDefault(int coll, int bucket, Algo algo, Proto proto);
  // NCCL's cost table for the key (kNumAlgos x kNumProtos, us; < 0 = IGNORE): the prior for what an
  // untried arm costs. IGNOREd arms are never explored (NCCL would not run them).
  void setModelledCost(int coll, int bucket, const float* costTable);
  // How many calls of the key the job has made so far, measured or not (what a search must repay
  // its measurement over); without it, the measured calls over the share measured.
  void setCallsSoFar(int coll, int bucket, uint64_t calls);
  // One measured call: what actually ran and how long it took.
  void observe(int coll, uint64_t nBytes, Algo algo, Proto proto, double latency_us);
  // The next version: exploit choices and exploration rates from everything observed so far.
  std::unique_ptr<OnlineTable> build(uint64_t version);
  // The learned network, re-evaluated with windows() at each build where they changed.
  void setLearnedRefresh(LearnedRefresh refresh) { refresh_ = std::move(refresh); }
  // The learned policy learning in the job: proposes the candidates (one per key at a time, kept
  // until measured) from its belief, refit on every build's measurements.
  void setArmModel(std::unique_ptr<ArmModel> model) { model_ = std::move(model); }
  uint64_t modelRefits() const { return modelRefits_; }
  const TimingWindows& windows() const { return windows_; }
  uint64_t learnedRefreshes() const { return refreshes_; }
  // A previous job's measurements of one arm of a key (from the store): count as at most
  // seedWeightCap calls, so this job's own measurements can still overturn them.
  // promoted: the previous job promoted it (this one runs it from its first boundary, if the samples agree).
  void seed(int coll, int bucket, const ArmSummary& arm, bool promoted = false);
  // One per arm that was a key's candidate in this job (the latest state of each), as of the last build().
  std::vector<Verdict> verdicts() const;

  struct Counters {
    uint64_t observations = 0, switches = 0, guardTrips = 0;
  };
  Counters counters() const { return counters_; }
  const OnlineConfig& config() const { return config_; }
  // What the last build() decided to measure: the share of calls, its price, what the job gained.
  const MeasurementPlan& measurementPlan() const { return plan_; }

 private:
  static constexpr int kArmSlots = kNumAlgos * kNumProtos;
  struct ArmStats {
    double w = 0, s = 0, ss = 0;  // discounted weight, sum and sum of squares of log-latency
    uint64_t n = 0;               // raw count
    uint64_t lastCall = 0;        // key call count at the last decay
    uint64_t seededN = 0;         // of n, a previous job's (seed())
  };
  struct KeyState {
    bool active = false;
    uint64_t calls = 0;
    int incumbent = -1;     // arm slot exploited; -1: the prior
    int ncclDefault = -1;   // arm slot NCCL picks alone; -1 unknown
    int candidate = -1;     // arm slot of the key's unverified candidate; -1 none
    Decision candidateDecision;
    int proposal = -1;      // the arm model's current proposal, kept until measured; -1 none
    uint32_t tested = 0;    // arm slots that were candidates in this job (each gets a verdict)
    uint32_t seededPromoted = 0;  // arm slots a previous job promoted (seed())
    std::array<Decision, kArmSlots> testedDecision{};
    bool modelled = false;  // modelled_us holds NCCL's cost table
    double bestScale = 0;   // lowest measured/modelled time of a trusted arm seen so far (0: none)
    std::array<double, kArmSlots> usualLog{}, usualW{};  // slow average of log-latency per arm
    std::array<float, kArmSlots> modelled_us{};
    const float* ncclTable() const { return modelled ? modelled_us.data() : nullptr; }  // nullptr: unknown
    std::array<ArmStats, kArmSlots> arms{};
    double measureCost = 0;  // what profiling one of its calls costs (share of the call's time)
    uint64_t jobCalls = 0;   // the job's calls of the key, measured or not (setCallsSoFar)
    // Trials offered per arm (expected, from each table's share and the key's calls since), so an arm
    // that never yields a timing still settles; offeredShare: the last table's share of the key's calls.
    std::array<double, kArmSlots> offered{}, offeredShare{};
    uint64_t offeredAt = 0;  // jobCalls when offeredShare was last counted
    std::array<int8_t, kOnlineMaxArms> entrySlot{};  // the arm slot of each exploration arm of its entry
  };
  // What the learner does at a key, from its configuration and whether an arm model is set.
  enum class Mode : uint8_t {
    Learn,         // online learning: every allowed arm is explored, the best measured one runs
    Verify,        // verification: the static answer, NCCL's default and the key's candidate only
    VerifySearch,  // verification that goes on to every configuration NCCL allows, its cheapest first
    VerifyRanked,  // verification where the arm model ranks; NCCL's runner-up where it proposes none
  };
  // A key's prior: the static answer, and its arm (the profile's full (algo, proto); NCCL's own when
  // no rule; -1 when only partial).
  struct PriorArm {
    Candidates rules;
    bool full = false;  // the first rule names a full (algo, proto)
    int slot = -1;
  };
  // An arm's share of the exploration: calls, and its expected time relative to the incumbent.
  struct ArmRate {
    double rate = 0, ratio = 1;
  };
  Mode mode() const;
  PriorArm priorArm(int coll, int bucket, const KeyState& k) const;
  static double meanOf(const ArmStats& a) { return a.s / a.w; }
  double varOfMean(const ArmStats& a) const;  // of the mean log-latency, with the noise floor
  static Decision decisionAt(int slot);
  bool trusted(const KeyState& k, int slot) const;  // measured enough for its mean to count
  bool settled(const KeyState& k, int slot) const;  // its search ended undecided (settleSamples)
  // May replace what runs: measured enough in this job, or promoted by a previous one. A previous job's
  // undecided samples alone never promote (their summary carries no decay: it overstates them).
  bool mayRun(const KeyState& k, int slot) const;
  // What the trials of this job cost so far, in calls of what runs (their excess time over it).
  double trialsSpent(const KeyState& k) const;
  static void countOffered(KeyState& k);            // adds the last table's trials since it was built
  void recordOffered(const OnlineTable& table);     // what this build's table offers each arm
  void decay(KeyState& k, ArmStats& a) const;
  std::vector<int> armSlots(int coll, const KeyState& k, const PriorArm& prior) const;
  // The phases of a key's build, in order: its candidate; the incumbent switching to an arm measured
  // faster; the guard against NCCL's default; the exploit choice; the exploration rates.
  void pickCandidate(int coll, int bucket, KeyState& k, int priorSlot);
  void switchToBest(KeyState& k, const std::vector<int>& slots);
  void guard(KeyState& k, int priorSlot);
  void setExploit(OnlineEntry& e, const KeyState& k, const PriorArm& prior) const;
  // Returns the share of the key's calls its search trials take (0: not searching, only drift re-tests).
  // The key's trial share, and whether what runs still needs samples beside the trials'.
  struct Exploration {
    double trialShare = 0;
    bool beside = true;
  };
  Exploration setExploration(OnlineEntry& e, KeyState& k, const std::vector<int>& slots, const PriorArm& prior);
  // Then, over every key: how much of the next version is measured.
  KeyMeasurement keyMeasurement(const KeyState& k, const Exploration& x) const;
  double callsSoFar(const KeyState& k) const;
  void planMeasurement(OnlineTable& table, const std::vector<KeyMeasurement>& keys, const std::vector<uint32_t>& keyIds);
  // Candidate sources: the profile's unverified rule (or the refreshed learned rules'); NCCL's
  // runner-up by its own cost (-1 none or beyond maxModelledRatio); the search's next arm.
  static void setCandidate(KeyState& k, int slot, const Decision& d);
  void staticCandidate(int coll, int bucket, KeyState& k, int priorSlot) const;
  int runnerUp(const KeyState& k, int priorSlot) const;
  void searchNext(KeyState& k, int priorSlot, int runs) const;
  Decision decisionOf(const KeyState& k, const PriorArm& prior, int slot) const;
  void updateScale(KeyState& k, const std::vector<int>& slots) const;  // the model's best fit in measured units
  // The arm measured ahead of the incumbent by its estimate but not yet beyond noise; -1 none.
  int racingArm(const KeyState& k, const std::vector<int>& slots) const;
  // nullopt: not explored (NCCL would not run it, or its model says it cannot pay off).
  std::optional<ArmRate> armRate(const KeyState& k, int slot, size_t nSlots) const;
  // The decision rule on arm a against arm b (log-latency means, their standard errors); minGain
  // replaces the rule's where given (0: any gain beyond noise).
  Judgement compare(const ArmStats& a, const ArmStats& b) const;
  Judgement compare(const ArmStats& a, const ArmStats& b, double minGain) const;
  // Verifying: whether an arm tried as a candidate has its answer against `runs`.
  bool decided(const KeyState& k, int slot, int runs) const;
  // The tried arm measured faster than `runs` beyond noise (the fastest such), -1 none.
  int aheadOf(const KeyState& k, int runs) const;
  // The next configuration to try at a key (NCCL's cost order), -1 when every allowed one is decided.
  int nextArm(const KeyState& k, int priorSlot, int runs) const;
  // Expected time of an untried arm relative to the incumbent; nullopt: not worth exploring.
  // incumbentMean: the incumbent's measured mean log-latency when trusted.
  std::optional<double> untriedRatio(const KeyState& k, int slot, std::optional<double> incumbentMean) const;

  ArmSummary summary(const KeyState& k, int slot) const;
  void refitModel();
  // The arm model's proposal for a key: -1 where it believes nothing beats what runs.
  int proposal(int coll, int bucket, KeyState& k, int priorSlot);
  Candidates learnedOr(const Candidates& fallback, int coll, int bucket) const;
  Candidates priorOf(int coll, int bucket) const;  // the static answer, or the refreshed learned rules' (trust all)

  OnlineConfig config_;
  PriorFn prior_;
  CandidateFn candidate_;
  LearnedRefresh refresh_;
  TimingWindows windows_;
  bool windowsChanged_ = false;
  std::optional<DecisionTable> learned_;  // the latest refresh; nullopt: the init-time rules stand
  uint64_t refreshes_ = 0;
  std::unique_ptr<ArmModel> model_;
  uint64_t modelFitAt_ = UINT64_MAX;  // observations at the last refit
  uint64_t modelRefits_ = 0;
  double usualDecayPerCall_ = 1;
  double decayPerCall_;
  std::vector<KeyState> keys_;
  Counters counters_;
  MeasurementPlan plan_;  // the last build's; before any, every call measured at no price
  double jobCallsTotal_ = 0;  // every key's calls so far, at the last build
};

}  // namespace dynamiccl::policy
