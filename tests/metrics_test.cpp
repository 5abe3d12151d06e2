// The metrics file (DYNAMICCL_METRICS_DIR, docs/METRICS.md) through the real library: what a verifying
// job and a static one write, read back with Prometheus's own text-format parser; the file is replaced
// whole (no partial file, no temporary left); a directory that cannot be written costs one line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/profiled_call.h"
#include "tests/test_support.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;
constexpr int kRanks = 8;
constexpr int kRing = 1, kSimple = 2;
constexpr uint64_t kBytes = 4096;
constexpr uint64_t kCommId = 0x5eed0001;
constexpr const char* kJobId = "job \"7\" \\ nightly";  // a label value the text format must escape

// tree/ll, simulated (unverified) on this hardware: the job tests it against NCCL's ring/simple and
// finds it 20% faster.
constexpr const char* kProfile =
    R"({"format":"dynamiccl-profile","version":2,"name":"simulated","rules":[{"collective":"allreduce",)"
    R"("bytes":[4096,4096],"algo":"tree","proto":"ll","evidence":{"provenance":"simulated","fingerprint":)"
    R"({"gpu_cc":89,"nvlink_GBps":0,"nics_per_node":1,"nic_GBps":25}}}]})";

struct Sample {
  std::string name;
  nlohmann::json labels;
  double value = 0;
};

// Every sample of the file, through prometheus_client's parser; empty (and a failure) if it does not parse.
std::vector<Sample> parsed(const std::string& path) {
  const std::string cmd = "/usr/bin/python3 " DYNAMICCL_SOURCE_DIR "/tests/metrics_parse.py '" + path + "'";
  FILE* p = popen(cmd.c_str(), "r");
  std::vector<Sample> out;
  if (!p) return out;
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << "Prometheus's parser refused " << path;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    out.push_back({j["name"], j["labels"], j["value"]});
  }
  return out;
}

// The one sample named so whose labels include these; NaN when none (and a failure when several).
double valueOf(const std::vector<Sample>& samples, const std::string& name,
               const std::vector<std::pair<std::string, std::string>>& labels = {}) {
  double v = std::nan("");
  int found = 0;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, want] : labels) all = all && s.labels.contains(k) && s.labels[k] == want;
    if (!all) continue;
    v = s.value;
    ++found;
  }
  EXPECT_LE(found, 1) << name;
  return v;
}

std::vector<fs::path> filesIn(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

// One process as rank 0 (the leader) of an 8-rank communicator, the input check off (the other ranks
// do not exist): `calls` calls, profiled as NCCL would, then the tuner's finalize. Before finalize it
// writes "before" with the names of the files the metrics directory holds then.
[[noreturn]] void runLeader(const std::string& dir, const std::string& metricsDir, uint64_t calls, bool online) {
  setenv("DYNAMICCL_TOPO", "gpu_cc=89,nvlink_GBps=0,nics_per_node=1,nic_GBps=25", 1);
  setenv("DYNAMICCL_PROFILE", (dir + "/simulated.json").c_str(), 1);
  setenv("DYNAMICCL_TRUST", online ? "verified" : "all", 1);
  setenv("DYNAMICCL_DB", (dir + "/store.db").c_str(), 1);
  setenv("DYNAMICCL_COORD_DIR", (dir + "/coord").c_str(), 1);
  setenv("DYNAMICCL_EPOCH_CALLS", "200", 1);
  setenv("DYNAMICCL_INPUTS_CHECK", "0", 1);
  setenv("DYNAMICCL_METRICS_DIR", metricsDir.c_str(), 1);
  setenv("SLURM_JOB_ID", kJobId, 1);
  testing::LeaderRank leader = testing::startLeaderOrExit(DYNAMICCL_PLUGIN_DIR, kCommId, kRanks);
  testing::runTreeLlBeatsTheRest(leader, calls, kBytes, harness::ncclPicks(kRing, kSimple));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the worker joins the last observations
  {
    std::ofstream before(dir + "/before");
    for (const fs::path& f : filesIn(metricsDir)) before << f.filename().string() << "\n";
  }
  leader.plugin.prof->finalize(leader.pctx);
  leader.comm.reset();  // the tuner's finalize writes the final values
  std::ofstream(dir + "/warnings") << harness::LogCapture::count(NCCL_LOG_WARN);
  _exit(0);
}

class Metrics : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dynamiccl-metrics-XXXXXX";
    dir_ = mkdtemp(tmpl);
    metricsDir_ = dir_ + "/textfile";
    fs::create_directories(metricsDir_);
    fs::create_directories(dir_ + "/coord");
    std::ofstream(dir_ + "/simulated.json") << kProfile;
  }
  void TearDown() override {
    if (std::getenv("METRICS_TEST_KEEP")) std::printf("kept %s\n", dir_.c_str());
    else fs::remove_all(dir_);
  }

  void run(uint64_t calls, bool online, const std::string& metricsDir) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) runLeader(dir_, metricsDir, calls, online);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the leader failed: " << status;
  }
  std::string promFile() const {
    const auto files = filesIn(metricsDir_);
    EXPECT_EQ(files.size(), 1u) << "one file per process, no temporary left";
    return files.empty() ? "" : files[0].string();
  }

  std::string dir_, metricsDir_;
};

TEST_F(Metrics, AVerifyingJobsFileParsesAndSaysWhatItDidAndCost) {
  constexpr uint64_t kCalls = 3000;
  run(kCalls, true, metricsDir_);
  const std::string path = promFile();
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(fs::path(path).extension(), ".prom");
  // Written during the job already (the agent's first write), not only at finalize.
  std::ifstream before(dir_ + "/before");
  std::string seen;
  std::getline(before, seen);
  EXPECT_EQ(seen, fs::path(path).filename().string());

  const auto s = parsed(path);
  ASSERT_FALSE(s.empty());
  const std::vector<std::pair<std::string, std::string>> comm = {
      {"comm_id", "000000005eed0001"}, {"rank", "0"}, {"nranks", "8"}, {"n_nodes", "1"},
      {"slurm_job_id", kJobId}, {"library", "NCCL"}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> more) {
    more.insert(more.end(), comm.begin(), comm.end());
    return more;
  };
  EXPECT_EQ(valueOf(s, "dynamiccl_calls_total", with({{"collective", "AllReduce"}})), kCalls);
  // The job tested tree/ll and kept it: the plugin's choice ran on part of the profiled calls.
  const double honoured = valueOf(s, "dynamiccl_profiled_calls_total", with({{"outcome", "honoured"}}));
  const double ncclChoice = valueOf(s, "dynamiccl_profiled_calls_total", with({{"outcome", "nccl_choice"}}));
  EXPECT_GT(honoured, 0);
  EXPECT_GT(ncclChoice, 0);
  EXPECT_EQ(valueOf(s, "dynamiccl_profiled_calls_total", with({{"outcome", "not_honoured"}})), 0);
  EXPECT_LE(honoured + ncclChoice, kCalls);
  EXPECT_EQ(valueOf(s, "dynamiccl_online", comm), 1);
  EXPECT_EQ(valueOf(s, "dynamiccl_communicator_ended", comm), 1);
  EXPECT_GT(valueOf(s, "dynamiccl_table_version", comm), 0);
  EXPECT_EQ(valueOf(s, "dynamiccl_coord_frozen", comm), 0);
  // The leader's figures: what it measured, gained and paid, as its finalize line says them.
  const double measured = valueOf(s, "dynamiccl_measured_calls", comm);
  EXPECT_GT(measured, 0);
  EXPECT_LE(measured, kCalls);
  const double time_us = valueOf(s, "dynamiccl_collective_time_microseconds", comm);
  EXPECT_GT(time_us, 8.0 * kCalls * 0.8);
  EXPECT_LT(time_us, 10.0 * kCalls * 1.2);
  const double gain = valueOf(s, "dynamiccl_measured_gain_ratio", comm);
  EXPECT_GT(gain, 0.05) << "tree/ll runs 20% faster than NCCL's ring/simple here";
  EXPECT_LT(gain, 0.3);
  EXPECT_NEAR(valueOf(s, "dynamiccl_time_saved_microseconds", comm), gain * time_us, 1e-6 * time_us);
  const double measureCost = valueOf(s, "dynamiccl_measurement_cost_ratio", comm);
  const double exploreCost = valueOf(s, "dynamiccl_exploration_cost_ratio", comm);
  EXPECT_GT(measureCost, 0);
  EXPECT_GE(exploreCost, 0);
  EXPECT_NEAR(valueOf(s, "dynamiccl_net_gain_ratio", comm), gain - measureCost - exploreCost, 1e-9);
  EXPECT_EQ(valueOf(s, "dynamiccl_keys", with({{"state", "searching"}})) +
                valueOf(s, "dynamiccl_keys", with({{"state", "settled"}})),
            1);
}

TEST_F(Metrics, AStaticJobWritesAtFinalizeWithoutLearnerFigures) {
  constexpr uint64_t kCalls = 500;
  run(kCalls, false, metricsDir_);
  const auto s = parsed(promFile());
  ASSERT_FALSE(s.empty());
  // DYNAMICCL_TRUST=all: the rule decides every call; no online learning, so no leader figures.
  EXPECT_EQ(valueOf(s, "dynamiccl_calls_total", {{"collective", "AllReduce"}}), kCalls);
  EXPECT_GT(valueOf(s, "dynamiccl_profiled_calls_total", {{"outcome", "honoured"}}), 0);
  EXPECT_EQ(valueOf(s, "dynamiccl_profiled_calls_total", {{"outcome", "nccl_choice"}}), 0);
  EXPECT_EQ(valueOf(s, "dynamiccl_online", {}), 0);
  EXPECT_EQ(valueOf(s, "dynamiccl_communicator_ended", {}), 1);
  EXPECT_TRUE(std::isnan(valueOf(s, "dynamiccl_measured_gain_ratio", {})));
  // Not written before finalize: only the epoch agent writes during a job.
  std::ifstream before(dir_ + "/before");
  std::string seen;
  EXPECT_FALSE(std::getline(before, seen)) << seen;
}

TEST_F(Metrics, ADirectoryThatCannotBeWrittenIsSaidOnceAndTheJobGoesOn) {
  run(1000, true, dir_ + "/no-such-dir");
  std::ifstream w(dir_ + "/warnings");
  size_t warnings = 99;
  w >> warnings;
  EXPECT_EQ(warnings, 1u) << "one line for the directory, whatever the writes";
  EXPECT_TRUE(filesIn(metricsDir_).empty());
}

}  // namespace
}  // namespace dynamiccl
