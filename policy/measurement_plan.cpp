// The measurement plan: what to profile. How much of the next version is measured, over every key
// (planMeasurement), and the learner's part in it: each key's trials, their share and their cost.
#include "policy/measurement_plan.h"

#include <algorithm>
#include <cmath>

#include "policy/online_learner_arms.h"
#include "policy/online_table.h"

namespace dynamiccl::policy {

double initialMeasureRate(double budget, double maxCostShare) {
  return maxCostShare > 0 ? std::clamp(budget / 2 / maxCostShare, 0.0, 1.0) : 1.0;
}

MeasurementPlan planMeasurement(const std::vector<KeyMeasurement>& keys, double budget, double settledShare,
                            double initialRate) {
  MeasurementPlan p;
  p.keyRates.assign(keys.size(), 0.0);
  double total = 0, cost = 0, gain = 0;
  for (const KeyMeasurement& k : keys) {
    if (!(k.time_us > 0)) continue;
    ++p.keys;
    p.searchingKeys += k.searching;
    total += k.time_us;
    cost += k.time_us * std::max(0.0, k.costShare);
    gain += k.time_us * std::clamp(k.gainShare, 0.0, 1.0);
    p.searching = p.searching || k.searching;
  }
  if (!(total > 0)) {
    p.rate = initialRate;
    p.searching = true;
    std::fill(p.keyRates.begin(), p.keyRates.end(), initialRate);
    return p;
  }
  const double perCall = cost / total;  // the price of profiling an average call, share of its time
  const double settled = std::clamp(settledShare, 0.0, 1.0);
  // Settled keys share the drift re-tests' rate, which may cost half the budget at most.
  const double floor = std::min(settled, perCall > 0 ? std::clamp(budget / 2 / perCall, 0.0, 1.0) : 1.0);
  p.gainShare = gain / total;
  // Settled everywhere: re-tests for drift are worth their price only while what the job gained exceeds it.
  p.stopped = !p.searching && floor * perCall > 0 && p.gainShare < floor * perCall;
  double calls = 0, measured = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const KeyMeasurement& k = keys[i];
    double rate = p.stopped ? 0 : floor;
    // A key still searching measures what its trials need (twice their share while what runs needs
    // samples beside each trial's, else their share), its measurement costing at most half the budget of
    // its own time.
    if (k.searching) {
      const double affordable = k.costShare > 0 ? std::clamp(budget / 2 / k.costShare, 0.0, 1.0) : 1.0;
      const double need = (k.beside ? 2 : 1) * std::clamp(k.trialShare, 0.0, 0.5);
      rate = std::min(std::max(affordable, floor), std::max(need, floor));
    }
    p.keyRates[i] = rate;
    if (!(k.time_us > 0)) continue;
    p.costShare += k.time_us * rate * std::max(0.0, k.costShare) / total;
    calls += k.calls;
    measured += k.calls * rate;
  }
  p.rate = calls > 0 ? measured / calls : (p.stopped ? 0 : floor);
  p.defaultRate = p.stopped ? 0 : floor;
  return p;
}

bool searchRepays(double callsSoFar, double costShare, int minSamples, double plausibleGain) {
  return plausibleGain * std::max(0.0, callsSoFar) >= 2.0 * minSamples * std::max(0.0, costShare);
}

uint32_t rateThreshold(double rate) {
  if (!(rate > 0)) return 0;
  if (rate >= 1) return kMeasureEveryCall;
  return static_cast<uint32_t>(std::min(rate * 4294967296.0, 4294967294.0));
}

using namespace learner;

// What runs is measured beside the trials until it carries this many times the most sampled trial's weight.
constexpr double kBesideWeights = 2;

void OnlineLearner::countOffered(KeyState& k) {
  const double since = k.jobCalls > k.offeredAt ? static_cast<double>(k.jobCalls - k.offeredAt) : 0;
  for (int s = 0; s < kArmSlots; ++s) k.offered[s] += k.offeredShare[s] * since;
  k.offeredShare = {};
  k.offeredAt = k.jobCalls;
}

double OnlineLearner::trialsSpent(const KeyState& k) const {
  // Each of this job's trials at its measured excess over what runs; before what runs is measured
  // enough, at the model's price for the arm (its allowance for error included).
  const bool measured = trusted(k, k.incumbent);
  double spent = 0;
  for (int s = 0; s < kArmSlots; ++s) {
    if (s == k.incumbent || k.arms[s].w <= 0) continue;
    const double trials = static_cast<double>(k.arms[s].n - k.arms[s].seededN);
    const std::optional<double> priced = untriedRatio(k, s, std::nullopt);
    const double ratio = measured ? std::exp(meanOf(k.arms[s]) - meanOf(k.arms[k.incumbent]))
                                  : priced.value_or(config_.maxTrialRatio);
    spent += trials * std::max(0.0, ratio - 1);
  }
  return spent;
}

void OnlineLearner::recordOffered(const OnlineTable& table) {
  // Only measured calls explore; an arm's thresholds are its share of them (after planMeasurement).
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    KeyState& k = keys_[key];
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

std::optional<OnlineLearner::ArmRate> OnlineLearner::armRate(const KeyState& k, int s, size_t nSlots) const {
  if (s < 0) return std::nullopt;  // never; tells GCC so
  const ArmStats& a = k.arms[s];
  const std::optional<double> incumbentMean =
      trusted(k, k.incumbent) ? std::optional<double>(meanOf(k.arms[k.incumbent])) : std::nullopt;
  // The key's exploration share is split among the arms that explore (every slot but what runs).
  const double share = config_.exploreCallShare / static_cast<double>(std::max<size_t>(1, nSlots - 1));
  if (settled(k, s)) {  // its search ended undecided: drift re-tests only
    const std::optional<double> ratio =
        trusted(k, s) && incumbentMean ? std::optional<double>(std::exp(meanOf(a) - *incumbentMean)) : untriedRatio(k, s, incumbentMean);
    if (!ratio) return std::nullopt;
    return ArmRate{1.0 / config_.retestEvery, *ratio};
  }
  if (!trusted(k, s)) {
    // A few samples far behind the incumbent settle it: no need to wait for minSamples.
    if (a.w > 0.1 && incumbentMean && meanOf(a) - *incumbentMean > std::log(config_.maxModelledRatio))
      return ArmRate{1.0 / config_.retestEvery, std::exp(meanOf(a) - *incumbentMean)};
    std::optional<double> ratio = untriedRatio(k, s, incumbentMean);
    if (!ratio) return std::nullopt;  // the model says it cannot pay off here
    // Two samples or more already say what a trial costs better than the model's allowance for its
    // error: the measured ratio, pessimistic by one standard error (the noise floor at least).
    if (a.n >= 2 && a.w > 0.1 && incumbentMean)
      ratio = std::min(*ratio, std::exp(meanOf(a) - *incumbentMean + std::sqrt(varOfMean(a))));
    // The calls still to come must repay what measuring the arm costs (the key's calls so far, as
    // the job measured them at the rate in force).
    if (!searchRepays(callsSoFar(k), k.measureCost, config_.minSamples, config_.plausibleGain)) return std::nullopt;
    return ArmRate{share, *ratio};
  }
  if (!incumbentMean) return ArmRate{share, 1.0};
  const double ratio = std::exp(meanOf(a) - *incumbentMean);
  const ArmRate retest{1.0 / config_.retestEvery, ratio};
  if (meanOf(a) - 2 * std::sqrt(varOfMean(a)) >= *incumbentMean) return retest;  // clearly worse
  // Decided by the rule (it cannot be a gain of minGain however long it is measured), or what it
  // could still gain does not repay measuring it further: drift re-tests only.
  const Judgement j = compare(a, k.arms[k.incumbent]);
  if (j.noGain || withinTheBar(j, config_.rule)) return retest;
  if (!searchRepays(callsSoFar(k), k.measureCost, config_.minSamples, std::max(0.0, 1 - std::exp(j.lower))))
    return retest;
  return ArmRate{share, ratio};
}

OnlineLearner::Exploration OnlineLearner::setExploration(OnlineEntry& e, KeyState& k, const std::vector<int>& slots,
                                     const PriorArm& prior) {
  // Unknown and plausible arms share the call budget; clearly worse arms are only re-tested; then
  // everything is scaled so the expected extra time stays in budget. A racing arm is outside the
  // call cap: only the time budget bounds it.
  updateScale(k, slots);
  const int racing = racingArm(k, slots);
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

KeyMeasurement OnlineLearner::keyMeasurement(const KeyState& k, const Exploration& x) const {
  KeyMeasurement m;
  m.costShare = k.measureCost;
  m.searching = x.trialShare > 0;
  m.trialShare = x.trialShare;
  m.beside = x.beside;
  // Weighed by its calls in the job (measured or not), at what runs costs: measured, else NCCL's own estimate.
  const double calls = static_cast<double>(k.jobCalls ? k.jobCalls : k.calls);
  m.calls = calls;
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
  if (k.ncclDefault >= 0 && k.ncclDefault != runs && trusted(k, k.ncclDefault) && trusted(k, runs))
    m.gainShare = std::max(0.0, 1 - std::exp(runsLog - meanOf(k.arms[k.ncclDefault])));
  return m;
}

// How much the next version measures (policy/measurement_plan.h), per key; only measured calls
// explore, so an arm's share of the key's calls becomes its share of the key's measured ones.
void OnlineLearner::planMeasurement(OnlineTable& table, const std::vector<KeyMeasurement>& keys,
                                    const std::vector<uint32_t>& keyIds) {
  const double initial = initialMeasureRate(
      config_.exploreTimeShare, *std::max_element(config_.measureCostShare.begin(), config_.measureCostShare.end()));
  plan_ = policy::planMeasurement(keys, config_.exploreTimeShare, config_.settledMeasureShare, initial);
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

}  // namespace dynamiccl::policy
