// The input check's cost at communicator init (budget: under 10 ms with identical inputs): 8 ranks of
// one communicator, as 8 threads of this process each calling the real library's init with the same
// commId, publish their inputs to a directory store and adopt one verdict. Timed: until every rank's
// init returned, with the check and without it (DYNAMICCL_INPUTS_CHECK=0); the difference is its cost.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "offline/harness/harness.h"

namespace {

using namespace dynamiccl;

struct Fixture {
  std::string dir;
  std::shared_ptr<harness::TunerLibrary> lib;
  Fixture() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/dynamiccl-bench-inputs-XXXXXX";
    dir = mkdtemp(tmpl.data());
    std::ofstream(dir + "/profile.json")
        << R"({"format":"dynamiccl-profile","version":1,"name":"bench","rules":[{"algo":"ring","proto":"ll"}]})";
    std::filesystem::create_directory(dir + "/coord");
    setenv("DYNAMICCL_PROFILE", (dir + "/profile.json").c_str(), 1);
    setenv("DYNAMICCL_COORD_DIR", (dir + "/coord").c_str(), 1);
    setenv("DYNAMICCL_RECORD", "0", 1);
    auto l = harness::TunerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR));
    if (!l.ok()) std::abort();
    lib = l.value();
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_InitOfEightRanks(benchmark::State& state) {
  Fixture& f = fixture();
  const bool check = state.range(0) != 0;
  setenv("DYNAMICCL_INPUTS_CHECK", check ? "1" : "0", 1);
  constexpr int kRanks = 8;
  static std::atomic<uint64_t> commId{0xbe7c000000000000ull};
  for (auto _ : state) {
    const uint64_t id = commId.fetch_add(1);  // a fresh communicator each time: no verdict to reuse
    std::vector<std::unique_ptr<harness::TunerComm>> comms(kRanks);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kRanks; ++r)
      ranks.emplace_back([&, r] {
        harness::CommSpec spec;
        spec.commId = id;
        spec.nRanks = kRanks;
        auto c = f.lib->init(spec);
        if (c.ok()) comms[r] = std::move(c.value());
      });
    for (auto& t : ranks) t.join();
    state.PauseTiming();
    for (auto& c : comms)
      if (!c) state.SkipWithError("an init failed");
    comms.clear();  // finalize outside the timing
    state.ResumeTiming();
  }
  state.SetLabel(check ? "with the input check" : "without it (DYNAMICCL_INPUTS_CHECK=0)");
}
BENCHMARK(BM_InitOfEightRanks)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
