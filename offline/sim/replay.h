// Replay: judge a tuner's decisions on real measurements. For every measured point (collective,
// ranks, nodes, bytes) the caller's decision function (the real plugin through the harness, or a
// fake in tests) gets NCCL's cost table; the chosen configuration's measured time is compared
// with NCCL's default time and with the best measured time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "offline/measurements/measurements.h"
#include "offline/sim/nccl_reference.h"
#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

// One communicator shape of a dataset: its topology and NCCL's model for it.
struct Shape {
  std::string system;
  int nRanks = 0, nNodes = 0;
  model::Topology topology;
  std::shared_ptr<const NcclReference> nccl;
};

struct ReplayPoint {
  std::string group;  // calibration group (system, plus variant)
  const Shape* shape = nullptr;
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  Config ncclDefault;                          // NCCL's choice per the model
  double default_us = -1;                      // median of the rows where NCCL chose; -1 none
  std::map<std::pair<Algo, Proto>, double> forced_us;  // median of forced rows, by resolved config
  double best_us() const;
};

struct ReplayData {
  std::vector<std::unique_ptr<Shape>> shapes;
  std::vector<ReplayPoint> points;
  std::map<std::string, int> skipped;
};
// Groups rows into points; `system` (substring) keeps only matching systems when not empty;
// `platform` (a platform name), when not empty, is the hardware of every row. Rows left out are
// counted in `skipped` by reason; a system no platform matches is named in its reason.
Expected<ReplayData> buildReplayData(const std::vector<Measurement>& rows, const std::string& system = "",
                                     const std::string& platform = "");
// "skipped <n> rows: <reason>" per reason, most rows first: what a command prints so that no row
// is dropped silently.
std::vector<std::string> describeSkipped(const std::map<std::string, int>& skipped);

// What NCCL would run after the tuner saw the table (algo/proto Default = tuner failed).
using DecisionFn = std::function<Config(const ReplayPoint&, const model::CostTable&)>;

struct ReplaySummary {
  int points = 0, judged = 0;
  int keptDefault = 0;       // judged points where the decision equals NCCL's default
  int channelOverrides = 0;  // decisions that set channels (not judged: no data sweeps channels)
  double geomeanVsBest = 0, worstVsBest = 0, geomeanVsDefault = 0, worstVsDefault = 0;
  int vsDefaultPoints = 0;
  std::vector<std::string> unjudged;  // "allreduce 8r/1n 1048576 B: TREE/LL not measured"
  struct Judged {
    const ReplayPoint* point = nullptr;
    Config choice;          // what NCCL runs after the decision
    double chosen_us = 0;   // its measured time
  };
  std::vector<Judged> perPoint;  // every judged point, in data order
};
// forcedBy (optional): whether the decision at a point was forced by the tuner (it wrote a zero
// cost); a forced configuration is judged by its own forced measurement where there is one, even
// when NCCL's model says NCCL would have run it anyway (the model can be wrong; the row is not).
ReplaySummary replay(const ReplayData& data, const DecisionFn& decide, bool progress = false,
                     const std::function<bool(const ReplayPoint&)>& forcedBy = nullptr);

}  // namespace dynamiccl::sim
