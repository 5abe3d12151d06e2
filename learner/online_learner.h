// The online learner: per (collective, size bucket) a bandit over arms on log-latency, with the
// static profile's choice as the incumbent prior. Pure and deterministic: the same observations in
// the same order build the same table. Runs on the leader only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "features/features.h"
#include "learner/arm_model.h"
#include "learner/measurement_plan.h"
#include "learner/online_config.h"
#include "learner/online_table.h"
#include "learner/verdict.h"
#include "policy/policy.h"

namespace dynamiccl::learner {

struct KeyState;
struct PriorArm;
class ArmStatistics;
class Verifier;
class ChannelSearch;
class Search;
class ExplorationBudget;

// The build step: composes the statistics, the verifier, the search and the exploration budget into
// the next version of the online table, from everything observed so far.
class OnlineLearner {
 public:
  OnlineLearner(OnlineConfig config, PriorFn prior, CandidateFn candidate = {});
  ~OnlineLearner();
  // Its parts refer to its configuration: it stays where it was made.
  OnlineLearner(const OnlineLearner&) = delete;
  OnlineLearner& operator=(const OnlineLearner&) = delete;

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
  // With the channels it ran (the profiler's count; 0 unknown) and those its decision asked for (0
  // none: NCCL's own count, which the channel search starts from; < 0 unknown).
  void observe(int coll, uint64_t nBytes, Algo algo, Proto proto, int nChannels, double latency_us, int askedChannels);
  // The next version: exploit choices and exploration rates from everything observed so far.
  std::unique_ptr<OnlineTable> build(uint64_t version);
  // The learned network, re-evaluated with windows() at each build where they changed.
  void setLearnedRefresh(LearnedRefresh refresh) { refresh_ = std::move(refresh); }
  // The learned policy learning in the job: proposes the candidates (one per key at a time, kept
  // until measured) from its belief, refit on every build's measurements.
  void setArmModel(std::unique_ptr<ArmModel> model);
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
  const MeasurementPlan& measurementPlan() const;

 private:
  PriorArm priorArm(int coll, int bucket, const KeyState& k) const;
  void setExploit(OnlineEntry& e, const KeyState& k, const PriorArm& prior) const;
  void refitModel();
  Candidates priorOf(int coll, int bucket) const;  // the static answer, or the refreshed learned rules' (trust all)

  OnlineConfig config_;
  PriorFn prior_;
  LearnedRefresh refresh_;
  TimingWindows windows_;
  bool windowsChanged_ = false;
  std::optional<DecisionTable> learned_;  // the latest refresh; nullopt: the init-time rules stand
  uint64_t refreshes_ = 0;
  std::unique_ptr<ArmModel> model_;
  uint64_t modelFitAt_ = UINT64_MAX;  // observations at the last refit
  uint64_t modelRefits_ = 0;
  std::vector<KeyState> keys_;
  Counters counters_;
  // The five jobs, each its own class (they refer to config_ and to each other: built in this order).
  std::unique_ptr<ArmStatistics> stats_;
  std::unique_ptr<Verifier> verifier_;
  std::unique_ptr<ChannelSearch> channels_;
  std::unique_ptr<Search> search_;
  std::unique_ptr<ExplorationBudget> budget_;
};

}  // namespace dynamiccl::learner
