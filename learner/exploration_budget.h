// The exploration budget: each explored arm's share of a key's calls, scaled so trials and
// measurement together stay within DYNAMICCL_BUDGET's share of the job's time, the trials offered
// so far, and how much of the next version is measured (policy/measurement_plan.h). Internal to learner.
#pragma once

#include <optional>
#include <vector>

#include "learner/measurement_plan.h"
#include "learner/search.h"

namespace dynamiccl::learner {

class ExplorationBudget {
 public:
  ExplorationBudget(const OnlineConfig& config, const ArmStatistics& stats, const Search& search);

  // A key's trial share, and whether what runs still needs samples beside the trials'.
  struct Exploration {
    double trialShare = 0;  // 0: not searching, only drift re-tests
    bool beside = true;
  };
  // At the start of a build: every key's calls so far (what each key's share of an epoch is of).
  void startBuild(const std::vector<KeyState>& keys);
  // Adds the last table's trials since it was built.
  static void countOffered(KeyState& k);
  // The key's exploration arms and their thresholds in its entry.
  Exploration setExploration(OnlineEntry& e, KeyState& k, const std::vector<int>& slots, const PriorArm& prior) const;
  // How the key weighs in the next version's measurement.
  KeyMeasurement keyMeasurement(const KeyState& k, const Exploration& x) const;
  // Then, over every key: how much of the next version is measured.
  void planMeasurement(OnlineTable& table, const std::vector<KeyMeasurement>& keys, const std::vector<uint32_t>& keyIds);
  // What this build's table offers each arm.
  void recordOffered(const OnlineTable& table, std::vector<KeyState>& keys) const;
  // What the last build decided to measure: the share of calls, its price, what the job gained.
  const MeasurementPlan& plan() const { return plan_; }

 private:
  // An arm's share of the exploration: calls, and its expected time relative to the incumbent.
  struct ArmRate {
    double rate = 0, ratio = 1;
  };
  // nullopt: not explored (NCCL would not run it, or its model says it cannot pay off).
  std::optional<ArmRate> armRate(const KeyState& k, int slot, size_t nSlots) const;
  // What the trials of this job cost so far, in calls of what runs (their excess time over it).
  double trialsSpent(const KeyState& k) const;
  // What this job's trials cost against NCCL's own choice, in calls of it: each trial of an arm slower
  // than NCCL's default at its measured excess (a faster one costs nothing), the report's figure.
  double trialsCostVsDefault(const KeyState& k) const;
  double callsSoFar(const KeyState& k) const;
  void updateScale(KeyState& k, const std::vector<int>& slots) const;  // the model's best fit in measured units

  const OnlineConfig& config_;
  const ArmStatistics& stats_;
  const Search& search_;
  MeasurementPlan plan_;      // the last build's; before any, every call measured at no price
  double jobCallsTotal_ = 0;  // every key's calls so far, at the last build
};

}  // namespace dynamiccl::learner
