#include "learner/channel_search.h"

#include <algorithm>
#include <cmath>

#include "learner/channel_arms.h"

namespace dynamiccl::learner {
namespace {

// Whether a count is a step of the ladder from NCCL's own (doublings up, halvings down), not a midpoint.
bool onLadder(int own, int c) {
  for (int x = own; x <= c && x > 0; x *= 2)
    if (x == c) return true;
  for (int x = own / 2; x >= c && x > 0; x /= 2)
    if (x == c) return true;
  return false;
}

}  // namespace

int ChannelSearch::mostAllowed(int ncclCount) const {
  // NCCL 2.31+ takes the count as a cap on its own; elsewhere a raise is honoured up to what the host
  // built (RCCL: never above it; NCCL before 2.31: clipped to the communicator's channels).
  if (config_.channelsCapOnly) return ncclCount;
  return std::min(config_.maxChannels > 0 ? config_.maxChannels : std::max(ncclCount, mostRan_), kMaxChannels);
}

bool ChannelSearch::done(const KeyState& k, int pair, int nChannels, int runs) const {
  // NCCL's own count is the pair's arm: measured beside every trial already.
  if (nChannels < 1 || nChannels > mostAllowed(k.ncclChannels[pair]) || nChannels == k.ncclChannels[pair]) return true;
  const int slot = findChannelSlot(k, pair, nChannels);
  if (slot < 0) return false;  // never tried
  if (slot == runs) return true;
  if (isChannelSlot(slot) && k.channelArms[slot - kPairSlots].trimmed) return true;
  // One measured ahead of what runs is not done: as the candidate, the build promotes it.
  if (stats_.trusted(k, slot) && stats_.trusted(k, runs) && stats_.compare(k.arms[slot], k.arms[runs]).faster) return false;
  return verifier_.decided(k, slot, runs) || stats_.settled(k, slot) || roundDone(k, slot);
}

int ChannelSearch::next(KeyState& k, int runs, const Decision& running) const {
  if (!config_.searchChannels || runs < 0 || (!isChannelSlot(runs) && running.nChannels > 0)) return -1;
  const int pair = k.pairOf(runs);
  if (const int step = ladderStep(k, pair, runs); step >= 0) return step;
  // Then NCCL's own pair where another won the race at NCCL's count: that count may be what lost.
  const int nccl = k.ncclDefault;
  if (nccl < 0 || nccl == pair || isChannelSlot(nccl)) return -1;
  return ladderStep(k, nccl, bestOf(k, nccl));
}

int ChannelSearch::bestOf(const KeyState& k, int pair) const {
  int best = pair;
  for (int s = kPairSlots; s < kArmSlots; ++s)
    if (k.pairOf(s) == pair && k.channelsOf(s) > 0 && stats_.trusted(k, s) && stats_.trusted(k, best) &&
        stats_.compare(k.arms[s], k.arms[best]).faster)
      best = s;
  return best;
}

int ChannelSearch::ladderStep(KeyState& k, int pair, int runs) const {
  if (pair < 0 || k.forbidden(pair)) return -1;
  const int own = k.ncclChannels[pair];
  if (own <= 0) return -1;
  const int at = isChannelSlot(runs) ? k.channelsOf(runs) : own;
  // The direction the search went keeps going; from NCCL's own count, up first (where allowed), then down.
  // A step the host trimmed stands for the count it ran as (an arm of its own, or NCCL's).
  auto ranAs = [&](int c) {
    const int s = findChannelSlot(k, pair, c);
    return s >= 0 && k.channelArms[s - kPairSlots].trimmed ? static_cast<int>(k.channelArms[s - kPairSlots].ranAs) : c;
  };
  // A doubling past what the host runs asks for its most instead (what it built), once.
  const int up = ranAs(at < mostAllowed(own) ? std::min(at * 2, mostAllowed(own)) : at * 2), down = ranAs(at / 2);
  if (!onLadder(own, at)) return -1;  // the midpoint (or the top) won: the search has ended
  int step = -1;
  // From NCCL's own count, a step up that ties (no loss beyond noise) says the response is flat here:
  // the step down is not worth its trials.
  const int upSlot = findChannelSlot(k, pair, up);
  const bool upTied = at == own && upSlot >= 0 && !k.channelArms[upSlot - kPairSlots].trimmed &&
                      stats_.trusted(k, upSlot) && stats_.trusted(k, runs) &&
                      !stats_.compare(k.arms[upSlot], k.arms[runs]).slower;
  if (at >= own && !done(k, pair, up, runs)) step = up;
  else if (at <= own && !upTied && !done(k, pair, down, runs)) step = down;
  // A step won and the next lost: once between the best and its better neighbour.
  if (step < 0 && at != own) {
    auto meanAt = [&](int c) {
      const int s = c == own ? pair : findChannelSlot(k, pair, c);
      return s >= 0 && k.arms[s].w > 0 ? std::optional<double>(meanOf(k.arms[s])) : std::nullopt;
    };
    const std::optional<double> above = meanAt(up), below = meanAt(down);
    const int neighbour = above && (!below || *above <= *below) ? up : below ? down : -1;
    const int between = neighbour > 0 ? ranAs((at + neighbour) / 2) : -1;  // trimmed: the count it ran as
    if (between > 0 && between != at && between != neighbour && !done(k, pair, between, runs)) step = between;
  }
  return step < 0 ? -1 : channelSlot(k, pair, step, true);
}

bool ChannelSearch::roundDone(const KeyState& k, int slot) const {
  // A step's round is minSamples of this job's: the gains channels give where they matter (2x and
  // more) show within it; one that shows none has tied, and a tie ends the search cheaply.
  return isChannelSlot(slot) && k.arms[slot].n - k.arms[slot].seededN >= static_cast<uint64_t>(config_.minSamples);
}

double ChannelSearch::untriedRatio(const KeyState& k, int slot) const {
  const int runs = k.incumbent;
  const int pair = k.pairOf(slot);
  const int at = runs >= 0 && isChannelSlot(runs) ? k.channelsOf(runs) : (pair >= 0 ? k.ncclChannels[pair] : 0);
  const int asked = k.channelsOf(slot);
  // Bandwidth-bound, half the channels take up to twice the time; latency-bound, about the same.
  const double fewer = at > 0 && asked > 0 ? std::clamp(static_cast<double>(at) / asked, 1.0, config_.maxModelledRatio) : 1.0;
  return fewer * config_.modelErrorFactor;
}

}  // namespace dynamiccl::learner
