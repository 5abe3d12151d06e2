// The simulator parameters a calibration fits, with the bounds that keep a fit physical: the names the
// stored form (offline/platforms/calibration/*.json) writes and reads, and what the lab's fit moves.
#pragma once

#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

struct FittedParam {
  const char* name;
  double SimParams::*field;
  double lo, hi;  // bounds keep the fit physical (an efficiency above 1.2 would be a wrong preset)
  // A parameter that shapes another's effect (a threshold, an onset) is only informed where that
  // effect is on: its relevance is tested with `enabler` set to `enablerValue`.
  double SimParams::*enabler = nullptr;
  double enablerValue = 0;
};

inline constexpr FittedParam kFitted[] = {
    {"launch_us", &SimParams::launch_us, 1.0, 120.0},
    {"syncPerLevel_us", &SimParams::syncPerLevel_us, 0.0, 20.0},
    {"baseScale", &SimParams::baseScale, 0.0, 4.0},
    {"intraHopScale", &SimParams::intraHopScale, 0.05, 6.0},
    {"interHopScale", &SimParams::interHopScale, 0.05, 12.0},
    {"intraBwEff", &SimParams::intraBwEff, 0.1, 1.3},
    {"interBwEff", &SimParams::interBwEff, 0.05, 1.3},
    {"llEff", &SimParams::llEff, 0.2, 1.2},
    {"ll128Eff", &SimParams::ll128Eff, 0.2, 1.1},
    {"chanCapScale", &SimParams::chanCapScale, 0.2, 16.0},
    {"stepOverhead_us", &SimParams::stepOverhead_us, 0.0, 10.0},
    {"treeEff", &SimParams::treeEff, 0.2, 1.5},
    {"treeLevelEff", &SimParams::treeLevelEff, 0.7, 1.0},
    {"nvlsGain", &SimParams::nvlsGain, 0.6, 2.5},
    {"rdzvThreshold_KiB", &SimParams::rdzvThreshold_KiB, 0.5, 1024.0, &SimParams::rdzv_us, 5.0},
    {"rdzv_us", &SimParams::rdzv_us, 0.0, 40.0},
    {"netLlEff", &SimParams::netLlEff, 0.005, 1.0},
    {"ringLlNetEff", &SimParams::ringLlNetEff, 0.005, 1.0},
    {"netStepFloor_us", &SimParams::netStepFloor_us, 0.0, 200.0},
    {"farNodes", &SimParams::farNodes, 2.0, 1024.0, &SimParams::farFactor, 2.0},
    {"farFactor", &SimParams::farFactor, 1.0, 4.0},
    {"nvlsLat_us", &SimParams::nvlsLat_us, 0.0, 60.0},
    {"nvlsChanScale", &SimParams::nvlsChanScale, 0.1, 4.0},
    {"satSharpness", &SimParams::satSharpness, 0.7, 12.0},
};
inline constexpr int kNumFitted = sizeof(kFitted) / sizeof(kFitted[0]);

}  // namespace dynamiccl::sim
