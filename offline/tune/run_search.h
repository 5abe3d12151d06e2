// Search by runs: one nccl-tests run with a forced configuration times every size of a sweep at
// once, so the unit a cluster pays for is a run, not a (configuration, size) cell. Candidates run
// in the order of a prior (the simulator's, or a profile's rules first); a configuration is dropped
// once it is beyond noise slower than the size's incumbent at every size it could still win;
// survivors and NCCL's default are run again until the decision rule (evidence.h) settles every
// size or the budget of runs is spent.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "offline/tune/evidence.h"
#include "offline/tune/measurement_backend.h"
#include "offline/tune/search_space.h"
#include "offline/tune/tuner.h"

namespace dynamiccl::tune {

// One nccl-tests run: a sweep of powers of two from minBytes to maxBytes with one configuration forced.
struct RunRequest {
  Collective coll = Collective::AllReduce;
  uint64_t minBytes = 0, maxBytes = 0;
  Config config;        // keepDefault(): NCCL chooses
  int iterations = 20;  // timed iterations per size (nccl-tests -n x -N)
  int nRanks = 8, nNodes = 1;
};

// Runs one sweep and returns what the run printed (nccl-tests' stdout and, with
// NCCL_DEBUG_SUBSYS=TUNING, NCCL's "<Coll>: <n> Bytes -> Algo a proto p" lines). Injectable: the
// runner's executes scripts/measure_nccl_tests.sh; tests use a synthetic one.
using RunExecutor = std::function<Expected<std::string>(const RunRequest&)>;

// What one run measured: every result row's out-of-place time per size (one per -N cycle), and
// per size the algorithm and protocol NCCL ran when its TUNING lines say so.
struct RunOutput {
  std::map<uint64_t, std::vector<double>> times_us;
  std::map<uint64_t, Config> ncclRan;
};
RunOutput parseNcclTestsOutput(std::string_view text);

// Executes `options.script` in sweep mode (--bytes min --max-bytes max) once per run.
RunExecutor commandRunExecutor(const RunnerBackendOptions& options);
// The command line of one run (shell-quoted), for tests and --dry-run.
std::string runCommandLine(const RunnerBackendOptions& options, const RunRequest& run);

// A cluster without a GPU: nccl-tests-like output from a latency model. Each run draws one
// run-wide factor (lognormal runSigma: what differs between jobs) and per-cycle noise (sigma);
// the default run prints NCCL's TUNING lines for ncclDefault's choice.
struct SyntheticRunOptions {
  std::function<double(const Config&, const MeasureKey&)> truth_us;  // keepDefault() = NCCL's own choice
  std::function<Config(const MeasureKey&)> ncclDefault;              // what NCCL runs; nullptr = not printed
  double sigma = 0.02, runSigma = 0.01;
  int cycles = 5;
  uint64_t seed = 1;
};
RunExecutor syntheticRunExecutor(SyntheticRunOptions options);

struct RunSearchOptions {
  DecisionRule rule;
  int maxRuns = 0;            // budget of runs over all collectives; 0 = the exhaustive grid's
  int gridRepeats = 3;        // runs per configuration the exhaustive grid would take
  int firstDefaultRuns = 2;   // NCCL's default is run this often before any candidate (noise, incumbents)
  int iterations = 20;        // per run and size
  // Predicted time (us) of a configuration at a key: candidates run in ascending order of their
  // best predicted regret over the sizes. nullptr = the space's order.
  std::function<double(const Config&, const MeasureKey&)> prior;
  std::vector<Config> preferred;  // run first, in this order (a given profile's rules)
  // A candidate is never run when the prior predicts it at least this factor slower than NCCL's
  // default at every size (the simulator is off by 14-65% on unseen hardware; 2x leaves room).
  double priorSkipRatio = 2.0;
};

// Where the search left one size.
struct SizeStatus {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  bool decided = false;
  std::string why;   // "faster: ring/ll128", "default stands", "2 survivors undecided", ...
  int survivors = 0; // candidates not yet beyond noise slower than the incumbent here
};

struct RunSearchResult {
  TuneResult tune;             // keys per collective, as tune() gives them (spentIterations = runs)
  int runsUsed = 0;
  int gridRuns = 0;            // (candidates + default) x gridRepeats
  int candidates = 0;          // configurations the space holds (over all collectives)
  int candidatesRun = 0;       // of them, run at least once
  std::vector<SizeStatus> sizes;
  std::vector<std::string> log;  // one line per run: what ran and why
};

// `backend` answers availability, shape and provenance (the runner backend); `run` measures.
// request.sizes must be ascending powers of two (empty = 1K .. 1G).
Expected<RunSearchResult> searchByRuns(const MeasurementBackend& backend, const RunExecutor& run,
                                       const TuneRequest& request, const RunSearchOptions& options);

}  // namespace dynamiccl::tune
