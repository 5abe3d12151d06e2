// Per-job knobs (NCCL_NTHREADS, NCCL_BUFFSIZE) recommended separately from the per-collective
// rules: one value holds for the whole job, so they are judged on all tuned sizes together.
#pragma once

#include <string>
#include <vector>

#include "offline/tune/measurement_backend.h"
#include "offline/tune/smoothing.h"
#include "offline/tune/tuner.h"

namespace dynamiccl::tune {

struct JobKnobAdvice {
  JobKnobs knobs;                    // 0 = leave NCCL's default
  std::vector<std::string> reasons;  // one line per decision, for the report
};

// NCCL_BUFFSIZE: large enough for the largest tuned chunk (NCCL clamps chunks to buffsize / 8 steps).
// NCCL_NTHREADS: where the backend can set it, the largest tuned size per collective is re-measured
// with 256 and 512 threads; a value is recommended only if it wins beyond noise everywhere.
JobKnobAdvice recommendJobKnobs(MeasurementBackend& backend, const TuneResult& result,
                                const std::vector<TunedInterval>& intervals, const SmoothingOptions& o,
                                int iterations);

// Lines for a job script: export NCCL_TUNER_PLUGIN=..., DYNAMICCL_PROFILE=..., knobs.
std::string envScript(const JobKnobs& knobs, const std::string& profilePath, const std::string& pluginName);

}  // namespace dynamiccl::tune
