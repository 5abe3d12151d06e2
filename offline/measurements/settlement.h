// The settlement of measured data: rows grouped into points (a communicator shape, a collective, a
// size) with every repeat of each arm, the noise the repeats show, and what NCCL's default rows ran,
// settled from the rows themselves where they can tell (DefaultSettledBy). Every judge of measured data
// (tune, train, the job replay, replay, the demo) reads the points this settles.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "policy/policy.h"

namespace dynamiccl::measurements {

struct Measurement;
// One configuration NCCL can run (the policy's own type): algo/proto, channels and chunk.
using Config = policy::Decision;

// The platform whose NCCL model stands in where no platform describes a dataset's system: it reads
// half-forced rows, marks what NCCL's table would never run and orders the table; no fact of it is
// the machine's (a shape read with it carries its name in Shape::standIn).
inline constexpr const char* kStandInPlatform = "dgx-h100";

// One communicator shape of a dataset: its topology and NCCL's model for it.
struct Shape {
  std::string system;
  int nRanks = 0, nNodes = 0;
  model::Topology topology;
  std::shared_ptr<const model::NcclReference> nccl;
  std::string standIn;  // kStandInPlatform where no platform describes `system`; empty: its own platform
};

// How a point's NCCL choice was settled. Only measurements overrule the model: a TUNING line the
// rows quote, or forced runs of the model's pick that differ from the default rows beyond noise.
enum class DefaultSettledBy {
  Model,      // the model's pick; no forced run of it to check it against
  Stated,     // the default rows quote NCCL's TUNING line
  Confirmed,  // the model's pick, whose forced runs the runs cannot tell from the default rows
  Matched,    // refuted; the forced configuration closest to the default rows among those the runs cannot tell from them
  Unforced,   // refuted; none matches: the cheapest configuration NCCL's table allows that no row forced
  Refuted,    // refuted, but every allowed configuration was forced and none matches: the pick stays
};
std::string_view defaultSettledByName(DefaultSettledBy c);
// Forcing the settled configuration runs what the default rows ran (stated, confirmed, matched).
bool forcedTwinIsDefault(DefaultSettledBy c);
// The runs refuted the model's pick and the configuration was inferred from them (matched, unforced).
bool inferredFromRuns(DefaultSettledBy c);

struct ReplayPoint {
  std::string group;  // calibration group (system, plus variant)
  const Shape* shape = nullptr;
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  Config ncclDefault;  // what the default rows ran, as settled (defaultSettledBy)
  DefaultSettledBy defaultSettledBy = DefaultSettledBy::Model;
  double default_us = -1;                      // median of the rows where NCCL chose; -1 none
  // The channel count every default row reports NCCL ran (Measurement::reportedChannels); 0: unsaid or
  // differing. Where the rows force counts, forcing the settled pair at this count is the default again.
  int defaultChannels = 0;
  // Median of forced rows, by resolved configuration: (algo, proto) as NCCL's model resolves what
  // the row forced, with the channel count and chunk the row forced (0: NCCL's own). Each channel
  // count is a configuration of its own, never a repeat of another.
  std::map<Config, double> forced_us;
  // Every repeat, and its fitted noise (sd of log time: the arm's spread shrunk toward the spread at
  // this and the neighbouring sizes, fittedSigma): what the replayed job draws from.
  std::vector<double> default_samples_us;
  std::map<Config, std::vector<double>> forced_samples_us;
  double default_sigma = 0;
  std::map<Config, double> forced_sigma;
  double best_us() const;
  // Whether forcing `arm` ran what the default rows ran (the settled configuration, where forcing it is
  // the same arm): its runs are more runs of NCCL's default, not an alternative.
  bool isDefaultsTwin(const Config& arm) const;
  // Whether a forced row here states the channel count it forced (then a configuration is judged at
  // its own count; elsewhere every configuration runs at NCCL's own, "channels: not stated").
  bool statesChannels() const;
  // What a decision is judged as here: its channel count (and chunk) where the point's rows force
  // counts (chunks), else NCCL's own, since rows that state none cannot tell counts apart.
  Config judgedAs(const Config& decision) const;
  // Whether a decision judged here runs NCCL's default configuration (the settled one, at NCCL's own count).
  bool isDefaultConfig(const Config& decision) const;
  // NCCL's cost table here: the model's, with ncclDefault ranked first where the settled choice is
  // not the model's pick (what a tuner sees must lead to what the default rows ran).
  model::CostTable costTable() const;
};

// The count a host runs for `want` channels where only `counts` were measured (forced): the nearest by
// ratio (the lower on a tie); `want` itself where none was. Every judge of a channel sweep maps so.
int nearestMeasuredCount(const std::vector<int>& counts, int want);

// The spread a configuration's repeats show, shrunk toward `pooled` with the weight of
// kNoisePriorRuns repeats (a handful of runs says little about their own spread).
inline constexpr double kNoisePriorRuns = 3;
double fittedSigma(const std::vector<double>& samples_us, double pooled);

// A forced arm whose median is further from the default rows' than this many standard deviations of
// the gap between two single runs of one configuration, at the dataset's spread between repeats
// (ReplayData::repeatSigma), did not run what they ran, whatever a point's few, noisy neighbours allow:
// the gap two runs of one configuration cross with a chance of 1% in all the dataset's `comparisons`
// (forced runs of a pick checked against default rows), never under 4 (repeats' tails are heavier
// than a normal's): 4.0 up to 160 comparisons, 4.4 at 1,000.
double refutingGapSds(int comparisons);

struct ReplayData {
  std::vector<std::unique_ptr<Shape>> shapes;
  std::vector<ReplayPoint> points;
  std::map<std::string, int> skipped;
  std::vector<std::string> notes;  // one line per system read with the stand-in platform
  // Spread of log time between repeats of one configuration at one point, pooled over every point;
  // repeatGroups configurations had two repeats or more (0.03 where none had).
  double repeatSigma = 0.03;
  int repeatGroups = 0;
};
// Groups rows into points; `system` (substring) keeps only matching systems when not empty;
// `platform` (a platform name), when not empty, is the hardware of every row. Measured data needs no
// platform file: a system no platform describes is read with kStandInPlatform's model (said in
// `notes`). Rows left out are counted in `skipped` by reason.
Expected<ReplayData> buildReplayData(const std::vector<Measurement>& rows, const std::string& system = "",
                                     const std::string& platform = "");
// "skipped <n> rows: <reason>" per reason, most rows first: what a command prints so that no row
// is dropped silently.
std::vector<std::string> describeSkipped(const std::map<std::string, int>& skipped);

}  // namespace dynamiccl::measurements
