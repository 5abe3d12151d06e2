// The search: which arms a key has, which one it tries next (the profile's candidate, the arm
// model's proposal, NCCL's runner-up, the cheapest untried by NCCL's cost), which one races, and
// what an untried arm is expected to cost. Internal to learner.
#pragma once

#include <optional>
#include <vector>

#include "learner/arm_model.h"
#include "learner/channel_search.h"
#include "learner/verifier.h"

namespace dynamiccl::learner {

class Search {
 public:
  Search(const OnlineConfig& config, const ArmStatistics& stats, const Verifier& verifier, const ChannelSearch& channels,
         CandidateFn candidate)
      : config_(config), stats_(stats), verifier_(verifier), channels_(channels), candidate_(std::move(candidate)) {}
  // What the learner owns and the search reads: the arm model (nullptr: none) and the learned
  // network's refreshed rules (nullopt: the init-time rules stand).
  void setModel(ArmModel* model) { model_ = model; }
  void setLearnedRules(const std::optional<DecisionTable>* learned) { learned_ = learned; }

  // The arms a key measures this version (what runs first); empty: the static table answers.
  std::vector<int> armSlots(int coll, const KeyState& k, const PriorArm& prior) const;
  // What runs at the key: the incumbent, else the prior's arm, else NCCL's own.
  static int runningArm(const KeyState& k, int priorSlot) {
    return k.incumbent >= 0 ? k.incumbent : (priorSlot >= 0 ? priorSlot : k.ncclDefault);
  }
  // The key's candidate for this version: the profile's, the model's proposal, or the search's next.
  void pickCandidate(int coll, int bucket, KeyState& k, const PriorArm& prior) const;
  // The arm measured ahead of the incumbent by its estimate but not yet beyond noise; -1 none.
  int racingArm(const KeyState& k, const std::vector<int>& slots) const;
  // Expected time of an untried arm relative to the incumbent; nullopt: not worth exploring.
  // incumbentMean: the incumbent's measured mean log-latency when trusted.
  std::optional<double> untriedRatio(const KeyState& k, int slot, std::optional<double> incumbentMean) const;
  // The learned network's refreshed rules where they name the key, else the fallback.
  Candidates learnedOr(const Candidates& fallback, int coll, int bucket) const;

 private:
  static void setCandidate(KeyState& k, int slot, const Decision& d);
  void staticCandidate(int coll, int bucket, KeyState& k, int priorSlot) const;
  // NCCL's runner-up by its own cost (-1 none or beyond maxModelledRatio).
  int runnerUp(const KeyState& k, int priorSlot) const;
  void searchNext(KeyState& k, const PriorArm& prior, int runs) const;
  // Where the (algo, proto) search has nothing to try: the channel search's next count, if any.
  void channelStep(KeyState& k, const PriorArm& prior, int runs) const;
  // Whether the key's candidate has its answer (or its round of samples) against what runs.
  bool candidateDone(const KeyState& k, int runs) const;
  // The tried arm measured faster than `runs` beyond noise (the fastest such), -1 none.
  int aheadOf(const KeyState& k, int runs) const;
  // The next configuration to try at a key (NCCL's cost order), -1 when every allowed one is decided.
  int nextArm(const KeyState& k, int priorSlot, int runs) const;
  // The arm model's proposal for a key: -1 where it believes nothing beats what runs.
  int proposal(int coll, int bucket, KeyState& k, int priorSlot) const;

  const OnlineConfig& config_;
  const ArmStatistics& stats_;
  const Verifier& verifier_;
  const ChannelSearch& channels_;
  CandidateFn candidate_;
  ArmModel* model_ = nullptr;
  const std::optional<DecisionTable>* learned_ = nullptr;
};

}  // namespace dynamiccl::learner
