// sim: the calibrated collective simulator, and replay: a tuner judged on settled measurements.
// Public header of dynamiccl_sim.
//
// Evaluate a configuration:   Simulator sim(preset("dgx-h100", 4).value(), params);
//                             sim.time_us(Collective::AllReduce, bytes, Config{Algo::Ring, Proto::LL128, 16, 0});
// NCCL's default and table:   auto ref = model::NcclReference::create(topo);  ref->defaultConfig(coll, bytes);
//                             ref->costTable(coll, bytes);  ref->resolve(config, bytes) fills channels/chunk.
// Calibrated parameters:      loadCalibrationFile(defaultCalibrationDir() + "/<dataset>.json"), paramsForGroup();
//                             a platform's own: calibrationFor(*platforms::registry().value()->find("dgx-h100")).
#pragma once

#include "offline/sim/calibration.h"
#include "offline/sim/fitted_params.h"
#include "offline/sim/environment.h"
#include "offline/measurements/measurements.h"
#include "offline/sim/platform_calibration.h"
#include "offline/sim/profiles_from_sim.h"
#include "offline/sim/replay.h"
#include "offline/sim/simulator.h"
#include "offline/sim/synthetic_dataset.h"
#include "offline/platforms/platforms.h"
