// Scale as a user's job runs it: one communicator of 512 ranks (64 "nodes" of 8) replayed as 512
// forked processes through the real plugin on the embedded L40S measurements, with the user's
// defaults (input check on, recording on) and DYNAMICCL_VERIFY=1 so the leader searches. One store
// file per node (DYNAMICCL_DB), as each node's ranks share their host's. Prints: init time with the
// input check, the epoch boundary's cost on the leader and the followers, rows written and lost per
// million calls per node, store size, and the share of calls profiled.
//
//   bench_cluster_job [--ranks N] [--per-node N] [--calls N] [--epoch N] [--timeout S] [--inputs-timeout-ms MS]
//                     [--env NAME=VALUE]... [--keep]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "offline/harness/harness.h"
#include "offline/jobreplay/jobreplay.h"
#include "store/store.h"

namespace {

using namespace dynamiccl;

struct Args {
  int ranks = 512, perNode = 8;
  uint64_t calls = 4000, epoch = 1000;
  double timeout_s = 900;
  std::string inputsTimeout_ms;  // DYNAMICCL_INPUTS_TIMEOUT_MS; empty: the user's default
  std::vector<std::pair<std::string, std::string>> env;  // more settings for every rank
  bool keep = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (k == "--keep") a.keep = true;
    else if (v && k == "--ranks") a.ranks = std::atoi(v), ++i;
    else if (v && k == "--per-node") a.perNode = std::atoi(v), ++i;
    else if (v && k == "--calls") a.calls = std::strtoull(v, nullptr, 10), ++i;
    else if (v && k == "--epoch") a.epoch = std::strtoull(v, nullptr, 10), ++i;
    else if (v && k == "--timeout") a.timeout_s = std::atof(v), ++i;
    else if (v && k == "--inputs-timeout-ms") a.inputsTimeout_ms = v, ++i;
    else if (v && k == "--env" && std::strchr(v, '=')) {
      const std::string kv = v;
      a.env.emplace_back(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
      ++i;
    }
    else {
      std::fprintf(stderr, "usage: %s [--ranks 512] [--per-node 8] [--calls 4000] [--epoch 1000] [--timeout 900] [--inputs-timeout-ms MS] [--env NAME=VALUE]... [--keep]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (a.ranks < 2 || a.perNode < 1 || a.ranks % a.perNode || a.calls < 1 || a.epoch < 10) {
    std::fprintf(stderr, "ranks must be a multiple of per-node (and at least 2), epoch at least 10\n");
    std::exit(2);
  }
  return a;
}

// Min, median, max of a sample (zeros when empty).
struct Spread {
  double min = 0, median = 0, max = 0;
};
Spread spread(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

// A user's profile: per measured allreduce size, its fastest configuration where that is not NCCL's own.
std::string writeProfile(const jobreplay::MeasuredJob& job, const std::string& path) {
  std::string rules;
  for (const jobreplay::JobKey& k : job.keys) {
    if (k.coll != Collective::AllReduce || k.measured.size() < 2) continue;
    const sim::Config& c = k.bestChoosable().config;
    if (c.algo == k.ncclDefault.algo && c.proto == k.ncclDefault.proto) continue;
    rules += std::string(rules.empty() ? "" : ",") + R"({"collective":"allreduce","bytes":[)" + std::to_string(k.bytes) +
             "," + std::to_string(k.bytes) + R"(],"algo":")" + std::string(algoName(c.algo)) + R"(","proto":")" +
             std::string(protoName(c.proto)) + R"(","evidence":{"provenance":"simulated"}})";
  }
  std::ofstream(path) << R"({"format":"dynamiccl-profile","version":2,"name":"cluster-bench","rules":[)" << rules << "]}";
  return path;
}

// The profiler's summary line in a rank's log: observations delivered, and those lost on the way
// (queue or pool full, not written to the store).
struct Delivery {
  uint64_t delivered = 0, lost = 0;
  bool found = false;
  bool inputsAlike = false;       // the input check adopted "alike"
  bool storeUnavailable = false;  // the profiler could not open the node's store
};
Delivery readSummary(const std::string& logPath) {
  static const std::regex line(
      R"(profiler: (\d+) observations delivered; dropped: queue full (\d+), record pool full (\d+);.*not written to store/log (\d+))");
  std::ifstream in(logPath);
  std::string l;
  Delivery d;
  std::smatch m;
  while (std::getline(in, l)) {
    d.inputsAlike |= l.find("have the same profile, settings and hardware") != std::string::npos;
    d.storeUnavailable |= l.find("profiler: store unavailable") != std::string::npos;
    if (std::regex_search(l, m, line)) {
      d.found = true;
      d.delivered += std::stoull(m[1]);
      d.lost += std::stoull(m[2]) + std::stoull(m[3]) + std::stoull(m[4]);
    }
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const Args a = parse(argc, argv);
  auto loaded = jobreplay::loadMeasuredJob(std::string(DYNAMICCL_SOURCE_DIR) +
                                           "/offline/demo/data/l40s-pcie-cs244c/normalized.csv");
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().c_str());
    return 1;
  }
  jobreplay::MeasuredJob job = std::move(loaded.value());
  const int nodes = a.ranks / a.perNode;
  job.nRanks = a.ranks;  // the measured keys and latencies as they are; the communicator's shape overridden
  job.nNodes = nodes;
  job.topology.nNodes = nodes;
  job.topology.gpusPerNode = a.perNode;

  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/dynamiccl-bench-cluster-XXXXXX";
  const std::string dir = mkdtemp(tmpl.data());
  jobreplay::JobOptions o;
  o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  o.iterations = (a.calls + job.keys.size() - 1) / job.keys.size();
  o.epochCalls = a.epoch;
  o.workDir = dir + "/job";
  o.timeout_s = a.timeout_s;
  o.env = {{"DYNAMICCL_PROFILE", writeProfile(job, dir + "/profile.json")}, {"DYNAMICCL_VERIFY", "1"}};
  if (!a.inputsTimeout_ms.empty()) o.env.push_back({"DYNAMICCL_INPUTS_TIMEOUT_MS", a.inputsTimeout_ms});
  o.env.insert(o.env.end(), a.env.begin(), a.env.end());
  const auto dbOf = [&](int node) { return dir + "/node" + std::to_string(node) + ".db"; };
  o.rankEnv = [&](int rank) { return std::vector<std::pair<std::string, std::string>>{{"DYNAMICCL_DB", dbOf(rank / a.perNode)}}; };
  fs::create_directories(o.workDir);

  std::printf("cluster job: %d ranks (%d nodes x %d) as %d forked processes on %u cores; %zu keys, epoch %llu calls\n",
              a.ranks, nodes, a.perNode, a.ranks, std::thread::hardware_concurrency(), job.keys.size(),
              (unsigned long long)a.epoch);
  std::fflush(stdout);
  auto result = jobreplay::replayJob(job, o);
  if (!result) {
    std::fprintf(stderr, "replayJob: %s\n", result.error().c_str());
    return 1;
  }
  const jobreplay::JobResult& r = *result;
  int finished = 0;
  for (const auto& rank : r.ranks) {
    finished += rank.finished;
    if (!rank.finished && rank.rank < 3) std::fprintf(stderr, "rank %d: %s\n", rank.rank, rank.failure.c_str());
  }
  std::printf("job: %llu calls per rank, %.1f s wall, %d/%zu ranks finished, ranks agree: %s\n",
              (unsigned long long)r.callsPerRank, r.wall_s, finished, r.ranks.size(), r.ranksAgree ? "yes" : "no");
  if (finished == 0) return 1;

  std::vector<double> init_ms;
  std::vector<double> followerBoundary_ms, leaderBoundary_ms;
  uint64_t calls = 0, profiled = 0;
  for (const auto& rank : r.ranks) {
    if (!rank.finished) continue;
    init_ms.push_back(rank.init_us / 1000);
    calls += rank.calls, profiled += rank.profiledCalls;
    // The last entry is the job's final call (a publish with no epoch after it): left out.
    for (size_t b = 0; b + 1 < rank.boundaryCall_us.size(); ++b)
      (rank.rank == 0 ? leaderBoundary_ms : followerBoundary_ms).push_back(rank.boundaryCall_us[b] / 1000);
  }
  const Spread init = spread(init_ms);
  std::printf("init with the input check (fork to first call), per rank: min %.1f ms, median %.1f ms, max %.1f ms\n",
              init.min, init.median, init.max);
  const Spread lead = spread(leaderBoundary_ms), follow = spread(followerBoundary_ms);
  std::printf("epoch boundary (the calls either side of it), leader: median %.3f ms, max %.3f ms over %zu boundaries; "
              "followers: median %.3f ms, max %.3f ms over %zu\n",
              lead.median, lead.max, leaderBoundary_ms.size(), follow.median, follow.max, followerBoundary_ms.size());
  const jobreplay::RankOutcome& leader = r.ranks[0];
  std::printf("profiled share of calls: leader %.4f (%llu of %llu), all ranks %.6f (%llu of %llu)\n",
              leader.profiledShare(), (unsigned long long)leader.profiledCalls, (unsigned long long)leader.calls,
              calls ? double(profiled) / double(calls) : 0.0, (unsigned long long)profiled, (unsigned long long)calls);

  // Per node: rows in its store file, rows its ranks' profilers lost, the file's size.
  std::vector<double> rowsPerM, lostPerM, bytes;
  uint64_t rowsTotal = 0, lostTotal = 0, deliveredTotal = 0, bytesTotal = 0;
  int summaries = 0, files = 0, alike = 0, storeUnavailable = 0;
  const double nodeCalls_M = double(r.callsPerRank) * a.perNode / 1e6;
  for (int n = 0; n < nodes; ++n) {
    uint64_t rows = 0, lost = 0, size = 0;
    if (fs::exists(dbOf(n))) {
      ++files;
      store::StoreOptions so;
      so.path = dbOf(n);
      so.read_only = true;
      auto s = store::Store::open(so);
      auto st = s ? (*s)->stats() : Expected<store::StoreStats>(makeError(s.error()));
      if (!st) std::fprintf(stderr, "node %d: %s\n", n, st.error().c_str());
      else rows = uint64_t(st->rows_per_table["observations"]), size = uint64_t(st->file_bytes);
    }
    for (int rank = n * a.perNode; rank < (n + 1) * a.perNode; ++rank) {
      const Delivery d = readSummary(o.workDir + "/rank" + std::to_string(rank) + ".log");
      summaries += d.found, lost += d.lost, deliveredTotal += d.delivered;
      alike += d.inputsAlike, storeUnavailable += d.storeUnavailable;
    }
    rowsPerM.push_back(double(rows) / nodeCalls_M), lostPerM.push_back(double(lost) / nodeCalls_M);
    bytes.push_back(double(size));
    rowsTotal += rows, lostTotal += lost, bytesTotal += size;
  }
  const Spread others = spread({rowsPerM.begin() + 1, rowsPerM.end()}), ls = spread(lostPerM), by = spread(bytes);
  std::printf("rows written per million calls per node: node 0 (the leader's) %.0f, others median %.0f max %.0f; "
              "total %llu rows\n",
              rowsPerM[0], others.median, others.max, (unsigned long long)rowsTotal);
  std::printf("rows lost per million calls per node: median %.0f, max %.0f; total %llu (of %llu delivered; %d rank summaries)\n",
              ls.median, ls.max, (unsigned long long)lostTotal, (unsigned long long)deliveredTotal, summaries);
  std::printf("input check adopted \"alike\" on %d of %zu ranks; profiler's store would not open on %d ranks\n", alike,
              r.ranks.size(), storeUnavailable);
  std::printf("store: %d files, %llu bytes in all; node 0 %.0f bytes, per file max %.0f\n", files,
              (unsigned long long)bytesTotal, bytes[0], by.max);
  if (a.keep) std::printf("kept: %s\n", dir.c_str());
  else fs::remove_all(dir);
  return finished == int(r.ranks.size()) ? 0 : 1;
}
