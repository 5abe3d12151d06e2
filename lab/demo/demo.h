// lab/demo: the simulated demo (`dynamiccl-lab demo`): on a simulated cluster, NCCL's defaults
// simulated, a profile tuned and a policy trained, both judged through the real plugin on the
// simulator, the learned profile verified in a simulated job, plots. It composes the product's demo
// steps (offline/demo) with these. The one header others include.
#pragma once

#include <string>
#include <vector>

#include "offline/demo/demo.h"

namespace dynamiccl::cli::demo {

// Step 2 on the simulated cluster (or, with --data, on the dataset replayed): the demo's collectives
// at powers of two from 4 KiB to 1 GiB.
// paramsPath: the simulator parameters JSON (sim backend); ignored with --data.
Expected<TunedProfile> tuneProfile(const DemoOptions& o, const std::string& paramsPath);

void printScoreTable(const JudgedProfiles& r, const TunedProfile& tuned);

Status writeSummaryJson(const JudgedProfiles& r, const TunedProfile& tuned, const std::string& path);

// The learned profile verified in a job on the simulated cluster while the network
// learns in the job (demo_learned_job.cpp); the promoted rules are the profile the job emits.
struct LearnedJobResult {
  std::vector<jobreplay::KeyOutcome> keys;
  int processes = 0, nRanks = 0;
  double exploreShare = 0;
  std::string verifiedPath;  // learned-verified.json
  size_t promoted = 0;
  int dropped = 0;
  double geoVsDefault = 1, worstVsDefault = 0, worstVsBest = 0;
  int offBestKeys = 0;              // keys where NCCL's default is >= 5% off the best
  double geoVsDefaultWhereOff = 1;  // geomean vs NCCL's default over those keys
};
Expected<LearnedJobResult> verifyLearnedInSimulatedJob(const DemoOptions& o, const DemoCluster& cluster,
                                                       const std::string& learnedPath,
                                                       const std::vector<Collective>& collectives,
                                                       const std::vector<uint64_t>& sizes,
                                                       const std::string& pluginPath);
void printLearnedJob(const LearnedJobResult& r);

// Step 5 on the noise-free simulator: each profile's decisions through the real plugin, timed, with the
// best feasible configuration of the tuner's space beside them.
Expected<JudgedProfiles> judgeOnSimulator(const DemoCluster& cluster, const std::vector<ProfileToJudge>& profiles,
                                          const std::vector<Collective>& collectives,
                                          const std::vector<uint64_t>& sizes, const std::string& pluginPath);

}  // namespace dynamiccl::cli::demo
