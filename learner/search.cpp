#include "learner/search.h"

#include <algorithm>
#include <cmath>

namespace dynamiccl::learner {

std::vector<int> Search::armSlots(int coll, const KeyState& k, const PriorArm& prior) const {
  std::vector<int> slots;
  auto add = [&](int s) {
    if (s >= 0 && slots.size() < kOnlineMaxArms + 1 && std::find(slots.begin(), slots.end(), s) == slots.end())
      slots.push_back(s);
  };
  const int priorSlot = prior.full ? prior.slot : -1;
  // Nothing to verify and nothing promoted: the static table answers.
  const bool promoted = k.incumbent >= 0 && k.incumbent != priorSlot && (prior.full || k.incumbent != k.ncclDefault);
  const bool verifying = config_.mode != LearnerMode::Learn;
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

Candidates Search::learnedOr(const Candidates& fallback, int coll, int bucket) const {
  if (!learned_ || !*learned_) return fallback;
  const Candidates& c = (*learned_)->lookup(coll, SizeBucket::lowest(bucket), 1, 0);
  return c.count ? c : fallback;
}


std::optional<double> Search::untriedRatio(const KeyState& k, int slot,
                                                  std::optional<double> incumbentMean) const {
  if (isChannelSlot(slot)) return channels_.untriedRatio(k, slot);
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
    const bool pairRuns = k.incumbent >= 0 && !isChannelSlot(k.incumbent);
    const int ref = pairRuns && k.modelled_us[k.incumbent] > 0 ? k.incumbent : k.ncclDefault;
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

int Search::aheadOf(const KeyState& k, int runs) const {
  if (runs < 0 || k.arms[runs].n < static_cast<uint64_t>(config_.minSamples) || k.arms[runs].w <= 0.5) return -1;
  int winner = -1;
  for (int s = 0; s < kArmSlots; ++s) {
    const ArmStats& a = k.arms[s];
    // A tried arm, this build's candidate, or one a previous job promoted (the next job runs it from its
    // first boundary): a seeded arm the last job left undecided is not promoted on its summary alone.
    if (s == runs || (!((k.tested | k.seededPromoted) >> s & 1) && s != k.candidate) || !stats_.mayRun(k, s) ||
        a.n < static_cast<uint64_t>(config_.minSamples) ||
        a.w <= 0.5)
      continue;
    if (k.forbidden(s)) continue;
    if (!stats_.compare(a, k.arms[runs]).faster) continue;
    if (winner < 0 || a.s / a.w < k.arms[winner].s / k.arms[winner].w) winner = s;
  }
  return winner;
}

// Successive halving over the job's calls: a first round gives each allowed arm up to
// proposalSamples measurements, cheapest by NCCL's cost first, dropping those that fall behind beyond
// noise; then the undecided survivors are measured further, the best-measured first, until decided.
int Search::nextArm(const KeyState& k, int priorSlot, int runs) const {
  if (!k.modelled || k.ncclDefault < 0 || !(k.modelled_us[k.ncclDefault] > 0)) return -1;
  // Fresh arms cheapest by NCCL's cost first, so those it prices beyond maxTrialRatio come last (its
  // model can be wrong on new hardware; a slow one is dropped after a sample or two), then the
  // undecided survivors, fastest measured first.
  int fresh = -1, survivor = -1;
  auto measuredMean = [&](int s) { return k.arms[s].w > 0 ? k.arms[s].s / k.arms[s].w : 0.0; };
  for (int s = 0; s < kPairSlots; ++s) {
    if (s == k.ncclDefault || s == priorSlot || s == k.incumbent || !(k.modelled_us[s] >= 0)) continue;
    if (verifier_.decided(k, s, runs) || stats_.settled(k, s)) continue;
    if (k.arms[s].n < static_cast<uint64_t>(config_.proposalSamples)) {
      if (fresh < 0 || k.modelled_us[s] < k.modelled_us[fresh]) fresh = s;
    } else if (k.arms[s].w > 0 && (survivor < 0 || measuredMean(s) < measuredMean(survivor))) {
      survivor = s;
    }
  }
  return fresh >= 0 ? fresh : survivor;
}

int Search::proposal(int coll, int bucket, KeyState& k, int priorSlot) const {
  const int runs = k.incumbent >= 0 ? k.incumbent : (priorSlot >= 0 ? priorSlot : k.ncclDefault);
  if (runs < 0) return -1;
  const uint64_t minSamples = static_cast<uint64_t>(config_.minSamples);
  // Lost to what runs: no gain beyond noise once measured, or far behind after a sample or two.
  auto lost = [&](int s) {
    const ArmStats &a = k.arms[s], &r = k.arms[runs];
    if (a.w <= 0.1 || r.w <= 0.1) return false;
    if (meanOf(a) - meanOf(r) > std::log(config_.maxModelledRatio)) return true;
    return a.n >= minSamples && r.n >= minSamples && stats_.compare(a, r).noGain;
  };
  // An arm already measured faster than what runs beyond noise (this job's samples, or a previous
  // job's promotion seeded from the store) is the candidate, so the build promotes it now.
  if (stats_.trusted(k, runs)) {
    int winner = -1;
    for (int s = 0; s < kPairSlots; ++s) {
      if (s == runs || s == k.ncclDefault || s == priorSlot || !stats_.trusted(k, s) || !stats_.mayRun(k, s) ||
          k.forbidden(s))
        continue;
      if (stats_.compare(k.arms[s], k.arms[runs]).faster && (winner < 0 || meanOf(k.arms[s]) < meanOf(k.arms[winner])))
        winner = s;
    }
    if (winner >= 0) return k.proposal = winner;
  }
  // One proposal at a time, a candidate until decided: promoted (it runs), lost, or measured
  // proposalSamples times without a verdict. A verdict needs samples, not a moving target.
  if (const int p = k.proposal; p >= 0 && p != runs && p != k.ncclDefault && p != priorSlot && !lost(p) &&
                                !stats_.settled(k, p) && k.arms[p].n < static_cast<uint64_t>(config_.proposalSamples))
    return p;
  auto eligible = [&](int s) {
    if (s == runs || s == k.ncclDefault || s == priorSlot || k.arms[s].n >= minSamples || lost(s) || stats_.settled(k, s))
      return false;
    if (k.forbidden(s)) return false;  // IGNORE: NCCL would not run it
    return model_->belief(coll, bucket, algoOf(s), protoOf(s)).has_value();
  };
  int best = -1;
  double bestScore = -std::log1p(config_.minProposedGain);
  for (int s = 0; s < kPairSlots; ++s) {
    if (!eligible(s)) continue;
    const auto d = model_->difference(coll, bucket, algoOf(s), protoOf(s), algoOf(k.pairOf(runs)), protoOf(k.pairOf(runs)));
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

void Search::setCandidate(KeyState& k, int slot, const Decision& d) {
  k.candidate = slot;
  k.candidateDecision = d;
}

void Search::staticCandidate(int coll, int bucket, KeyState& k, int priorSlot) const {
  // The candidate is told apart by what ran: one whose (algo, proto) the static answer or NCCL runs
  // already cannot be verified from observations.
  const Candidates unverified = candidate_ ? candidate_(coll, bucket) : Candidates{};
  const Candidates cand = config_.learnedRulesApply ? unverified : learnedOr(unverified, coll, bucket);
  const int candSlot = fullSlot(cand, k.ncclTable());
  k.candidate = candSlot >= 0 && candSlot != priorSlot && candSlot != k.ncclDefault ? candSlot : -1;
  if (k.candidate >= 0) k.candidateDecision = cand.decisions[0];
}

int Search::runnerUp(const KeyState& k, int priorSlot) const {
  if (!k.modelled || k.ncclDefault < 0 || !(k.modelled_us[k.ncclDefault] > 0)) return -1;
  int best = -1;
  for (int s = 0; s < kPairSlots; ++s)
    if (s != k.ncclDefault && s != priorSlot && k.modelled_us[s] >= 0 &&
        (best < 0 || k.modelled_us[s] < k.modelled_us[best]))
      best = s;
  if (best < 0 || k.modelled_us[best] > config_.maxModelledRatio * k.modelled_us[k.ncclDefault]) return -1;
  return best;
}

bool Search::candidateDone(const KeyState& k, int runs) const {
  if (k.candidate < 0) return true;
  const bool roundDone = k.arms[k.candidate].n >= static_cast<uint64_t>(config_.proposalSamples) ||
                         stats_.settled(k, k.candidate) || channels_.roundDone(k, k.candidate);
  return roundDone || verifier_.decided(k, k.candidate, runs);
}

void Search::channelStep(KeyState& k, const PriorArm& prior, int runs) const {
  if (const int c = channels_.next(k, runs, decisionOf(k, prior, runs)); c >= 0) setCandidate(k, c, decisionAt(k, c));
}

void Search::searchNext(KeyState& k, const PriorArm& prior, int runs) const {
  // An arm measured ahead of what runs beyond noise stays the candidate, so this build promotes it.
  if (const int winner = aheadOf(k, runs); winner >= 0) {
    setCandidate(k, winner, k.tested >> winner & 1 ? k.testedDecision[winner] : decisionAt(k, winner));
    return;
  }
  if (!candidateDone(k, runs)) return;
  if (const int next = nextArm(k, prior.slot, runs); next >= 0) setCandidate(k, next, decisionAt(next));
  else channelStep(k, prior, runs);  // the (algo, proto) search has settled: its channel count next
}

void Search::pickCandidate(int coll, int bucket, KeyState& k, const PriorArm& prior) const {
  const int priorSlot = prior.slot;
  const int previous = k.candidate;
  staticCandidate(coll, bucket, k, priorSlot);
  // The learned policy in the job proposes first: its belief, updated by what was measured, picks
  // what to measure next; the profile's candidate and NCCL's runner-up remain for where it has none.
  if (model_)
    if (const int p = proposal(coll, bucket, k, priorSlot); p >= 0) setCandidate(k, p, decisionAt(p));
  // Verifying a profile: where it offers no testable candidate, or once its candidate is decided,
  // every other configuration NCCL's table allows is tried in turn, cheapest by NCCL's own cost first:
  // the model orders what to measure, the measurement decides. With the learned arm model in the
  // job, it ranks instead, and NCCL's runner-up stands in only where it proposes nothing.
  const int runs = runningArm(k, priorSlot);
  if (config_.mode == LearnerMode::RankedSearch) {
    // A channel arm under test stays the candidate until decided; else the ranked search's, and where
    // its candidate has its answer, the channel search's next count.
    if (isChannelSlot(previous) && k.candidate < 0) {
      k.candidate = previous;  // kept while undecided, and where it won, so this build promotes it
      const bool won = stats_.trusted(k, previous) && stats_.trusted(k, runs) &&
                       stats_.compare(k.arms[previous], k.arms[runs]).faster;
      if (candidateDone(k, runs) && !won) k.candidate = -1;
      else k.candidateDecision = decisionAt(k, previous);
    }
    if (k.candidate < 0)
      if (const int r = runnerUp(k, priorSlot); r >= 0) setCandidate(k, r, decisionAt(r));
    if (k.candidate != previous || !isChannelSlot(previous))
      if (candidateDone(k, runs)) channelStep(k, prior, runs);
  }
  if (config_.mode == LearnerMode::Search) searchNext(k, prior, runs);
  if (k.candidate >= 0) {
    k.tested |= uint32_t{1} << k.candidate;
    k.testedDecision[k.candidate] = k.candidateDecision;
  }
}

int Search::racingArm(const KeyState& k, const std::vector<int>& slots) const {
  // An arm whose estimate is a gain of minGain over the incumbent but whose bound is not yet (tune's
  // "undecided") is measured further at a higher rate; its trials cost nothing while it stays ahead.
  if (!stats_.trusted(k, k.incumbent)) return -1;
  const double inc = meanOf(k.arms[k.incumbent]), gainLog = std::log(1 - config_.rule.minGain);
  int racing = -1;
  for (int s : slots)
    if (s >= 0 && s != k.incumbent && stats_.trusted(k, s) && !stats_.settled(k, s) && meanOf(k.arms[s]) - inc < gainLog &&
        (racing < 0 || meanOf(k.arms[s]) < meanOf(k.arms[racing]))) {
      const Judgement j = stats_.compare(k.arms[s], k.arms[k.incumbent]);
      if (!j.faster && !j.noGain && !withinTheBar(j, config_.rule)) racing = s;
    }
  return racing;
}

}  // namespace dynamiccl::learner
