// The decision rule (policy/decision_rule.h, shared with in-job verification) on a dataset: a
// configuration replaces NCCL's default at a size only when the one-sided upper confidence bound on
// its time ratio to the default is below 1 - minGain. The unit of evidence is a run; noise comes from
// repeats (docs/TUNING.md says how it is pooled across neighbouring sizes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "offline/tune/key_search.h"

namespace dynamiccl::tune {

struct DecisionRule : policy::DecisionRule {
  int poolNeighbours = 2;    // sizes either side that may pool noise and (when consistent) evidence
  double power = 0.8;        // for the repeats that would decide an undecided point
};

// What the decision rule finds for a candidate at one size on a dataset's runs.
enum class Finding {
  Faster,        // bound below 1 - minGain: a rule may replace the default here
  NotFaster,     // the estimate itself is no gain of minGain: more repeats would not make it one
  Undecided,     // the estimate is a gain, the bound is not: repeatsToDecide more would decide
  NoiseUnknown,  // no repeats at this or neighbouring sizes: noise cannot be estimated
};
std::string_view findingName(Finding v);

// Evidence for one candidate against NCCL's default at one size: what a rule's evidence carries.
struct PointEvidence {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  Config config;
  std::string arm;              // the dataset arm it was measured as, if any
  int samples = 0, defaultSamples = 0;
  double ratio = 1;             // chosen/default at this size (geometric means of the repeats)
  double ratioSe = 0;           // standard error of log(ratio) at this size
  double noise = 0;             // per-sample relative noise used for the candidate (log sd)
  double defaultNoise = 0;      // the same for the default
  std::string noiseSource;      // "repeats", "repeats at neighbouring sizes", "runs the rows state", "repeats of other configurations", "none"
  int pooledSizes = 1;          // sizes whose evidence the bound uses (1: this size alone)
  double pooledRatio = 1;       // chosen/default over those sizes
  double ratioLower = 1, ratioUpper = 1;  // the two one-sided bounds at the rule's confidence
  double winProbability = 0.5;  // P(chosen faster than the default)
  bool faster = false;          // policy::judge's answer on the pooled evidence
  double aloneUpper = 1;        // the upper bound on this size's evidence alone (its noise still pooled)
  bool aloneFaster = false;     // policy::judge's answer on this size's evidence alone
  Finding finding = Finding::NoiseUnknown;
  int repeatsToDecide = 0;      // Undecided/NoiseUnknown: repeats of each arm at this size that would decide
  bool chosen = false;          // the smoothed profile applies this configuration here
  double gain() const { return 1.0 / ratio - 1.0; }
};

// The gain over NCCL's default the decision rule saw, with its interval: each end the one-sided bound
// at the rule's confidence that decided the finding (Faster: low above minGain), to 0.01%. The one
// interval the tables print, a rule's evidence stores (gain, gain_ci) and the plugin reads.
struct GainInterval {
  double gain = 0, low = 0, high = 0;
};
GainInterval gainInterval(const PointEvidence& e);
// A rule's over the sizes it covers (each chosen, so Faster): the mean log gain, the widest bounds.
GainInterval gainInterval(const std::vector<PointEvidence>& sizes);

// Evidence for keys[i].evaluated[e] (e > 0) against keys[i].keep(). keys: one collective, ascending
// bytes; a neighbour's samples count for the same configuration and arm.
PointEvidence assessCandidate(const std::vector<KeyResult>& keys, int i, int e, const DecisionRule& rule);

// The most promising candidate at each key (the lowest upper bound); nullopt-like: config keepDefault()
// and finding NotFaster when a key has no candidate.
std::vector<PointEvidence> bestCandidates(const std::vector<KeyResult>& keys, const DecisionRule& rule);

// One line per point: "allreduce 4K  ring/ll (NCCL_ALGO=RING)  0.956 [.., 0.978] n=1/3 pooled 3  faster".
std::string describe(const PointEvidence& e);
// CSV with a header: one row per point (the columns of PointEvidence).
std::string evidenceCsv(const std::vector<PointEvidence>& points);

}  // namespace dynamiccl::tune
