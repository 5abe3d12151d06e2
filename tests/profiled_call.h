// One allreduce as NCCL's profiler events hand it to the profiler role (one channel spanning the
// call), for the tests that drive forked ranks through the real .so; advances the rank's clock.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "offline/harness/harness.h"

namespace dynamiccl::testing {

// NCCL's names for the tests' algorithm and protocol indices (0 Tree, 1 Ring; 0 LL, 1 LL128, 2 Simple).
inline std::string testAlgoName(int a) { return a == 0 ? "TREE" : a == 1 ? "RING" : "NVLS"; }
inline std::string testProtoName(int p) { return p == 0 ? "LL" : p == 1 ? "LL128" : "SIMPLE"; }

inline void emitProfiledCall(const harness::ProfilerLibrary& prof, void* pctx, uint64_t seq, uint64_t bytes,
                             const harness::Choice& c, int rank, uint64_t lat_ns, uint64_t& clock_ns) {
  harness::ProfilerColl pc;
  pc.seq = seq;
  pc.count = bytes / 4;
  const std::string a = testAlgoName(c.algo), p = testProtoName(c.proto);
  pc.algo = a.c_str();
  pc.proto = p.c_str();
  pc.nChannels = 1;
  pc.rank = rank;
  void* h = nullptr;
  void* k = nullptr;
  prof.startColl(pctx, pc, &h);
  prof.startKernelCh(pctx, h, 0, clock_ns, &k);
  prof.kernelChStop(k, clock_ns + lat_ns);
  prof.stop(k);
  prof.stop(h);
  clock_ns += lat_ns + 1000;
}

// The built library opened as NCCL opens it with NCCL_PROFILER_PLUGIN naming it (the profiler role is
// ours), in-job verification at its default; false when either side does not open.
struct ProfiledPlugin {
  std::shared_ptr<harness::TunerLibrary> tuner;
  std::shared_ptr<harness::ProfilerLibrary> prof;
};
inline bool openProfiledPlugin(const char* pluginDir, ProfiledPlugin& out) {
  unsetenv("DYNAMICCL_ONLINE");
  unsetenv("DYNAMICCL_VERIFY");
  const std::string path = harness::builtPluginPath(pluginDir);
  setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1);
  auto tuner = harness::TunerLibrary::open(path);
  auto prof = harness::ProfilerLibrary::open(path);
  if (!tuner.ok() || !prof.ok()) return false;
  out = {*tuner, *prof};
  return true;
}

// Rank 0 (the leader) of an nRanks-rank communicator in this forked process, both roles initialised;
// the process exits 10 (no library), 11 (tuner init) or 12 (profiler init) where a step fails.
struct LeaderRank {
  ProfiledPlugin plugin;
  std::unique_ptr<harness::TunerComm> comm;
  void* pctx = nullptr;
  // NCCL's activation mask: the profiler keeps its address for the communicator's life (on the heap, so
  // moving the struct keeps it where the plugin points).
  std::unique_ptr<int> mask = std::make_unique<int>(0);
};
inline LeaderRank startLeaderOrExit(const char* pluginDir, uint64_t commId, int nRanks) {
  LeaderRank l;
  if (!openProfiledPlugin(pluginDir, l.plugin)) _exit(10);
  harness::CommSpec spec;
  spec.commId = commId;
  spec.nRanks = nRanks;
  auto comm = l.plugin.tuner->init(spec);
  if (!comm.ok()) _exit(11);
  l.comm = std::move(*comm);
  if (l.plugin.prof->init(harness::ProfilerCommSpec{commId, nRanks, 1, 0}, l.mask.get(), &l.pctx) != ncclSuccess || !l.pctx)
    _exit(12);
  return l;
}

// `calls` allreduce calls of `bytes` where tree/ll runs 8 us and anything else 10 us (3% noise), each
// profiled as NCCL reports it; paced so the profiler's worker keeps up.
inline void runTreeLlBeatsTheRest(LeaderRank& l, uint64_t calls, uint64_t bytes, const harness::CostTable& table) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.03);
  uint64_t clock_ns = 1'000'000;
  for (uint64_t i = 0; i < calls; ++i) {
    const harness::Choice c = l.comm->decide(4, bytes, table);
    const double lat_us = (c.algo == 0 && c.proto == 0 ? 8.0 : 10.0) * noise(rng);
    emitProfiledCall(*l.plugin.prof, l.pctx, i, bytes, c, 0, static_cast<uint64_t>(lat_us * 1000), clock_ns);
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

}  // namespace dynamiccl::testing
