#include "policy/online_learner.h"

// The learner's core: what each key holds, the observations it takes, and the build of each version
// (its phases in online_verifier.cpp, online_search.cpp and measurement_plan.cpp).
#include <algorithm>
#include <cmath>

#include "policy/online_learner_arms.h"

namespace dynamiccl::policy {
using namespace learner;

OnlineLearner::OnlineLearner(OnlineConfig config, PriorFn prior, CandidateFn candidate)
    : config_(config),
      prior_(std::move(prior)),
      candidate_(std::move(candidate)),
      decayPerCall_(std::pow(0.5, 1.0 / std::max(1.0, config.halfLifeCalls))),
      keys_(kOnlineKeys) {
  usualDecayPerCall_ = std::pow(0.5, 1.0 / std::max(1.0, config.usualHalfLifeCalls));
  // The first epoch measures nothing: its boundary's trials need no timing of what runs (NCCL's costs
  // order them), and what runs is measured beside them from then on. A job shorter than an epoch pays nothing.
  plan_.rate = 0;
}

void OnlineLearner::setNcclDefault(int coll, int bucket, Algo algo, Proto proto) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  if (algo == Algo::Default || proto == Proto::Default) return;
  keys_[coll * SizeBucket::kCount + bucket].ncclDefault = slotOf(algo, proto);
}

void OnlineLearner::setModelledCost(int coll, int bucket, const float* costTable) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount || !costTable) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  for (int i = 0; i < kArmSlots; ++i) k.modelled_us[i] = std::isfinite(costTable[i]) ? costTable[i] : -1.0f;
  k.modelled = true;
}

void OnlineLearner::decay(KeyState& k, ArmStats& a) const {
  if (a.lastCall == k.calls) return;
  const double f = std::pow(decayPerCall_, static_cast<double>(k.calls - a.lastCall));
  a.w *= f;
  a.s *= f;
  a.ss *= f;
  a.lastCall = k.calls;
}

void OnlineLearner::setCallsSoFar(int coll, int bucket, uint64_t calls) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  k.jobCalls = calls;
  k.active = k.active || calls > 0;  // searched from its calls, before anything is measured
}

double OnlineLearner::callsSoFar(const KeyState& k) const {
  // The plugin counts every call; without that count, the measured ones over the share measured.
  if (k.jobCalls) return static_cast<double>(k.jobCalls);
  return static_cast<double>(k.calls) / std::max(plan_.rate, 1e-6);
}

void OnlineLearner::observe(int coll, uint64_t nBytes, Algo algo, Proto proto, double latency_us) {
  if (coll < 0 || coll >= kNumCollectives || algo == Algo::Default || proto == Proto::Default) return;
  if (!(latency_us > 0) || !std::isfinite(latency_us)) return;
  KeyState& k = keys_[onlineKey(coll, nBytes)];
  k.active = true;
  ++k.calls;
  ArmStats& a = k.arms[slotOf(algo, proto)];
  decay(k, a);
  const double x = std::log(latency_us);
  // The recent-timings window compares with the arm's usual latency, once it has one.
  const int slot = slotOf(algo, proto);
  double& uw = k.usualW[slot];
  double& um = k.usualLog[slot];
  if (a.n >= static_cast<uint64_t>(config_.minSamples)) {
    windows_.at(static_cast<Collective>(coll), nBytes).push(latency_us, std::exp(um));
    windowsChanged_ = true;
  }
  uw = uw * usualDecayPerCall_ + 1;
  um += (x - um) / uw;
  a.w += 1;
  a.s += x;
  a.ss += x * x;
  ++a.n;
  ++counters_.observations;
}

std::vector<int> OnlineLearner::armSlots(int coll, const KeyState& k, const PriorArm& prior) const {
  std::vector<int> slots;
  auto add = [&](int s) {
    if (s >= 0 && slots.size() < kOnlineMaxArms + 1 && std::find(slots.begin(), slots.end(), s) == slots.end())
      slots.push_back(s);
  };
  const int priorSlot = prior.full ? prior.slot : -1;
  // Nothing to verify and nothing promoted: the static table answers.
  const bool promoted = k.incumbent >= 0 && k.incumbent != priorSlot && (prior.full || k.incumbent != k.ncclDefault);
  const bool verifying = mode() != Mode::Learn;
  if (verifying && k.candidate < 0 && !promoted) return slots;
  add(priorSlot);
  add(k.ncclDefault);
  add(k.candidate);
  if (verifying) return slots;
  for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple}) {
    add(slotOf(Algo::Ring, p));
    if (coll == static_cast<int>(Collective::AllReduce)) add(slotOf(Algo::Tree, p));
  }
  return slots;
}

double OnlineLearner::varOfMean(const ArmStats& a) const {
  const double m = a.s / a.w, var = std::max(a.ss / a.w - m * m, config_.noiseFloor * config_.noiseFloor);
  return var / std::max(a.w, 1.0);
}

Decision OnlineLearner::decisionAt(int slot) { return Decision{algoOf(slot), protoOf(slot), 0, 0}; }

Candidates OnlineLearner::learnedOr(const Candidates& fallback, int coll, int bucket) const {
  if (!learned_) return fallback;
  const Candidates& c = learned_->lookup(coll, SizeBucket::lowest(bucket), 1, 0);
  return c.count ? c : fallback;
}

Candidates OnlineLearner::priorOf(int coll, int bucket) const {
  return config_.learnedRulesApply ? learnedOr(prior_(coll, bucket), coll, bucket) : prior_(coll, bucket);
}

void OnlineLearner::refitModel() {
  std::vector<MeasuredArm> measured;
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    KeyState& k = keys_[key];
    if (!k.active) continue;
    for (int s = 0; s < kArmSlots; ++s) {
      ArmStats& a = k.arms[s];
      if (a.n == 0) continue;
      decay(k, a);
      if (a.w > 0.05)
        measured.push_back(MeasuredArm{static_cast<int>(key / SizeBucket::kCount), static_cast<int>(key % SizeBucket::kCount),
                                       algoOf(s), protoOf(s), a.w, a.s / a.w});
    }
  }
  model_->refit(measured, windows_);
  modelFitAt_ = counters_.observations;
  ++modelRefits_;
}

OnlineLearner::Mode OnlineLearner::mode() const {
  if (!config_.candidatesOnly) return Mode::Learn;
  if (!config_.modelRunnerUp) return Mode::Verify;
  return model_ ? Mode::VerifyRanked : Mode::VerifySearch;
}

OnlineLearner::PriorArm OnlineLearner::priorArm(int coll, int bucket, const KeyState& k) const {
  PriorArm p;
  p.rules = priorOf(coll, bucket);
  const int full = fullSlot(p.rules, k.ncclTable());
  p.full = full >= 0;
  p.slot = p.full ? full : (p.rules.count ? -1 : k.ncclDefault);
  return p;
}

Decision OnlineLearner::decisionOf(const KeyState& k, const PriorArm& prior, int slot) const {
  if (slot == k.candidate) return k.candidateDecision;
  return slot == prior.slot && prior.full ? prior.rules.decisions[0] : decisionAt(slot);
}

void OnlineLearner::setExploit(OnlineEntry& e, const KeyState& k, const PriorArm& prior) const {
  // Verifying only: while the static answer stands, it answers itself (exactly, at every size).
  if (mode() != Mode::Learn && (k.incumbent < 0 || k.incumbent == prior.slot)) return;
  if (k.incumbent >= 0) append(e.exploit, decisionOf(k, prior, k.incumbent));
  for (int i = 0; i < prior.rules.count; ++i) append(e.exploit, prior.rules.decisions[i]);
  if (!e.exploit.count) append(e.exploit, Decision{});  // keep NCCL's choice, explicitly
}

void OnlineLearner::updateScale(KeyState& k, const std::vector<int>& slots) const {
  if (!k.modelled) return;
  for (int s : slots)
    if (trusted(k, s) && k.modelled_us[s] > 0) {
      const double fit = std::exp(meanOf(k.arms[s])) / k.modelled_us[s];
      if (k.bestScale <= 0 || fit < k.bestScale) k.bestScale = fit;
    }
}

std::unique_ptr<OnlineTable> OnlineLearner::build(uint64_t version) {
  if (refresh_ && windowsChanged_) {
    learned_ = refresh_(windows_);
    windowsChanged_ = false;
    ++refreshes_;
  }
  if (model_ && modelFitAt_ != counters_.observations) refitModel();
  auto table = std::make_unique<OnlineTable>();
  table->setVersion(version);
  jobCallsTotal_ = 0;
  for (const KeyState& k : keys_) jobCallsTotal_ += static_cast<double>(k.jobCalls);
  std::vector<KeyMeasurement> measures;
  std::vector<uint32_t> measuredKeys;
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    KeyState& k = keys_[key];
    if (!k.active) continue;
    const int coll = static_cast<int>(key / SizeBucket::kCount), bucket = static_cast<int>(key % SizeBucket::kCount);
    countOffered(k);
    k.entrySlot.fill(-1);
    const PriorArm prior = priorArm(coll, bucket, k);
    pickCandidate(coll, bucket, k, prior.slot);
    const std::vector<int> slots = armSlots(coll, k, prior);
    k.measureCost = config_.measureCostShare[bucket];
    measuredKeys.push_back(key);
    if (slots.empty()) {  // the static table answers: nothing searched, its time still weighs
      measures.push_back(keyMeasurement(k, {}));
      continue;
    }
    for (int s : slots) decay(k, k.arms[s]);
    if (k.incumbent < 0) k.incumbent = prior.slot;
    switchToBest(k, slots);
    guard(k, prior.slot);
    OnlineEntry& e = table->entry(key);
    setExploit(e, k, prior);
    measures.push_back(keyMeasurement(k, setExploration(e, k, slots, prior)));
  }
  planMeasurement(*table, measures, measuredKeys);
  recordOffered(*table);
  return table;
}

}  // namespace dynamiccl::policy
