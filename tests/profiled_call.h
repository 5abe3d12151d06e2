// One allreduce as NCCL's profiler events hand it to the profiler role (one channel spanning the
// call), for the tests that drive forked ranks through the real .so; advances the rank's clock.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

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

}  // namespace dynamiccl::testing
