// tune: the offline tuner (issue 5). Measurements (simulator, replayed dataset, nccl-tests on a
// cluster) -> TPE + Hyperband search per (collective, size) -> smoothing + guard -> profile.
// Public header of dynamiccl_tune.
//
//   auto backend = makeSimulatorBackend({"dgx-h100", 1, 42}).value();
//   auto result = tune(*backend, TuneRequest{...}).value();
//   auto intervals = smoothDecisions(result.collectives[0].keys, SmoothingOptions{});
//   policy::Profile profile = toProfile(intervals, "name", result.nRanks, result.nNodes);
#pragma once

#include "tune/config.h"
#include "tune/hyperband.h"
#include "tune/job_knobs.h"
#include "tune/key_search.h"
#include "tune/measurement_backend.h"
#include "tune/profile_export.h"
#include "tune/progress_bar.h"
#include "tune/search_space.h"
#include "tune/smoothing.h"
#include "tune/statistics.h"
#include "tune/tpe.h"
#include "tune/tune_report.h"
#include "tune/tuner.h"
