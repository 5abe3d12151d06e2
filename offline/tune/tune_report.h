// The file `dynamiccl tune` writes and `export`/`env` read: the profile, the job knobs, and per
// size what was measured (the decision map's source).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "policy/policy.h"
#include "offline/tune/config.h"
#include "offline/tune/job_knobs.h"
#include "offline/tune/smoothing.h"
#include "offline/tune/tuner.h"

namespace dynamiccl::tune {

struct KeySummary {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  std::string bestLabel, chosenLabel;  // search winner; what the smoothed profile runs
  Config chosen;
  double default_us = 0, best_us = 0, chosen_us = 0;
  int64_t spentIterations = 0;
};

struct TuneReport {
  std::string backend;
  int nRanks = 0, nNodes = 0;
  int64_t spentIterations = 0, gridIterations = 0;
  policy::Profile profile;
  JobKnobAdvice jobKnobs;
  std::vector<KeySummary> keys;
};

TuneReport makeReport(const TuneResult& result, const std::vector<TunedInterval>& intervals,
                      const std::vector<std::vector<Config>>& chosenPerCollective, const std::string& name,
                      JobKnobAdvice knobs);
std::string reportToJson(const TuneReport& report);
// Accepts a tune report or a plain profile JSON (then only the profile is filled).
Expected<TuneReport> parseReportJson(std::string_view text);
Expected<TuneReport> loadReportFile(const std::string& path);

}  // namespace dynamiccl::tune
