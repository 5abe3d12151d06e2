#include "policy/online_learner.h"

#include <algorithm>
#include <cmath>

#include "abi/abi.h"

namespace dynamiccl::policy {
namespace {

constexpr int slotOf(Algo a, Proto p) { return static_cast<int>(a) * kNumProtos + static_cast<int>(p); }
constexpr Algo algoOf(int slot) { return static_cast<Algo>(slot / kNumProtos); }
constexpr Proto protoOf(int slot) { return static_cast<Proto>(slot % kNumProtos); }
// What runs is measured beside the trials until it carries this many times the most sampled trial's weight.
constexpr double kBesideWeights = 2;

// Measured so precisely that its interval is narrower than the rule's bar yet not "faster": what it
// could still gain is within the rule's indifference (a few tenths of a percent), not worth measuring on.
bool withinTheBar(const Judgement& j, const DecisionRule& rule) { return j.upper - j.lower < -std::log(1 - rule.minGain); }

// Adds d unless present; keeps at most Candidates::kMax.
void append(Candidates& c, const Decision& d) {
  for (int i = 0; i < c.count; ++i)
    if (c.decisions[i] == d) return;
  if (c.count < Candidates::kMax) c.decisions[c.count++] = d;
}

// The arm a rule set's first decision runs: the one it names in full, or, where it forces only the
// algorithm, the protocol NCCL's costs pick in that row (modelled_us: NCCL's table; nullptr unknown);
// -1 when it names less or none, or NCCL can run none of that algorithm.
int fullSlot(const Candidates& c, const float* modelled_us) {
  if (!c.count || c.decisions[0].keepsAlgoProto()) return -1;
  const Decision& d = c.decisions[0];
  if (!d.leavesProtoToNccl()) return slotOf(d.algo, d.proto);
  if (!modelled_us) return -1;
  // The learner is not told the release: the releases' rules differ only on an exact tie (or an hour).
  const int slot = abi::ncclChoiceWithin(modelled_us, abi::PickRule::Nccl2_28, static_cast<int>(d.algo));
  return slot == abi::kNoPick ? -1 : slot;
}

}  // namespace

std::string_view verdictStateName(VerdictState s) {
  switch (s) {
    case VerdictState::Promoted: return "promoted";
    case VerdictState::Dropped: return "dropped";
    case VerdictState::Testing: break;
  }
  return "testing";
}

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

std::optional<double> OnlineLearner::untriedRatio(const KeyState& k, int slot,
                                                  std::optional<double> incumbentMean) const {
  if (!k.modelled) return config_.unknownRatio;
  const float arm = k.modelled_us[slot];
  if (!(arm >= 0)) return std::nullopt;  // IGNORE: NCCL would not run it
  double modelled;
  if (incumbentMean && k.bestScale > 0) {
    // The model in measured units (its best fit seen on this key) against what the incumbent costs
    // now: an incumbent that drifted slower makes the alternatives worth a look again.
    modelled = arm * k.bestScale / std::exp(*incumbentMean);
  } else {
    // Reference: the incumbent's modelled time, else NCCL's own choice's.
    const int ref = k.incumbent >= 0 && k.modelled_us[k.incumbent] > 0 ? k.incumbent : k.ncclDefault;
    if (ref < 0 || !(k.modelled_us[ref] > 0)) return config_.unknownRatio;
    modelled = arm / k.modelled_us[ref];
  }
  // A candidate rule is tested whatever NCCL's model says: the model is what it may be right against.
  if (modelled > config_.maxModelledRatio && slot != k.candidate) return std::nullopt;
  // Priced beyond what one trial may cost (the search's last arms): budgeted at that price, so it is
  // tried rarely and a single trial never overruns the exploration budget.
  if (modelled > config_.maxTrialRatio) return modelled;
  return std::max(1.0, std::min(modelled, config_.maxModelledRatio)) * config_.modelErrorFactor;
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

Judgement OnlineLearner::compare(const ArmStats& a, const ArmStats& b) const {
  return compare(a, b, config_.rule.minGain);
}

Judgement OnlineLearner::compare(const ArmStats& a, const ArmStats& b, double minGain) const {
  const double df = static_cast<double>(std::max<uint64_t>(2, std::min(a.n, b.n)) - 1);
  DecisionRule rule = config_.rule;
  rule.minGain = minGain;
  return judge(a.s / a.w - b.s / b.w, std::sqrt(varOfMean(a) + varOfMean(b)), df, rule);
}

double OnlineLearner::varOfMean(const ArmStats& a) const {
  const double m = a.s / a.w, var = std::max(a.ss / a.w - m * m, config_.noiseFloor * config_.noiseFloor);
  return var / std::max(a.w, 1.0);
}

Decision OnlineLearner::decisionAt(int slot) { return Decision{algoOf(slot), protoOf(slot), 0, 0}; }

bool OnlineLearner::decided(const KeyState& k, int slot, int runs) const {
  if (slot < 0) return true;
  if (k.modelled && !(k.modelled_us[slot] >= 0)) return true;  // NCCL's table forbids it here: nothing to measure
  const ArmStats& a = k.arms[slot];
  if (runs < 0 || runs == slot || a.w <= 0.1 || k.arms[runs].w <= 0.1) return false;
  const ArmStats& r = k.arms[runs];
  if (a.s / a.w - r.s / r.w > std::log(config_.maxModelledRatio)) return true;  // far behind after a sample or two
  if (a.n < static_cast<uint64_t>(config_.minSamples) || r.n < static_cast<uint64_t>(config_.minSamples)) return false;
  const Judgement j = compare(a, r);
  return j.faster || j.noGain;
}

int OnlineLearner::aheadOf(const KeyState& k, int runs) const {
  if (runs < 0 || k.arms[runs].n < static_cast<uint64_t>(config_.minSamples) || k.arms[runs].w <= 0.5) return -1;
  int winner = -1;
  for (int s = 0; s < kArmSlots; ++s) {
    const ArmStats& a = k.arms[s];
    // A tried arm, this build's candidate, or one a previous job promoted (the next job runs it from its
    // first boundary): a seeded arm the last job left undecided is not promoted on its summary alone.
    if (s == runs || (!((k.tested | k.seededPromoted) >> s & 1) && s != k.candidate) || !mayRun(k, s) ||
        a.n < static_cast<uint64_t>(config_.minSamples) ||
        a.w <= 0.5)
      continue;
    if (k.modelled && !(k.modelled_us[s] >= 0)) continue;
    if (!compare(a, k.arms[runs]).faster) continue;
    if (winner < 0 || a.s / a.w < k.arms[winner].s / k.arms[winner].w) winner = s;
  }
  return winner;
}

// Successive halving over the job's calls: a first round gives each allowed arm up to
// proposalSamples measurements, cheapest by NCCL's cost first, dropping those that fall behind beyond
// noise; then the undecided survivors are measured further, the best-measured first, until decided.
int OnlineLearner::nextArm(const KeyState& k, int priorSlot, int runs) const {
  if (!k.modelled || k.ncclDefault < 0 || !(k.modelled_us[k.ncclDefault] > 0)) return -1;
  // Fresh arms cheapest by NCCL's cost first, so those it prices beyond maxTrialRatio come last (its
  // model can be wrong on new hardware; a slow one is dropped after a sample or two), then the
  // undecided survivors, fastest measured first.
  int fresh = -1, survivor = -1;
  auto measuredMean = [&](int s) { return k.arms[s].w > 0 ? k.arms[s].s / k.arms[s].w : 0.0; };
  for (int s = 0; s < kArmSlots; ++s) {
    if (s == k.ncclDefault || s == priorSlot || s == k.incumbent || !(k.modelled_us[s] >= 0)) continue;
    if (decided(k, s, runs) || settled(k, s)) continue;
    if (k.arms[s].n < static_cast<uint64_t>(config_.proposalSamples)) {
      if (fresh < 0 || k.modelled_us[s] < k.modelled_us[fresh]) fresh = s;
    } else if (k.arms[s].w > 0 && (survivor < 0 || measuredMean(s) < measuredMean(survivor))) {
      survivor = s;
    }
  }
  return fresh >= 0 ? fresh : survivor;
}

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

int OnlineLearner::proposal(int coll, int bucket, KeyState& k, int priorSlot) {
  const int runs = k.incumbent >= 0 ? k.incumbent : (priorSlot >= 0 ? priorSlot : k.ncclDefault);
  if (runs < 0) return -1;
  const uint64_t minSamples = static_cast<uint64_t>(config_.minSamples);
  // Lost to what runs: no gain beyond noise once measured, or far behind after a sample or two.
  auto lost = [&](int s) {
    const ArmStats &a = k.arms[s], &r = k.arms[runs];
    if (a.w <= 0.1 || r.w <= 0.1) return false;
    if (meanOf(a) - meanOf(r) > std::log(config_.maxModelledRatio)) return true;
    return a.n >= minSamples && r.n >= minSamples && compare(a, r).noGain;
  };
  // An arm already measured faster than what runs beyond noise (this job's samples, or a previous
  // job's promotion seeded from the store) is the candidate, so the build promotes it now.
  if (trusted(k, runs)) {
    int winner = -1;
    for (int s = 0; s < kArmSlots; ++s) {
      if (s == runs || s == k.ncclDefault || s == priorSlot || !trusted(k, s) || !mayRun(k, s) ||
          (k.modelled && !(k.modelled_us[s] >= 0)))
        continue;
      if (compare(k.arms[s], k.arms[runs]).faster && (winner < 0 || meanOf(k.arms[s]) < meanOf(k.arms[winner])))
        winner = s;
    }
    if (winner >= 0) return k.proposal = winner;
  }
  // One proposal at a time, a candidate until decided: promoted (it runs), lost, or measured
  // proposalSamples times without a verdict. A verdict needs samples, not a moving target.
  if (const int p = k.proposal; p >= 0 && p != runs && p != k.ncclDefault && p != priorSlot && !lost(p) &&
                                !settled(k, p) && k.arms[p].n < static_cast<uint64_t>(config_.proposalSamples))
    return p;
  auto eligible = [&](int s) {
    if (s == runs || s == k.ncclDefault || s == priorSlot || k.arms[s].n >= minSamples || lost(s) || settled(k, s))
      return false;
    if (k.modelled && !(k.modelled_us[s] >= 0)) return false;  // IGNORE: NCCL would not run it
    return model_->belief(coll, bucket, algoOf(s), protoOf(s)).has_value();
  };
  int best = -1;
  double bestScore = -std::log1p(config_.minProposedGain);
  for (int s = 0; s < kArmSlots; ++s) {
    if (!eligible(s)) continue;
    const auto d = model_->difference(coll, bucket, algoOf(s), protoOf(s), algoOf(runs), protoOf(runs));
    if (!d) continue;
    const double optimistic = d->meanLog - config_.proposalSigmas * d->sdLog;  // log(its time / what runs')
    if (optimistic < bestScore) {
      best = s;
      bestScore = optimistic;
    }
  }
  k.proposal = best;
  return best;
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

bool OnlineLearner::trusted(const KeyState& k, int slot) const {
  return slot >= 0 && k.arms[slot].n >= static_cast<uint64_t>(config_.minSamples) && k.arms[slot].w > 0.5;
}

bool OnlineLearner::mayRun(const KeyState& k, int slot) const {
  return slot >= 0 && ((k.seededPromoted >> slot & 1) ||
                       k.arms[slot].n - k.arms[slot].seededN >= static_cast<uint64_t>(config_.minSamples));
}

bool OnlineLearner::settled(const KeyState& k, int slot) const {
  // Offered minSamples trials and timed in none: NCCL runs something else for it (CollNet where it
  // has none, ...): no more trials of it are worth their cost.
  return slot >= 0 && (k.arms[slot].n >= static_cast<uint64_t>(config_.settleSamples) ||
                       k.offered[slot] >= 2.0 * config_.settleSamples ||
                       (k.arms[slot].n == 0 && k.offered[slot] >= config_.minSamples));
}

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

void OnlineLearner::setCandidate(KeyState& k, int slot, const Decision& d) {
  k.candidate = slot;
  k.candidateDecision = d;
}

void OnlineLearner::staticCandidate(int coll, int bucket, KeyState& k, int priorSlot) const {
  // The candidate is told apart by what ran: one whose (algo, proto) the static answer or NCCL runs
  // already cannot be verified from observations.
  const Candidates unverified = candidate_ ? candidate_(coll, bucket) : Candidates{};
  const Candidates cand = config_.learnedRulesApply ? unverified : learnedOr(unverified, coll, bucket);
  const int candSlot = fullSlot(cand, k.ncclTable());
  k.candidate = candSlot >= 0 && candSlot != priorSlot && candSlot != k.ncclDefault ? candSlot : -1;
  if (k.candidate >= 0) k.candidateDecision = cand.decisions[0];
}

int OnlineLearner::runnerUp(const KeyState& k, int priorSlot) const {
  if (!k.modelled || k.ncclDefault < 0 || !(k.modelled_us[k.ncclDefault] > 0)) return -1;
  int best = -1;
  for (int s = 0; s < kArmSlots; ++s)
    if (s != k.ncclDefault && s != priorSlot && k.modelled_us[s] >= 0 &&
        (best < 0 || k.modelled_us[s] < k.modelled_us[best]))
      best = s;
  if (best < 0 || k.modelled_us[best] > config_.maxModelledRatio * k.modelled_us[k.ncclDefault]) return -1;
  return best;
}

void OnlineLearner::searchNext(KeyState& k, int priorSlot, int runs) const {
  // An arm measured ahead of what runs beyond noise stays the candidate, so this build promotes it.
  if (const int winner = aheadOf(k, runs); winner >= 0) {
    setCandidate(k, winner, k.tested >> winner & 1 ? k.testedDecision[winner] : decisionAt(winner));
    return;
  }
  const bool roundDone = k.candidate >= 0 && (k.arms[k.candidate].n >= static_cast<uint64_t>(config_.proposalSamples) ||
                                              settled(k, k.candidate));
  if (k.candidate >= 0 && !roundDone && !decided(k, k.candidate, runs)) return;
  if (const int next = nextArm(k, priorSlot, runs); next >= 0) setCandidate(k, next, decisionAt(next));
}

void OnlineLearner::pickCandidate(int coll, int bucket, KeyState& k, int priorSlot) {
  staticCandidate(coll, bucket, k, priorSlot);
  // The learned policy in the job proposes first: its belief, updated by what was measured, picks
  // what to measure next; the profile's candidate and NCCL's runner-up remain for where it has none.
  if (model_)
    if (const int p = proposal(coll, bucket, k, priorSlot); p >= 0) setCandidate(k, p, decisionAt(p));
  // Verifying a profile: where it offers no testable candidate, or once its candidate is decided,
  // every other configuration NCCL's table allows is tried in turn, cheapest by NCCL's own cost first:
  // the model orders what to measure, the measurement decides. With the learned arm model in the
  // job, it ranks instead, and NCCL's runner-up stands in only where it proposes nothing.
  const int runs = k.incumbent >= 0 ? k.incumbent : (priorSlot >= 0 ? priorSlot : k.ncclDefault);
  if (mode() == Mode::VerifyRanked && k.candidate < 0)
    if (const int r = runnerUp(k, priorSlot); r >= 0) setCandidate(k, r, decisionAt(r));
  if (mode() == Mode::VerifySearch) searchNext(k, priorSlot, runs);
  if (k.candidate >= 0) {
    k.tested |= uint32_t{1} << k.candidate;
    k.testedDecision[k.candidate] = k.candidateDecision;
  }
}

void OnlineLearner::switchToBest(KeyState& k, const std::vector<int>& slots) {
  int best = -1;
  for (int s : slots)
    if (trusted(k, s) && (s == k.incumbent || mayRun(k, s)) && (best < 0 || meanOf(k.arms[s]) < meanOf(k.arms[best])))
      best = s;
  if (best < 0 || best == k.incumbent || !trusted(k, k.incumbent) ||
      !compare(k.arms[best], k.arms[k.incumbent]).faster)
    return;
  k.incumbent = best;
  ++counters_.switches;
  // An arm online learning switched to gets its verdict like a candidate, so the job's gain is exported.
  if (!(k.tested >> best & 1)) {
    k.tested |= uint32_t{1} << best;
    k.testedDecision[best] = decisionAt(best);
  }
}

void OnlineLearner::guard(KeyState& k, int priorSlot) {
  // Never keep a choice that measures worse than NCCL's own beyond noise; and a promotion this job
  // made stands only while its calls show it faster than NCCL's own beyond noise (the bound its
  // verdict carries): one made on early calls that later calls erode returns to what ran before.
  const int def = k.ncclDefault;
  if (def < 0 || def == k.incumbent || !trusted(k, def) || !trusted(k, k.incumbent)) return;
  if (compare(k.arms[k.incumbent], k.arms[def]).slower) {
    k.incumbent = def;
    ++counters_.guardTrips;
  } else if (k.incumbent != priorSlot && !compare(k.arms[k.incumbent], k.arms[def], 0.0).faster) {
    k.incumbent = priorSlot;
    ++counters_.guardTrips;
  }
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

int OnlineLearner::racingArm(const KeyState& k, const std::vector<int>& slots) const {
  // An arm whose estimate is a gain of minGain over the incumbent but whose bound is not yet (tune's
  // "undecided") is measured further at a higher rate; its trials cost nothing while it stays ahead.
  if (!trusted(k, k.incumbent)) return -1;
  const double inc = meanOf(k.arms[k.incumbent]), gainLog = std::log(1 - config_.rule.minGain);
  int racing = -1;
  for (int s : slots)
    if (s >= 0 && s != k.incumbent && trusted(k, s) && !settled(k, s) && meanOf(k.arms[s]) - inc < gainLog &&
        (racing < 0 || meanOf(k.arms[s]) < meanOf(k.arms[racing]))) {
      const Judgement j = compare(k.arms[s], k.arms[k.incumbent]);
      if (!j.faster && !j.noGain && !withinTheBar(j, config_.rule)) racing = s;
    }
  return racing;
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

KeyMeasure OnlineLearner::keyMeasure(const KeyState& k, const Exploration& x) const {
  KeyMeasure m;
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
void OnlineLearner::planMeasurement(OnlineTable& table, const std::vector<KeyMeasure>& keys,
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
  std::vector<KeyMeasure> measures;
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
      measures.push_back(keyMeasure(k, {}));
      continue;
    }
    for (int s : slots) decay(k, k.arms[s]);
    if (k.incumbent < 0) k.incumbent = prior.slot;
    switchToBest(k, slots);
    guard(k, prior.slot);
    OnlineEntry& e = table->entry(key);
    setExploit(e, k, prior);
    measures.push_back(keyMeasure(k, setExploration(e, k, slots, prior)));
  }
  planMeasurement(*table, measures, measuredKeys);
  recordOffered(*table);
  return table;
}

void OnlineLearner::seed(int coll, int bucket, const ArmSummary& arm, bool promoted) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  if (arm.algo == Algo::Default || arm.proto == Proto::Default || arm.n == 0) return;
  if (!std::isfinite(arm.meanLog) || !std::isfinite(arm.varLog) || arm.varLog < 0) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  ArmStats& a = k.arms[slotOf(arm.algo, arm.proto)];
  if (promoted) k.seededPromoted |= uint32_t{1} << slotOf(arm.algo, arm.proto);
  const double w = std::min(static_cast<double>(arm.n), config_.seedWeightCap);
  a.w = w;
  a.s = w * arm.meanLog;
  a.ss = w * (arm.varLog + arm.meanLog * arm.meanLog);
  a.n = arm.n;
  a.seededN = arm.n;
  a.lastCall = k.calls;
}

ArmSummary OnlineLearner::summary(const KeyState& k, int slot) const {
  ArmSummary s;
  if (slot < 0) return s;
  const ArmStats& a = k.arms[slot];
  s.algo = algoOf(slot);
  s.proto = protoOf(slot);
  s.n = a.n;
  if (a.w > 0) {
    s.meanLog = a.s / a.w;
    s.varLog = std::max(0.0, a.ss / a.w - s.meanLog * s.meanLog);
  }
  return s;
}

std::vector<Verdict> OnlineLearner::verdicts() const {
  std::vector<Verdict> out;
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    const KeyState& k = keys_[key];
    if (!k.active || !k.tested) continue;
    const int base = k.ncclDefault >= 0 ? k.ncclDefault : k.incumbent;
    for (int slot = 0; slot < kArmSlots; ++slot) {
      if (!(k.tested >> slot & 1) || base < 0 || base == slot) continue;
      Verdict v;
      v.coll = static_cast<int>(key / SizeBucket::kCount);
      v.bucket = static_cast<int>(key % SizeBucket::kCount);
      v.candidate = k.testedDecision[slot];
      v.candidateArm = summary(k, slot);
      v.baselineArm = summary(k, base);
      const ArmStats &c = k.arms[slot], &b = k.arms[base];
      if (c.w > 0 && b.w > 0) {
        // The gain and its bounds are the decision rule's (what promoted it, and what keeps it).
        const Judgement j = compare(c, b);
        v.gain = std::exp(v.baselineArm.meanLog - v.candidateArm.meanLog) - 1;
        v.gainLow = std::exp(-j.upper) - 1;
        v.gainHigh = std::exp(-j.lower) - 1;
        const bool settled =
            c.n >= static_cast<uint64_t>(config_.minSamples) && b.n >= static_cast<uint64_t>(config_.minSamples);
        if (k.incumbent == slot) v.state = VerdictState::Promoted;
        else if ((settled && j.noGain) || -std::log1p(v.gain) > std::log(config_.maxModelledRatio)) v.state = VerdictState::Dropped;
      }
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace dynamiccl::policy
