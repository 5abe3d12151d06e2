// The parent of a replayed job: forks the ranks, waits for each within its time limit (a rank still
// running then is killed and reported: a job replay never hangs its caller), reads their results.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "offline/files/files.h"
#include "offline/jobreplay/rank.h"
#include "learner/learner.h"

namespace dynamiccl::jobreplay {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// What every rank gets before the caller's env: the measured machine as the plugin's host probe
// sees it (its rules' fingerprint), the profiler role, the epoch, a coordination directory of its own.
Env defaultEnv(const MeasuredJob& job, const JobOptions& o, const std::string& coordDir,
               const std::string& measurementCostPath) {
  TopoOverrides topo = model::topoOverridesOf(job.topology);
  topo.ranksPerNode = job.nRanks / job.nNodes;
  Env env = {
      {kTopoVariable, topoOverridesText(topo)},
      {"NCCL_PROFILER_PLUGIN", o.pluginPath},
      {"DYNAMICCL_EPOCH_CALLS", std::to_string(o.epochCalls)},
      {"DYNAMICCL_COORD_DIR", coordDir},
      // Every rank checks its inputs as a user's job does; with only some ranks run the rest never would.
      {"DYNAMICCL_INPUTS_CHECK", o.processes > 0 && o.processes < job.nRanks ? "0" : "1"},
  };
  if (!measurementCostPath.empty()) env.push_back({"DYNAMICCL_MEASUREMENT_COST", measurementCostPath});
  // Rows measured on RCCL replay under RCCL's rules (its channel totals, its defaults).
  if (measurements::measuredOnRccl(job.system)) env.push_back({"DYNAMICCL_HOST", "rccl"});
  env.insert(env.end(), o.env.begin(), o.env.end());
  return env;
}

bool sameConfigs(const std::vector<sim::Config>& a, const std::vector<sim::Config>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].algo != b[i].algo || a[i].proto != b[i].proto) return false;
  return true;
}

bool sameEpochs(const std::vector<std::vector<sim::Config>>& a, const std::vector<std::vector<sim::Config>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!sameConfigs(a[i], b[i])) return false;
  return true;
}

void say(const JobOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// Waits for every rank until the deadline; kills the rest. status[r] < 0: killed.
std::vector<int> waitForRanks(const std::vector<pid_t>& pids, const JobOptions& o,
                              std::chrono::steady_clock::time_point start) {
  std::vector<int> status(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  const auto deadline = start + std::chrono::duration<double>(o.timeout_s);
  size_t left = pids.size();
  double first_s = -1;  // one line for every rank: a 512-rank job's log is not 512 lines
  while (left > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done[r] = true, --left;
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        const double at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (first_s < 0) first_s = at_s;
        if (left == 0) {
          char buf[128];
          std::snprintf(buf, sizeof buf, "%zu ranks done after %.1f s (the first after %.1f s)", pids.size(), at_s,
                        first_s);
          say(o, buf);
        }
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (done[r]) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        status[r] = -1;
        say(o, "rank " + std::to_string(r) + " still running after the time limit: killed");
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

}  // namespace

Expected<JobResult> replayJob(const MeasuredJob& job, const JobOptions& o) {
  namespace fs = std::filesystem;
  if (job.keys.empty()) return makeError("the job has no keys");
  constexpr int kMostRanks = 512;  // one forked process per rank, on one machine
  if (job.nRanks < 1 || job.nNodes < 1) return makeError("the job's shape is not a communicator");
  if (job.nRanks > kMostRanks)
    return makeError("the data's shape has " + std::to_string(job.nRanks) + " ranks; a replayed job forks one process "
                     "per rank, at most " + std::to_string(kMostRanks) + " (its steps before this one still ran)");
  if (o.epochCalls < 1 || o.iterations < 1) return makeError("iterations and epoch calls must be positive");
  if (void* h = dlopen(o.pluginPath.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(h);
    return makeError(o.pluginPath + " is already loaded in this process: forked ranks would inherit its state");
  }
  std::error_code ec;
  const fs::path dir = o.workDir;
  const fs::path coord = dir / "coord";
  fs::remove_all(coord, ec);  // write-once boundary records of an earlier job must not be adopted
  fs::create_directories(coord, ec);
  if (ec) return makeError("cannot create " + coord.string() + ": " + ec.message());

  const uint64_t keys = job.keys.size();
  JobResult result;
  result.workDir = dir.string();
  result.callsPerRank = (o.iterations * keys + o.epochCalls - 1) / o.epochCalls * o.epochCalls;
  const uint64_t commId = o.commId ? o.commId : 0x10b0000000000000ull ^ o.seed;
  result.commId = commId;
  result.epochCalls = o.epochCalls;
  const std::string pricePath = (dir / "measurement_cost.json").string();
  const learner::MeasurementCost price = o.measurementCost ? *o.measurementCost : defaultMeasurementCost();
  if (Status st = files::writeFile(pricePath, price.toJson()); !st) return makeError(st.error());
  const Env env = defaultEnv(job, o, coord.string(), pricePath);

  const int processes = o.processes > 0 ? std::min(o.processes, job.nRanks) : job.nRanks;
  std::vector<RankPlan> plans;
  for (int r = 0; r < processes; ++r) {
    const std::string stem = (dir / ("rank" + std::to_string(r))).string();
    fs::remove(stem + ".json", ec);
    plans.push_back(RankPlan{&job, &o, r, result.callsPerRank, commId, env, stem + ".json", stem + ".log"});
    if (o.rankEnv)
      for (auto& e : o.rankEnv(r)) plans.back().env.push_back(std::move(e));
  }
  std::fflush(stdout);  // a child must not inherit (and later repeat) buffered output
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (const RankPlan& plan : plans) {
    const pid_t pid = fork();
    if (pid == 0) runRank(plan);
    if (pid < 0) {
      for (pid_t p : pids) kill(p, SIGKILL), waitpid(p, nullptr, 0);
      return makeError(std::string("fork failed: ") + std::strerror(errno));
    }
    pids.push_back(pid);
  }
  say(o, std::to_string(processes) + " ranks started" +
             (processes < job.nRanks ? " (of " + std::to_string(job.nRanks) + ")" : std::string()) + ", " + std::to_string(result.callsPerRank) + " calls each");
  const std::vector<int> status = waitForRanks(pids, o, start);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (int r = 0; r < processes; ++r) {
    RankOutcome out;
    out.rank = r;
    if (status[r] < 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "killed after %.0f s (the time limit)", o.timeout_s);
      out.failure = buf;
    } else if (status[r] != 0) {
      out.failure = rankExitReason(status[r]) + " (log: " + plans[r].logPath + ")";
    } else if (auto read = readRankResult(plans[r].resultPath, r, keys); !read) {
      out.failure = read.error();
    } else {
      out = std::move(read.value());
    }
    result.ranks.push_back(std::move(out));
  }
  result.allFinished = true;
  const RankOutcome* first = nullptr;
  for (const RankOutcome& r : result.ranks) {
    result.allFinished &= r.finished;
    if (r.finished && !first) first = &r;
  }
  result.ranksAgree = result.allFinished;
  for (const RankOutcome& r : result.ranks)
    result.ranksAgree &= r.finished && r.decisionHash == first->decisionHash &&
                         sameConfigs(r.finalConfigs, first->finalConfigs) && sameEpochs(r.epochConfigs, first->epochConfigs);
  if (first) {
    for (size_t k = 0; k < keys; ++k) {
      const JobKey& key = job.keys[k];
      const sim::Config& fc = first->finalConfigs[k];
      const MeasuredConfig* ran = key.find(fc.algo, fc.proto, false, fc.nChannels);  // the arm, at its count
      const MeasuredConfig& ranOrDefault = ran ? *ran : key.byDefault();
      KeyOutcome o{key.coll, key.bytes, key.ncclDefault, ranOrDefault.config, key.best().config,
                   key.byDefault().mean_us, ranOrDefault.mean_us, key.best().mean_us};
      o.vsBestChoosable = ranOrDefault.mean_us / key.bestChoosable().mean_us;
      o.vsBestEstablished = ranOrDefault.draw_us() / key.bestEstablished().draw_us();
      o.defaultSettledBy = key.defaultSettledBy;
      o.job_us = first->keyJob_us[k];
      o.jobDefault_us = first->keyDefault_us[k];
      o.measure_us = k < first->keyMeasure_us.size() ? first->keyMeasure_us[k] : 0;
      o.profiled = k < first->keyProfiled.size() ? first->keyProfiled[k] : 0;
      o.calls = first->calls / keys + (k < first->calls % keys ? 1 : 0);
      o.alternatives = static_cast<int>(key.measured.size()) - 1;
      // The search's target is the best arm it can test (a forced twin of NCCL's own choice is not one).
      const size_t best = static_cast<size_t>(&key.bestChoosable() - key.measured.data());
      o.trialsToBest = best == 0 ? 0 : -1;
      if (k < first->triedOrder.size()) {
        int trial = 0;
        for (size_t c : first->triedOrder[k]) {
          if (c == 0) continue;  // NCCL's default (measured.front()) is no trial
          ++trial;
          if (c == best && o.trialsToBest < 0) o.trialsToBest = trial;
        }
        o.tried = trial;
      }
      result.keys.push_back(o);
    }
  }
  return result;
}

}  // namespace dynamiccl::jobreplay
