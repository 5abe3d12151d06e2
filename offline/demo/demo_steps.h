// `dynamiccl demo`, the main job: simulate -> tune -> train -> export -> replay through the real
// plugin -> plots. Each step lives in its own demo_*.cpp; this header is what they share.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "policy/policy.h"
#include "offline/sim/sim.h"

namespace dynamiccl::cli::demo {

struct DemoOptions {
  std::string preset = "h800";
  int nodes = 4;
  std::string data;    // normalized.csv: tune and replay on real measurements instead of the simulator
  std::string db;      // SQLite store: also train from it
  std::string out = "demo-out";
  std::string plugin;  // plugin library (default: the build tree's)
  uint64_t seed = 1;
  bool quick = false;  // smaller budgets (the ctest)
  bool noPlots = false;
};

// The cluster the demo runs on: topology, simulator parameters and NCCL's view of it.
struct DemoCluster {
  model::Topology topology;
  sim::SimParams params;
  std::string paramsSource;  // where params came from, for the printout
  std::shared_ptr<const sim::NcclReference> nccl;
};
Expected<DemoCluster> makeCluster(const DemoOptions& o);

// Prints "[i/6] title" and, on done(), the status line with the step's wall time.
class StepTimer {
 public:
  StepTimer(int index, const std::string& title);
  void done(const std::string& status);
  double elapsed_s() const;

 private:
  int index_;
  std::chrono::steady_clock::time_point start_;
};

// Step 2 (tune) result.
struct TunedProfile {
  policy::Profile profile;
  std::string reportJson;  // tune report (input of `dynamiccl export` / `env`)
  std::vector<Collective> collectives;
  std::vector<uint64_t> sizes;
  int64_t spentIterations = 0, gridIterations = 0;
  int nRanks = 0, nNodes = 0;
  bool simulated = true;  // timed on the simulator; false: measurements replayed (--data)
};
// paramsPath: the simulator parameters JSON (sim backend); ignored with --data.
Expected<TunedProfile> tuneProfile(const DemoOptions& o, const std::string& paramsPath);

// Step 3 (train) result; trained=false with the reason when skipped.
struct LearnedProfile {
  bool trained = false;
  std::string skipped;        // why not trained
  std::string failed;         // a file that could not be written: the demo fails
  std::string profilePath;    // learned.json
  std::vector<std::string> notes;  // held-out figures, rows used
};
LearnedProfile trainProfile(const DemoOptions& o, const std::string& outDir);

// Step 5 (replay): one row per (profile, collective, size).
struct PointResult {
  std::string profile;  // "NCCL default", "tuned", "learned"
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  std::string config;   // what NCCL would run after the plugin decided
  double chosen_us = 0, default_us = 0, best_us = 0;
};
struct CollectiveScore {
  Collective coll = Collective::AllReduce;
  int points = 0;
  double geoVsBest = 0, worstVsBest = 0, geoVsDefault = 0, worstVsDefault = 0;
};
struct ProfileScore {
  std::string label;
  std::vector<CollectiveScore> perCollective;
};
struct ReplayResult {
  std::string judge;  // "noise-free simulator (simulated times)" or "measurements of <csv>"
  std::string trust;  // how the plugin was told to treat the profiles' unverified rules
  std::vector<ProfileScore> scores;
  std::vector<PointResult> points;
  int unjudged = 0;   // data replay: points whose chosen configuration was never measured
};
struct ProfileToReplay {
  std::string label;
  std::string path;  // empty: NCCL alone (no tuner)
};
Expected<ReplayResult> replayOnSimulator(const DemoCluster& cluster, const std::vector<ProfileToReplay>& profiles,
                                         const std::vector<Collective>& collectives,
                                         const std::vector<uint64_t>& sizes, const std::string& pluginPath);
Expected<ReplayResult> replayOnData(const std::string& csvPath, const std::vector<ProfileToReplay>& profiles,
                                    const std::vector<Collective>& collectives, const std::string& pluginPath);

// Steps 4 and 6: the table, the CSVs behind the plots, summary.json, and the plots.
void printScoreTable(const ReplayResult& r, const TunedProfile& tuned);
Status writeReplayCsvs(const ReplayResult& r, int nRanks, const std::string& outDir);
Status writeSummaryJson(const ReplayResult& r, const TunedProfile& tuned, const std::string& path);

std::string shortConfigLabel(const sim::Config& c);  // "ring/ll128 ch=16 chunk=512K"

}  // namespace dynamiccl::cli::demo
