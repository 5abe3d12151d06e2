// The input check's cost at communicator init (budget: at most 5 ms at 8 ranks, not growing with the
// ranks): N ranks of one communicator, as N threads of this process each calling the real library's
// init with the same commId, publish their inputs to a directory store and adopt one verdict, off
// NCCL's init path. InitOf: until every rank's init returned, with the check and without it
// (DYNAMICCL_INPUTS_CHECK=0); the difference is what init pays. UntilChecked: until every rank's
// decision at the switch call (kCheckedFirstCall) returned, which waits for the check to end.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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

// ranks threads init one communicator each; then each makes `calls` decisions.
void initRanks(benchmark::State& state, int calls) {
  Fixture& f = fixture();
  const bool check = state.range(0) != 0;
  const int nRanks = static_cast<int>(state.range(1));
  setenv("DYNAMICCL_INPUTS_CHECK", check ? "1" : "0", 1);
  static std::atomic<uint64_t> commId{0xbe7c000000000000ull};
  const harness::CostTable table = harness::ncclPicks(1, 2);
  double initSum_ms = 0;
  uint64_t inits = 0;
  for (auto _ : state) {
    const uint64_t id = commId.fetch_add(1);  // a fresh communicator each time: no verdict to reuse
    std::vector<std::unique_ptr<harness::TunerComm>> comms(nRanks);
    std::vector<double> init_ms(nRanks);
    std::vector<std::thread> ranks;
    for (int r = 0; r < nRanks; ++r)
      ranks.emplace_back([&, r] {
        harness::CommSpec spec;
        spec.commId = id;
        spec.nRanks = nRanks;
        const auto t0 = std::chrono::steady_clock::now();
        auto c = f.lib->init(spec);
        init_ms[r] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!c.ok()) return;
        comms[r] = std::move(c.value());
        for (int i = 0; i < calls; ++i) comms[r]->decide(4, 4096, table);
      });
    for (auto& t : ranks) t.join();
    state.PauseTiming();
    for (double x : init_ms) initSum_ms += x, ++inits;
    for (auto& c : comms)
      if (!c) state.SkipWithError("an init failed");
    comms.clear();  // finalize outside the timing
    state.ResumeTiming();
  }
  // One rank's own init, as its thread timed it (the wall time above includes N threads sharing the cores).
  state.counters["rank_init_ms"] = inits ? initSum_ms / static_cast<double>(inits) : 0;
  state.SetLabel(check ? "with the input check" : "without it (DYNAMICCL_INPUTS_CHECK=0)");
}

void BM_InitOf(benchmark::State& state) { initRanks(state, 0); }
void BM_UntilChecked(benchmark::State& state) { initRanks(state, 65); }
BENCHMARK(BM_InitOf)->ArgsProduct({{0, 1}, {8, 64}})->ArgNames({"check", "ranks"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_UntilChecked)->ArgsProduct({{0, 1}, {8, 64}})->ArgNames({"check", "ranks"})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
