// The learner's configuration: what the plugin's settings give it, and the constants of its rule.
#pragma once

#include <array>
#include <cstdint>
#include <cmath>

#include "features/features.h"
#include "policy/policy.h"

namespace dynamiccl::learner {
using namespace dynamiccl::policy;  // the rule table's vocabulary: Decision, Candidates, DecisionTable

// What the learner does at a key. The plugin decides it once, from its settings and the profile.
enum class LearnerMode : uint8_t {
  Learn,   // online learning: every allowed arm is explored, the best measured one runs
  // In-job verification: the only arms are the static answer (a verified rule or NCCL's default),
  // NCCL's default and the key's candidate; keys without a candidate are left to the static table.
  Verify,
  // Verification that goes on: once a key's candidate is decided (or where it has none), every other
  // configuration NCCL's cost table allows is tried in turn, cheapest first by NCCL's own cost (the
  // prior), each until decided: ahead or behind beyond noise, far behind after a sample or two, or
  // measured proposalSamples times.
  Search,
  // Search where the learned arm model ranks what to measure; NCCL's runner-up where it proposes none.
  RankedSearch,
};

struct OnlineConfig {
  uint64_t epochCalls = 1000;      // DYNAMICCL_EPOCH_CALLS: calls per table version
  double exploreTimeShare = 0.01;  // DYNAMICCL_BUDGET explore=: expected extra time from exploring
  double exploreCallShare = 0.25;  // at most this share of a key's calls explore (the time budget bounds what they cost)
  double raceCallShare = 0.2;      // an undecided arm measured ahead of the incumbent: this share of calls
  double retestEvery = 1000;       // a clearly worse arm is re-measured about once per this many calls
  int minSamples = 6;              // before an arm's mean is trusted
  double halfLifeCalls = 1000;     // a key's old measurements count half after this many of its calls
  double noiseFloor = 0.02;        // log-latency sigma assumed at least (run-to-run noise)
  DecisionRule rule;               // ahead, behind or no gain beyond noise: the rule `tune` applies too
  // Prior for arms not yet measured: NCCL's modelled time relative to the incumbent's, times this
  // allowance for the model's error; without a model, an unknown arm is assumed this much slower.
  double modelErrorFactor = 1.5;
  double unknownRatio = 2.0;
  double maxModelledRatio = 2.0;   // untried arms the model puts beyond this x the incumbent: not explored
  LearnerMode mode = LearnerMode::Learn;  // set once, where the plugin decides it
  // Searching: arms NCCL prices beyond maxTrialRatio x its choice are tried last, after every arm
  // within it is decided (a slow one is dropped after a sample or two).
  double maxTrialRatio = 3.0;
  double seedWeightCap = 30;       // a previous job's samples count as at most this many calls
  // Recent timings: log(observed / this arm's usual latency), the usual one a slow average (this
  // half-life, in calls of the key) so a congestion episode shows and its end shows too.
  double usualHalfLifeCalls = 20000;
  bool learnedRulesApply = false;  // DYNAMICCL_TRUST=all: refreshed learned rules are the prior, else candidates
  // The arm model proposes an arm for measurement where it believes, optimistically by this many
  // standard deviations, that the arm beats what runs by at least minProposedGain.
  double proposalSigmas = 1.0;
  double minProposedGain = 0.01;
  int proposalSamples = 30;        // a proposal neither promoted nor lost by then gives way to the next
  // Every search ends: an arm measured this many times (this job's and a previous job's samples), or
  // offered twice as many trials (minSamples where none was ever timed), whose gain is not established is settled as
  // undecided (its evidence kept for the next job) and only re-tested for drift. At the replay's 2-3%
  // spread, 20 samples a side establish gains of about 2%: a 20,000-call job of 25 keys settles in its
  // first half at a few % of calls profiled; a smaller gain is left to re-tests and the next job.
  int settleSamples = 16;
  // Measuring costs the job (learner/measurement_plan.h): what profiling a call costs per size bucket
  // (share of its time), the share of calls still measured once the search settles
  // (DYNAMICCL_BUDGET measure=), and the gain a search may plausibly find (share of a key's time), which
  // must repay its measurement within the job for the key to be searched at all.
  std::array<double, SizeBucket::kCount> measureCostShare{};
  double settledMeasureShare = 1.0;
  double plausibleGain = 0.1;
  // The host's channel rule (the plugin's, from the release): whether a tuner's count only lowers NCCL's
  // own (NCCL 2.31+), so the channel search never asks above it; else a raise is asked for up to the
  // channels the host built: maxChannels where the plugin knows them, else the most seen run in the
  // communicator. Searching (LearnerMode::Search, RankedSearch), a settled key searches its channel count.
  bool channelsCapOnly = true;
  int maxChannels = 0;
  bool searchChannels = true;  // the plugin's DYNAMICCL_SEARCH_CHANNELS (off there by default)
};

}  // namespace dynamiccl::learner
