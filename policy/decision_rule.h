// The one decision rule: a configuration replaces the one it is compared with only when the
// one-sided upper confidence bound on its time ratio is below 1 - minGain. `dynamiccl tune` applies
// it to a dataset's independent runs, in-job verification to the job's calls; both call judge().
#pragma once

#include <vector>

namespace dynamiccl::policy {

struct DecisionRule {
  double confidence = 0.95;  // of each one-sided bound on log(candidate / reference)
  double minGain = 0.01;     // a gain smaller than this is no gain
};

// d estimates log(candidate / reference) with standard error se and df degrees of freedom
// (infinity: normal). Bounds are on d at the rule's confidence.
struct Judgement {
  double lower = 0, upper = 0;
  bool faster = false;  // upper < log(1 - minGain): the candidate replaces the reference
  bool noGain = false;  // lower >= log(1 - minGain): no more samples can make it a gain of minGain
  bool slower = false;  // lower > -log(1 - minGain): it loses by more than minGain beyond noise
};
Judgement judge(double d, double se, double df, const DecisionRule& rule);

// Quantiles behind the bounds: Student's t (Cornish-Fisher from 3 degrees of freedom, within 0.5%
// up to p = 0.99; below 3 df rounded down to the exact 1 or 2; infinite df = normal) and
// chi-square (Wilson-Hilferty). Off the hot path: the normal quantile bisects.
double standardNormalCdf(double x);
double normalQuantile(double p);
double studentTQuantile(double p, double df);
double chiSquareQuantile(double p, double df);

// What the rule is applied to: noise in collective timings is multiplicative, so ratios and relative
// noise are estimated on log times.
double meanLog(const std::vector<double>& v);
double logSumSquares(const std::vector<double>& v);  // around meanLog; n - 1 degrees of freedom

}  // namespace dynamiccl::policy
