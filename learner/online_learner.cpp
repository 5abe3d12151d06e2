#include "learner/online_learner.h"

// The build step: what each key holds, the observations it takes, and the build of each version
// from the parts (arm_statistics, verifier, search, exploration_budget).
#include <algorithm>
#include <cmath>

#include "learner/channel_arms.h"
#include "learner/exploration_budget.h"

namespace dynamiccl::learner {

OnlineLearner::OnlineLearner(OnlineConfig config, PriorFn prior, CandidateFn candidate)
    : config_(config),
      prior_(std::move(prior)),
      keys_(kOnlineKeys),
      stats_(std::make_unique<ArmStatistics>(config_)),
      verifier_(std::make_unique<Verifier>(config_, *stats_)),
      channels_(std::make_unique<ChannelSearch>(config_, *stats_, *verifier_)),
      search_(std::make_unique<Search>(config_, *stats_, *verifier_, *channels_, std::move(candidate))),
      budget_(std::make_unique<ExplorationBudget>(config_, *stats_, *search_)) {
  search_->setLearnedRules(&learned_);
}

OnlineLearner::~OnlineLearner() = default;

void OnlineLearner::setArmModel(std::unique_ptr<ArmModel> model) {
  model_ = std::move(model);
  search_->setModel(model_.get());
}

const MeasurementPlan& OnlineLearner::measurementPlan() const { return budget_->plan(); }

void OnlineLearner::setNcclDefault(int coll, int bucket, Algo algo, Proto proto) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  if (algo == Algo::Default || proto == Proto::Default) return;
  keys_[coll * SizeBucket::kCount + bucket].ncclDefault = slotOf(algo, proto);
}

void OnlineLearner::setModelledCost(int coll, int bucket, const float* costTable) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount || !costTable) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  for (int i = 0; i < kPairSlots; ++i) k.modelled_us[i] = std::isfinite(costTable[i]) ? costTable[i] : -1.0f;
  k.modelled = true;
}

void OnlineLearner::setCallsSoFar(int coll, int bucket, uint64_t calls) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  k.jobCalls = calls;
  k.active = k.active || calls > 0;  // searched from its calls, before anything is measured
}

void OnlineLearner::observe(int coll, uint64_t nBytes, Algo algo, Proto proto, double latency_us) {
  observe(coll, nBytes, algo, proto, 0, latency_us, 0);
}

void OnlineLearner::observe(int coll, uint64_t nBytes, Algo algo, Proto proto, int nChannels, double latency_us,
                            int askedChannels) {
  if (coll < 0 || coll >= kNumCollectives || algo == Algo::Default || proto == Proto::Default) return;
  if (!(latency_us > 0) || !std::isfinite(latency_us)) return;
  KeyState& k = keys_[onlineKey(coll, nBytes)];
  if (nChannels > 0) channels_->noteRan(nChannels);
  const int slot = armOfRun(k, slotOf(algo, proto), nChannels, askedChannels);
  if (slot < 0) return;  // a count no arm stands for: no arm's evidence
  if (stats_->observe(k, slot, latency_us, windows_.at(static_cast<Collective>(coll), nBytes)))
    windowsChanged_ = true;
  ++counters_.observations;
}

void OnlineLearner::seed(int coll, int bucket, const ArmSummary& arm, bool promoted) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  if (arm.algo == Algo::Default || arm.proto == Proto::Default || arm.n == 0) return;
  if (!std::isfinite(arm.meanLog) || !std::isfinite(arm.varLog) || arm.varLog < 0) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  const int pair = slotOf(arm.algo, arm.proto);
  // A count the channel search asked for is its own arm (a slot for it, while one is free); a rule's own
  // count, with the search off, ran as its pair's arm in that job (armOfRun) and seeds the pair.
  const int slot = arm.nChannels > 0 && config_.searchChannels ? channelSlot(k, pair, arm.nChannels, true) : pair;
  if (slot >= 0) stats_->seed(k, slot, arm, promoted);
}

std::vector<Verdict> OnlineLearner::verdicts() const { return verifier_->verdicts(keys_); }

Candidates OnlineLearner::priorOf(int coll, int bucket) const {
  return config_.learnedRulesApply ? search_->learnedOr(prior_(coll, bucket), coll, bucket) : prior_(coll, bucket);
}

void OnlineLearner::refitModel() {
  std::vector<MeasuredArm> measured;
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    KeyState& k = keys_[key];
    if (!k.active) continue;
    for (int s = 0; s < kPairSlots; ++s) {  // the model knows (algo, proto) at NCCL's count
      ArmStats& a = k.arms[s];
      if (a.n == 0) continue;
      stats_->decay(k, a);
      if (a.w > 0.05)
        measured.push_back(MeasuredArm{static_cast<int>(key / SizeBucket::kCount), static_cast<int>(key % SizeBucket::kCount),
                                       algoOf(s), protoOf(s), a.w, a.s / a.w});
    }
  }
  model_->refit(measured, windows_);
  modelFitAt_ = counters_.observations;
  ++modelRefits_;
}

PriorArm OnlineLearner::priorArm(int coll, int bucket, const KeyState& k) const {
  PriorArm p;
  p.rules = priorOf(coll, bucket);
  const int full = fullSlot(p.rules, k.ncclTable());
  p.full = full >= 0;
  p.slot = p.full ? full : (p.rules.count ? -1 : k.ncclDefault);
  return p;
}

void OnlineLearner::setExploit(OnlineEntry& e, const KeyState& k, const PriorArm& prior) const {
  // Verifying only: while the static answer stands, it answers itself (exactly, at every size).
  if (config_.mode != LearnerMode::Learn && (k.incumbent < 0 || k.incumbent == prior.slot)) return;
  if (k.incumbent >= 0) append(e.exploit, decisionOf(k, prior, k.incumbent));
  for (int i = 0; i < prior.rules.count; ++i) append(e.exploit, prior.rules.decisions[i]);
  if (!e.exploit.count) append(e.exploit, Decision{});  // keep NCCL's choice, explicitly
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
  budget_->startBuild(keys_);
  std::vector<KeyMeasurement> measures;
  std::vector<uint32_t> measuredKeys;
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    KeyState& k = keys_[key];
    if (!k.active) continue;
    const int coll = static_cast<int>(key / SizeBucket::kCount), bucket = static_cast<int>(key % SizeBucket::kCount);
    ExplorationBudget::countOffered(k);
    k.entrySlot.fill(-1);
    const PriorArm prior = priorArm(coll, bucket, k);
    search_->pickCandidate(coll, bucket, k, prior);
    const std::vector<int> slots = search_->armSlots(coll, k, prior);
    k.measureCost = config_.measureCostShare[bucket];
    measuredKeys.push_back(key);
    if (slots.empty()) {  // the static table answers: nothing searched, its time still weighs
      measures.push_back(budget_->keyMeasurement(k, {}));
      continue;
    }
    for (int s : slots) stats_->decay(k, k.arms[s]);
    if (k.incumbent < 0) k.incumbent = prior.slot;
    counters_.switches += verifier_->switchToBest(k, slots);
    counters_.guardTrips += verifier_->guard(k, prior.slot);
    OnlineEntry& e = table->entry(key);
    setExploit(e, k, prior);
    measures.push_back(budget_->keyMeasurement(k, budget_->setExploration(e, k, slots, prior)));
  }
  budget_->planMeasurement(*table, measures, measuredKeys);
  budget_->recordOffered(*table, keys_);
  return table;
}

}  // namespace dynamiccl::learner
