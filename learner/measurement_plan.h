// How much the leader measures, priced: profiling a call costs a share of its time (MeasurementCost),
// so the share of calls profiled is what the exploration budget affords for the keys still searched, at most
// the settled share once it ends, and none when what the job gained does not repay even that.
#pragma once

#include <cstdint>
#include <vector>

namespace dynamiccl::learner {

// One key as the leader's learner sees it at a table build.
struct KeyMeasurement {
  double time_us = 0;      // the key's collective time so far in the job (its weight)
  double costShare = 0;    // what profiling one of its calls costs, share of the call's time
  bool searching = false;  // an arm is still to be decided here (not a drift re-test)
  double gainShare = 0;    // time what runs saves against NCCL's default, share of the key's time (>= 0)
  double trialShare = 0;   // searching: the share of the key's calls its trials take
  double calls = 0;        // its calls so far in the job (what the reported share is over)
  bool beside = true;      // searching: what runs still needs samples beside each trial's
  double exploreShare = 0; // what this job's slower trials cost against NCCL's default, share of the key's time
};

struct MeasurementPlan {
  double rate = 1;         // share of calls profiled (and the only calls that explore), over every key
  double defaultRate = 1;  // a settled key's share (and a key's the table does not name)
  std::vector<double> keyRates;  // per key given, its share
  double costShare = 0;    // expected measurement cost at that rate, share of collective time
  double gainShare = 0;    // measured gain of what runs over NCCL's default, share of collective time
  double exploreShare = 0; // what slower trials cost against NCCL's default, measured, share of collective time
  double time_us = 0;      // the collective time of the calls so far (measured, else NCCL's estimate)
  bool searching = false;
  bool stopped = false;    // settled and the gain does not repay measuring: nothing is profiled
  int keys = 0, searchingKeys = 0;  // keys with calls, and those still searching
};

// budget: DYNAMICCL_BUDGET explore=, shared by trials and measurement (a searching key's measurement
// takes at most half of it, of its own time, and never less than the settled share);
// settledShare: DYNAMICCL_BUDGET measure=. Each key is measured at its own rate: a key still searching
// what its trials need (twice their share, so what runs gets about as many samples beside each trial,
// until it carries enough of them: then their share), a settled one the settled share, none once every
// key settled and the gain does not repay re-tests.
// No key yet: initialRate.
MeasurementPlan planMeasurement(const std::vector<KeyMeasurement>& keys, double budget, double settledShare, double initialRate);

// The share of calls a leader profiles before it has measured anything: what half the budget affords
// at the dearest size's price.
double initialMeasureRate(double budget, double maxCostShare);

// Whether searching a key can repay its measurement within the job. The job is assumed to run the
// key at least as many more times as it has (callsSoFar); deciding one arm takes about 2 x minSamples
// profiled calls (the arm's and the incumbent's) at costShare of a call's time each, which the
// plausible gain (share of the key's time) over the calls still to come must repay. What trials cost
// is the exploration budget's to bound.
bool searchRepays(double callsSoFar, double costShare, int minSamples, double plausibleGain);

// A share in [0, 1] as a threshold on a draw's low 32 bits (1: every call).
uint32_t rateThreshold(double rate);

}  // namespace dynamiccl::learner
