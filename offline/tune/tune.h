// tune: the offline tuner. Measurements (simulator, replayed dataset, nccl-tests on a
// cluster) -> TPE + Hyperband search per (collective, size) -> smoothing + guard -> profile.
// Public header of dynamiccl_tune.
//
//   auto backend = makeSimulatorBackend({"dgx-h100", 1, 42}).value();
//   auto result = tune(*backend, TuneRequest{...}).value();
//   auto intervals = smoothDecisions(result.collectives[0].keys, SmoothingOptions{});
//   policy::Profile profile = toProfile(intervals, "name", result.nRanks, result.nNodes);
// The whole recipe (backends, every shape, smoothing, job knobs, merge), as the commands run it:
//   auto tuned = tuneShapes(TunePlan{...}).value();  tuned.merged.profile;
#pragma once

#include "offline/tune/config.h"
#include "offline/tune/evidence.h"
#include "offline/tune/hyperband.h"
#include "offline/tune/job_knobs.h"
#include "offline/tune/key_search.h"
#include "offline/tune/logs_to_profile.h"
#include "offline/tune/measurement_backend.h"
#include "offline/tune/profile_export.h"
#include "offline/tune/progress_bar.h"
#include "offline/tune/run_search.h"
#include "offline/tune/search_space.h"
#include "offline/tune/smoothing.h"
#include "offline/tune/statistics.h"
#include "offline/tune/tpe.h"
#include "offline/tune/tune_report.h"
#include "offline/tune/tune_shapes.h"
#include "offline/tune/tuner.h"
