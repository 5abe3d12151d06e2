// A machine without libcurl: this program's dlopen (exported, so the plugin binds to it) refuses
// "libcurl.so.4". 8 forked ranks with DYNAMICCL_ETCD set then load and run the real plugin, every
// rank keeps NCCL's choice on every call, and each says once why.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "learner/online_schedule.h"
#include "tests/test_support.h"
#include "trust_opt_in.h"

extern "C" __attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
  using Fn = void* (*)(const char*, int);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "dlopen"));
  if (file && std::strstr(file, "libcurl")) return nullptr;  // as where it is not installed
  return real(file, mode);
}

namespace dynamiccl {
namespace {

constexpr int kRanks = 8;
constexpr uint64_t kCalls = 2000;

[[noreturn]] void runRank(int rank, const std::string& dir) {
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  setenv("DYNAMICCL_PROFILE", (dir + "/profile.json").c_str(), 1);
  setenv("DYNAMICCL_ONLINE", "1", 1);
  setenv("DYNAMICCL_ETCD", "http://127.0.0.1:9", 1);  // never contacted: the client cannot load
  setenv("DYNAMICCL_INPUTS_CHECK", "1", 1);
  setenv("DYNAMICCL_RECORD", "0", 1);
  setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1);
  auto tuner = harness::TunerLibrary::open(path);
  if (!tuner.ok()) _exit(10);
  harness::CommSpec spec;
  spec.commId = 0xc0bb1e;
  spec.nRanks = kRanks;
  spec.nNodes = 2;
  auto comm = (*tuner)->init(spec);
  if (!comm.ok()) _exit(11);
  const harness::CostTable table = harness::ncclPicks(1, 2);  // NCCL's own choice: ring/simple
  uint64_t hash = 0, nccl = 0, lines = 0;
  for (uint64_t i = 0; i < kCalls; ++i) {
    const harness::Choice c = (*comm)->decide(4, uint64_t{1} << (10 + i % 14), table);
    hash = learner::mix64(hash ^ (static_cast<uint64_t>(c.algo + 1) << 8 | static_cast<uint64_t>(c.proto + 1)));
    nccl += c.algo == 1 && c.proto == 2 && c.nChannels == 0;
  }
  for (const std::string& l : harness::LogCapture::lines()) lines += l.find("libcurl") != std::string::npos;
  std::ofstream f(dir + "/rank" + std::to_string(rank));
  f << hash << ' ' << nccl << ' ' << lines << '\n';
  f.close();
  _exit(f ? 0 : 13);
}

TEST(NoLibcurl, EveryRankLoadsRunsAndKeepsNcclsChoiceSayingWhyOnce) {
  char tmpl[] = "/tmp/dynamiccl-nocurl-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/profile.json") << testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})");
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) runRank(r, dir);
    pids.push_back(pid);
  }
  const std::vector<int> codes = testing::waitForRanks(pids, 60);
  unsigned long long first = 0;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(codes[r], 0) << "rank " << r;
    std::ifstream in(dir + "/rank" + std::to_string(r));
    unsigned long long hash = 0, nccl = 0, lines = 0;
    ASSERT_TRUE(in >> hash >> nccl >> lines) << "rank " << r;
    if (r == 0) first = hash;
    EXPECT_EQ(hash, first) << "rank " << r;
    EXPECT_EQ(nccl, kCalls) << "rank " << r << " changed NCCL's choice";
    EXPECT_EQ(lines, 1u) << "rank " << r << ": one line says libcurl is missing";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
