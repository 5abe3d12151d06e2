// lab/crossval: cross-validation on measured data (`dynamiccl-lab crossval`): what a profile tuned from measurements does at sizes (and
// communicator shapes) it never saw. Per point, chosen/default and chosen/best, judged on the
// held-out point's own measurements.
#pragma once

#include <string>
#include <vector>

#include "features/features.h"
#include "offline/tune/tune.h"

namespace dynamiccl::tune {

struct CrossvalOptions {
  std::string csvPath, system, platform;  // as for the replay backend
  SmoothingOptions rule;
  bool leaveOneShapeOut = true;
};

struct CrossvalPoint {
  std::string mode;       // "in-sample", "leave-one-size-out", "leave-one-shape-out"
  std::string trainedOn;  // the shape whose measurements made the profile, "8r/1n"
  std::string shape;      // the shape judged
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  Config chosen;          // keepDefault(): no rule applied
  bool judged = false;    // the chosen configuration was measured at this point
  double chosen_us = 0, default_us = 0, best_us = 0;  // medians of the repeats
  int chosenRuns = 0, defaultRuns = 0;                 // the real runs behind chosen_us and default_us
  std::string bestArm;
  double vsDefault = 1, vsBest = 1;
  double ratioSe = 0;     // standard error of log(chosen/default) here (0 when the default stays)
  bool slowerBeyondNoise = false;  // vsDefault above the rule's confidence bound of no change
};

struct CrossvalModeSummary {
  std::string mode;
  int points = 0, judged = 0, rules = 0, slowerBeyondNoise = 0;
  double geomeanVsDefault = 1, worstVsDefault = 1, geomeanVsBest = 1, worstVsBest = 1;
};

struct CrossvalResult {
  std::vector<CrossvalPoint> points;
  std::vector<CrossvalModeSummary> summary;
  std::vector<std::string> notes;  // shapes skipped, rows dropped
};

Expected<CrossvalResult> crossValidate(const CrossvalOptions& options);
std::string crossvalCsv(const CrossvalResult& result);

}  // namespace dynamiccl::tune
