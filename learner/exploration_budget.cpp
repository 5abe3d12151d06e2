#include "learner/exploration_budget.h"

#include <algorithm>
#include <cmath>

namespace dynamiccl::learner {

ExplorationBudget::ExplorationBudget(const OnlineConfig& config, const ArmStatistics& stats, const Search& search)
    : config_(config), stats_(stats), search_(search) {
  // The first epoch measures nothing: its boundary's trials need no timing of what runs (NCCL's costs
  // order them), and what runs is measured beside them from then on. A job shorter than an epoch pays nothing.
  plan_.rate = 0;
}

void ExplorationBudget::startBuild(const std::vector<KeyState>& keys) {
  jobCallsTotal_ = 0;
  for (const KeyState& k : keys) jobCallsTotal_ += static_cast<double>(k.jobCalls);
}

double ExplorationBudget::callsSoFar(const KeyState& k) const {
  // The plugin counts every call; without that count, the measured ones over the share measured.
  if (k.jobCalls) return static_cast<double>(k.jobCalls);
  return static_cast<double>(k.calls) / std::max(plan_.rate, 1e-6);
}

void ExplorationBudget::updateScale(KeyState& k, const std::vector<int>& slots) const {
  if (!k.modelled) return;
  // NCCL's model prices a pair at its own channel count: a channel arm has no modelled time to fit.
  for (int s : slots)
    if (!isChannelSlot(s) && stats_.trusted(k, s) && k.modelled_us[s] > 0) {
      const double fit = std::exp(meanOf(k.arms[s])) / k.modelled_us[s];
      if (k.bestScale <= 0 || fit < k.bestScale) k.bestScale = fit;
    }
}

double ExplorationBudget::trialsCostVsDefault(const KeyState& k) const {
  const int d = k.ncclDefault;
  if (d < 0 || !stats_.trusted(k, d)) return 0;  // no measured reference: no measured cost
  double cost = 0;
  for (int s = 0; s < kArmSlots; ++s) {
    if (s == d || k.arms[s].w <= 0 || !stats_.trusted(k, s)) continue;
    const double trials = static_cast<double>(k.arms[s].n - k.arms[s].seededN);
    cost += trials * std::max(0.0, std::exp(meanOf(k.arms[s]) - meanOf(k.arms[d])) - 1);
  }
  return cost;
}

// What runs is measured beside the trials until it carries this many times the most sampled trial's weight.
constexpr double kBesideWeights = 2;

void ExplorationBudget::countOffered(KeyState& k) {
  const double since = k.jobCalls > k.offeredAt ? static_cast<double>(k.jobCalls - k.offeredAt) : 0;
  for (int s = 0; s < kArmSlots; ++s) k.offered[s] += k.offeredShare[s] * since;
  k.offeredShare = {};
  k.offeredAt = k.jobCalls;
}

double ExplorationBudget::trialsSpent(const KeyState& k) const {
  // Each of this job's trials at its measured excess over what runs; before what runs is measured
  // enough, at the model's price for the arm (its allowance for error included).
  const bool measured = stats_.trusted(k, k.incumbent);
  double spent = 0;
  for (int s = 0; s < kArmSlots; ++s) {
    if (s == k.incumbent || k.arms[s].w <= 0) continue;
    const double trials = static_cast<double>(k.arms[s].n - k.arms[s].seededN);
    const std::optional<double> priced = search_.untriedRatio(k, s, std::nullopt);
    const double ratio = measured ? std::exp(meanOf(k.arms[s]) - meanOf(k.arms[k.incumbent]))
                                  : priced.value_or(config_.maxTrialRatio);
    spent += trials * std::max(0.0, ratio - 1);
  }
  return spent;
}

void ExplorationBudget::recordOffered(const OnlineTable& table, std::vector<KeyState>& keys) const {
  // Only measured calls explore; an arm's thresholds are its share of them (after planMeasurement).
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    KeyState& k = keys[key];
    const OnlineEntry& e = table.entry(key);
    const uint32_t t = table.measureThresholdOf(key);
    const double measured = t == kMeasureEveryCall ? 1.0 : t / 4294967296.0;
    uint32_t below = 0;
    for (int i = 0; i < e.nArms; ++i) {
      const uint32_t t = std::max(below, e.cumulativeThreshold[i]);
      if (k.entrySlot[i] >= 0) k.offeredShare[k.entrySlot[i]] += (t - below) / 4294967296.0 * measured;
      below = t;
    }
  }
}

std::optional<ExplorationBudget::ArmRate> ExplorationBudget::armRate(const KeyState& k, int s, size_t nSlots) const {
  if (s < 0) return std::nullopt;  // never; tells GCC so
  const ArmStats& a = k.arms[s];
  const std::optional<double> incumbentMean =
      stats_.trusted(k, k.incumbent) ? std::optional<double>(meanOf(k.arms[k.incumbent])) : std::nullopt;
  // The key's exploration share is split among the arms that explore (every slot but what runs).
  const double share = config_.exploreCallShare / static_cast<double>(std::max<size_t>(1, nSlots - 1));
  if (stats_.settled(k, s)) {  // its search ended undecided: drift re-tests only
    const std::optional<double> ratio =
        stats_.trusted(k, s) && incumbentMean ? std::optional<double>(std::exp(meanOf(a) - *incumbentMean)) : search_.untriedRatio(k, s, incumbentMean);
    if (!ratio) return std::nullopt;
    return ArmRate{1.0 / config_.retestEvery, *ratio};
  }
  if (!stats_.trusted(k, s)) {
    // A few samples far behind the incumbent settle it: no need to wait for minSamples.
    if (a.w > 0.1 && incumbentMean && meanOf(a) - *incumbentMean > std::log(config_.maxModelledRatio))
      return ArmRate{1.0 / config_.retestEvery, std::exp(meanOf(a) - *incumbentMean)};
    std::optional<double> ratio = search_.untriedRatio(k, s, incumbentMean);
    if (!ratio) return std::nullopt;  // the model says it cannot pay off here
    // Two samples or more already say what a trial costs better than the model's allowance for its
    // error: the measured ratio, pessimistic by one standard error (the noise floor at least).
    if (a.n >= 2 && a.w > 0.1 && incumbentMean)
      ratio = std::min(*ratio, std::exp(meanOf(a) - *incumbentMean + std::sqrt(stats_.varOfMean(a))));
    // The calls still to come must repay what measuring the arm costs (the key's calls so far, as
    // the job measured them at the rate in force).
    if (!searchRepays(callsSoFar(k), k.measureCost, config_.minSamples, config_.plausibleGain)) return std::nullopt;
    return ArmRate{share, *ratio};
  }
  if (!incumbentMean) return ArmRate{share, 1.0};
  const double ratio = std::exp(meanOf(a) - *incumbentMean);
  const ArmRate retest{1.0 / config_.retestEvery, ratio};
  if (meanOf(a) - 2 * std::sqrt(stats_.varOfMean(a)) >= *incumbentMean) return retest;  // clearly worse
  // Decided by the rule (it cannot be a gain of minGain however long it is measured), or what it
  // could still gain does not repay measuring it further: drift re-tests only.
  const Judgement j = stats_.compare(a, k.arms[k.incumbent]);
  if (j.noGain || withinTheBar(j, config_.rule)) return retest;
  if (!searchRepays(callsSoFar(k), k.measureCost, config_.minSamples, std::max(0.0, 1 - std::exp(j.lower))))
    return retest;
  return ArmRate{share, ratio};
}

ExplorationBudget::Exploration ExplorationBudget::setExploration(OnlineEntry& e, KeyState& k, const std::vector<int>& slots,
                                                                const PriorArm& prior) const {
  // Unknown and plausible arms share the call budget; clearly worse arms are only re-tested; then
  // everything is scaled so the expected extra time stays in budget. A racing arm is outside the
  // call cap: only the time budget bounds it.
  updateScale(k, slots);
  const int racing = search_.racingArm(k, slots);
  // The key's calls in the epoch the next table is in force for.
  const double ahead = std::max(1.0, static_cast<double>(config_.epochCalls) * static_cast<double>(k.jobCalls) /
                                         std::max(1.0, jobCallsTotal_));
  std::vector<std::pair<int, double>> rates;
  double callSum = 0, costSum = 0;
  for (int s : slots) {
    if (s < 0 || s == k.incumbent || rates.size() == kOnlineMaxArms) continue;  // s < 0: never; tells GCC so
    if (s == racing) {
      rates.emplace_back(s, config_.raceCallShare);
      continue;
    }
    const std::optional<ArmRate> r = armRate(k, s, slots.size());
    if (!r) continue;
    // An epoch offers a searched arm at most twice as many trials as it has samples (minSamples at first):
    // its verdict comes at the boundary, so a clearly slower arm costs a few trials, not an epoch's
    // share (an NVLS arm 15% slower took 31-56 trials per key on H100 NVSwitch before this).
    double rate = r->rate;
    if (rate > 1.0 / config_.retestEvery) {
      const double n = static_cast<double>(k.arms[s].n);
      const double wanted = std::clamp(std::max<double>(config_.minSamples, 2 * n), 1.0,
                                       std::max(1.0, static_cast<double>(config_.settleSamples) - n));
      rate = std::max(1.0 / config_.retestEvery, std::min(rate, wanted / ahead));
    }
    rates.emplace_back(s, rate);
    callSum += rate;
    costSum += rate * std::max(0.0, r->ratio - 1.0);
  }
  // The budget covers trials and measurement together: trials get what measuring leaves. It is a share
  // of the key's time so far, and what earlier trials left unspent carries over (a trial that proved
  // as fast as what runs cost nothing), so a search whose arms are cheap goes on at the call cap.
  const double trialBudget = std::max(0.0, config_.exploreTimeShare - plan_.costShare);
  double scale = 1.0;
  if (callSum > config_.exploreCallShare) scale = config_.exploreCallShare / callSum;
  if (costSum * scale > trialBudget) {
    const double banked = trialBudget * (static_cast<double>(k.jobCalls) + ahead) - trialsSpent(k);
    const double byBank = costSum > 0 ? std::max(0.0, banked) / (costSum * ahead) : scale;
    scale = std::min(scale, std::max(costSum > 0 ? trialBudget / costSum : 0, byBank));
  }
  double cumulative = 0;
  bool searching = false;  // an arm at a search rate, not only drift re-tests
  double mostTrialWeight = config_.minSamples;
  for (auto [s, rate] : rates) {
    searching = searching || s == racing || rate > 1.0 / config_.retestEvery;
    if (s == racing || rate > 1.0 / config_.retestEvery) mostTrialWeight = std::max(mostTrialWeight, k.arms[s].w);
    cumulative += s == racing ? rate : rate * scale;
    const int i = e.nArms++;
    k.entrySlot[i] = static_cast<int8_t>(s);
    e.cumulativeThreshold[i] = static_cast<uint32_t>(std::min(cumulative, 0.5) * 4294967296.0);
    append(e.arms[i], decisionOf(k, prior, s));
    for (int j = 0; j < e.exploit.count; ++j) append(e.arms[i], e.exploit.decisions[j]);
  }
  // What runs needs samples beside the trials' only while it has few more than the most sampled trial:
  // beyond kBesideWeights times as many, more of them narrow no comparison's spread by a fifth.
  const bool beside = k.incumbent < 0 || k.arms[k.incumbent].w < kBesideWeights * mostTrialWeight;
  // A search whose trials the budget scales to nothing is no search: it would measure what runs forever.
  // A racing arm takes half the measured calls, not more of them: what runs is measured beside it.
  return {searching ? std::min(cumulative, config_.exploreCallShare) : 0.0, beside};
}

KeyMeasurement ExplorationBudget::keyMeasurement(const KeyState& k, const Exploration& x) const {
  KeyMeasurement m;
  m.costShare = k.measureCost;
  m.searching = x.trialShare > 0;
  m.trialShare = x.trialShare;
  m.beside = x.beside;
  // Weighed by its calls in the job (measured or not), at what runs costs: measured, else NCCL's own estimate.
  const double calls = static_cast<double>(k.jobCalls ? k.jobCalls : k.calls);
  m.calls = calls;
  m.exploreShare = calls > 0 ? trialsCostVsDefault(k) / calls : 0;
  // What runs: the incumbent, else NCCL's default, else the arm measured most.
  int runs = k.incumbent >= 0 && k.arms[k.incumbent].w > 0 ? k.incumbent : k.ncclDefault;
  if (runs < 0 || k.arms[runs].w <= 0)
    for (int s = 0; s < kArmSlots; ++s)
      if (k.arms[s].w > 0 && (runs < 0 || k.arms[s].w > k.arms[runs].w)) runs = s;
  if (runs < 0 || k.arms[runs].w <= 0) {
    if (k.modelled && k.ncclDefault >= 0 && k.modelled_us[k.ncclDefault] > 0) m.time_us = calls * k.modelled_us[k.ncclDefault];
    return m;
  }
  const double runsLog = meanOf(k.arms[runs]);
  m.time_us = calls * std::exp(runsLog);
  if (k.ncclDefault >= 0 && k.ncclDefault != runs && stats_.trusted(k, k.ncclDefault) && stats_.trusted(k, runs))
    m.gainShare = std::max(0.0, 1 - std::exp(runsLog - meanOf(k.arms[k.ncclDefault])));
  return m;
}

// How much the next version measures (learner/measurement_plan.h), per key; only measured calls
// explore, so an arm's share of the key's calls becomes its share of the key's measured ones.
void ExplorationBudget::planMeasurement(OnlineTable& table, const std::vector<KeyMeasurement>& keys,
                                    const std::vector<uint32_t>& keyIds) {
  const double initial = initialMeasureRate(
      config_.exploreTimeShare, *std::max_element(config_.measureCostShare.begin(), config_.measureCostShare.end()));
  plan_ = learner::planMeasurement(keys, config_.exploreTimeShare, config_.settledMeasureShare, initial);
  table.setMeasureThreshold(rateThreshold(plan_.defaultRate));
  for (size_t i = 0; i < keyIds.size(); ++i) {
    OnlineEntry& e = table.entry(keyIds[i]);
    if (!e.exploit.count && !e.nArms) continue;  // the static table answers: the table's share
    const double rate = plan_.keyRates[i];
    e.ownMeasureThreshold = true;
    e.measureThreshold = rateThreshold(rate);
    if (rate >= 1 || !(rate > 0)) continue;
    // Trials take at most half the measured calls while what runs needs samples beside them, else all.
    const double most = keys[i].beside ? 2147483648.0 : 4294967295.0;
    for (int a = 0; a < e.nArms; ++a)
      e.cumulativeThreshold[a] = static_cast<uint32_t>(std::min(e.cumulativeThreshold[a] / rate, most));
  }
}

}  // namespace dynamiccl::learner
