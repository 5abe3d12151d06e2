// Replay: judge a tuner's decisions on settled measurements (offline/measurements). For every
// measured point (collective, ranks, nodes, bytes) the caller's decision function (the real plugin
// through the harness, or a fake in tests) gets NCCL's cost table; the chosen configuration's measured
// time is compared with NCCL's default time and with the best measured time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "offline/measurements/measurements.h"
#include "offline/model/model.h"
#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

// What NCCL would run after the tuner saw the table (algo/proto Default = tuner failed).
using DecisionFn = std::function<Config(const measurements::ReplayPoint&, const model::CostTable&)>;

struct ReplaySummary {
  int points = 0, judged = 0;
  int keptDefault = 0;       // judged points where the decision equals NCCL's default
  // Decisions that set channels where the point's rows force no count ("channels: not stated"): judged
  // at NCCL's own count; and those judged at their own count's rows.
  int channelOverrides = 0;
  int channelsJudged = 0;
  double geomeanVsBest = 0, worstVsBest = 0, geomeanVsDefault = 0, worstVsDefault = 0;
  int vsDefaultPoints = 0;
  std::vector<std::string> unjudged;  // "allreduce 8r/1n 1048576 B: TREE/LL not measured"
  struct Judged {
    const measurements::ReplayPoint* point = nullptr;
    Config choice;          // what NCCL runs after the decision (its channel count as the tuner set it)
    double chosen_us = 0;   // its measured time
  };
  std::vector<Judged> perPoint;  // every judged point, in data order
};
// forcedBy (optional): whether the decision at a point was forced by the tuner (it wrote a zero
// cost); a forced configuration is judged by its own forced measurement where there is one, even
// when NCCL's model says NCCL would have run it anyway (the model can be wrong; the row is not).
ReplaySummary replay(const measurements::ReplayData& data, const DecisionFn& decide, bool progress = false,
                     const std::function<bool(const measurements::ReplayPoint&)>& forcedBy = nullptr);

}  // namespace dynamiccl::sim
