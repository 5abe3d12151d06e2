// The simulated demo, after the replay: the learned profile as the main job emits it. Its rules are
// unverified, so a job on the simulated cluster (the simulator standing in for the measurements)
// verifies them while the network learns in the job (a Bayesian last layer proposing what to
// measure); what the job promoted is the profile it emits. Every figure here is simulated.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "lab/demo/demo.h"
#include "offline/jobreplay/jobreplay.h"

namespace dynamiccl::cli::demo {
namespace {

namespace fs = std::filesystem;

// Ranks run as processes: the leader and a few followers (a 32-rank cluster on a 2-core machine).
constexpr int kProcesses = 4;
// "NCCL is off the best" where its default measures at least this much slower than the best.
constexpr double kOffBest = 1.05;

}  // namespace

Expected<LearnedJobResult> verifyLearnedInSimulatedJob(const DemoOptions& o, const DemoCluster& cluster,
                                                       const std::string& learnedPath,
                                                       const std::vector<Collective>& collectives,
                                                       const std::vector<uint64_t>& sizes,
                                                       const std::string& pluginPath) {
  auto job = jobreplay::simulatedJob(cluster.topology, cluster.params, *cluster.nccl, collectives, sizes, 8, o.seed);
  if (!job) return makeError(job.error());
  const fs::path workDir = fs::path(o.out) / "learned-job";
  const std::string storePath = (workDir / "store.db").string();
  std::error_code ec;
  fs::create_directories(workDir, ec);
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(storePath + suffix, ec);
  jobreplay::JobOptions jo;
  jo.pluginPath = pluginPath;
  jo.iterations = o.iterations ? o.iterations : o.quick ? 1000 : 3000;
  jo.seed = o.seed;
  jo.env = verificationEnv(learnedPath, storePath);
  jo.workDir = workDir.string();
  jo.timeout_s = o.quick ? 120 : 400;
  jo.processes = kProcesses;
  auto jr = jobreplay::replayJob(*job, jo);
  if (!jr) return makeError("job: " + jr.error());
  for (const jobreplay::RankOutcome& r : jr->ranks)
    if (!r.finished) return makeError("rank " + std::to_string(r.rank) + " failed: " + r.failure);
  if (!jr->ranksAgree) return makeError("ranks decided differently: the plugin broke its first invariant");
  auto verified = exportVerified(storePath, (fs::path(o.out) / "learned-verified.json").string());
  if (!verified) return makeError("export: " + verified.error());

  LearnedJobResult r;
  r.keys = jr->keys;
  r.processes = static_cast<int>(jr->ranks.size());
  r.nRanks = job->nRanks;
  r.exploreShare = jr->ranks.front().exploreShare();
  r.verifiedPath = verified->path;
  r.promoted = verified->rules;
  for (const JobVerdict& v : verified->verdicts) r.dropped += v.state == "dropped";
  double logAll = 0, logOff = 0;
  for (const jobreplay::KeyOutcome& k : r.keys) {
    logAll += std::log(k.vsDefault());
    r.worstVsDefault = std::max(r.worstVsDefault, k.vsDefault());
    r.worstVsBest = std::max(r.worstVsBest, k.vsBest());
    if (k.default_us >= kOffBest * k.best_us) {
      logOff += std::log(k.vsDefault());
      ++r.offBestKeys;
    }
  }
  r.geoVsDefault = r.keys.empty() ? 1 : std::exp(logAll / static_cast<double>(r.keys.size()));
  r.geoVsDefaultWhereOff = r.offBestKeys ? std::exp(logOff / r.offBestKeys) : 1;
  return r;
}

void printLearnedJob(const LearnedJobResult& r) {
  std::printf("      %-14s %10s  %-12s %-12s %-12s %9s %9s\n", "collective", "bytes", "NCCL", "job ended", "best",
              "vs NCCL", "vs best");
  for (const jobreplay::KeyOutcome& k : r.keys)
    std::printf("      %-14s %10llu  %-12s %-12s %-12s %8.3fx %8.3fx\n", std::string(collectiveName(k.coll)).c_str(),
                static_cast<unsigned long long>(k.bytes), armLabel(k.ncclDefault).c_str(),
                armLabel(k.finalConfig).c_str(), armLabel(k.best).c_str(), k.vsDefault(),
                k.vsBest());
  std::printf("      learned, verified in the job (simulated): %zu keys, geomean %.3fx NCCL's default (worst %.3fx); "
              "where NCCL is >= 5%% off the best (%d keys) %.3fx; worst vs best %.3fx; %zu promoted, %d dropped; "
              "exploration %.2f%% of collective time; %d of %d ranks run, decisions identical\n",
              r.keys.size(), r.geoVsDefault, r.worstVsDefault, r.offBestKeys, r.geoVsDefaultWhereOff, r.worstVsBest,
              r.promoted, r.dropped, 100 * r.exploreShare, r.processes, r.nRanks);
}

}  // namespace dynamiccl::cli::demo
