// The channel search: once a key's (algorithm, protocol) has settled, the channel count of what runs,
// from the count NCCL ran for that pair, in steps of two down and (where the host lets a tuner raise
// it) up while a step wins beyond noise, then once between the two best. One count at a time is the
// key's candidate, so the verifier promotes or drops it as it does any arm. Internal to learner.
#pragma once

#include <optional>

#include "learner/verifier.h"

namespace dynamiccl::learner {

class ChannelSearch {
 public:
  ChannelSearch(const OnlineConfig& config, const ArmStatistics& stats, const Verifier& verifier)
      : config_(config), stats_(stats), verifier_(verifier) {}

  // A count NCCL ran at any key of the communicator: what it built, at least (the most a raise may ask).
  void noteRan(int nChannels) { mostRan_ = nChannels > mostRan_ ? nChannels : mostRan_; }
  // The next channel arm to try against `runs` (taking a slot for it); -1 when the search has ended,
  // NCCL's count for the pair is unknown, or the decision that runs names its own count.
  int next(KeyState& k, int runs, const Decision& running) const;
  // A channel step measured its round (minSamples) without winning: it has its answer.
  bool roundDone(const KeyState& k, int slot) const;
  // Expected time of an untried channel arm relative to what runs (fewer channels may be slower in proportion).
  double untriedRatio(const KeyState& k, int slot) const;

 private:
  // A count whose answer is in: decided against what runs, settled, measured a round's samples,
  // trimmed by the host, or outside what it runs.
  bool done(const KeyState& k, int pair, int nChannels, int runs) const;
  int mostAllowed(int ncclCount) const;  // the highest count a step may ask for
  // The next step of `pair`'s ladder, whose steps are judged against `runs`; -1 when it has ended.
  int ladderStep(KeyState& k, int pair, int runs) const;
  // The pair's arm measured fastest beyond noise (the pair at NCCL's count where none is).
  int bestOf(const KeyState& k, int pair) const;

  const OnlineConfig& config_;
  const ArmStatistics& stats_;
  const Verifier& verifier_;
  int mostRan_ = 0;
};

}  // namespace dynamiccl::learner
