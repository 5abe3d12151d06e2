// Where timings come from: the simulator, a replayed dataset, a real cluster (nccl-tests through
// scripts/measure_nccl_tests.sh), or a synthetic function (tests). Errors are values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/tune/config.h"
#include "offline/tune/statistics.h"
#include "abi/abi.h"
#include "policy/policy.h"

namespace dynamiccl::tune {

class MeasurementBackend {
 public:
  virtual ~MeasurementBackend() = default;
  virtual std::string name() const = 0;
  // The communicator every key of this backend has.
  virtual int nRanks() const = 0;
  virtual int nNodes() const = 0;
  // Up to `iterations` timings (us) of config at key; the keep-default config measures NCCL's choice.
  virtual Expected<std::vector<double>> measure(const Config& config, const MeasureKey& key, int iterations,
                                                const JobKnobs& knobs = {}) = 0;
  // Whether the config can run (hardware, NCCL's table) or was measured (replay).
  virtual bool available(const Config& config, const MeasureKey& key) const = 0;
  virtual bool supportsJobKnobs() const { return false; }
  // Most samples one configuration can ever have at a key (replay: its most repeats); 0 = unlimited.
  virtual int maxSamplesPerConfig() const { return 0; }
  // A recorded dataset hands every measured arm of a key at once, with all its repeats, NCCL's
  // default first; the tuner then decides from them instead of searching. An error says why the
  // key cannot be decided (e.g. neither a default row nor the arm NCCL's model would pick).
  virtual bool recorded() const { return false; }
  virtual Expected<std::vector<ConfigStats>> recordedArms(const MeasureKey&) const {
    return makeError(name() + " holds no recorded arms");
  }
  // What NCCL's default runs at a key, where the backend knows it (a rule forcing it changes nothing).
  virtual std::optional<Config> ncclDefaultRuns(const MeasureKey&) const { return std::nullopt; }
  // Lines about the data the backend could not use (rows of unknown platforms, by system).
  virtual std::vector<std::string> dataNotes() const { return {}; }
  // Sizes this backend can measure for a collective; empty = any size.
  virtual std::vector<uint64_t> measurableSizes(Collective) const { return {}; }
  // Noiseless truth where the backend has one (simulator, synthetic): lets benchmarks judge a search.
  virtual std::optional<double> expected_us(const Config&, const MeasureKey&) const { return std::nullopt; }
  // What its timings are, for the evidence of the rules tuned from them (policy/evidence.h): only
  // measurements of a real cluster, with its hardware, can make a rule verified.
  virtual policy::Provenance provenance() const { return policy::Provenance::Simulated; }
  virtual std::optional<ClusterHardware> measuredOn() const { return std::nullopt; }
  virtual std::string ncclVersion() const { return ""; }  // "2.28.9"; empty when unknown
  // NCCL's own channel count for config's algo/proto at key (its own choice's when config keeps
  // it), where the backend models NCCL (simulator); nullopt: unknown.
  virtual std::optional<int> ncclChannels(const Config&, const MeasureKey&) const { return std::nullopt; }
};

// The simulator (sim/) on a topology preset or JSON file; samples carry its seeded noise.
struct SimulatorBackendOptions {
  std::string topology = "dgx-h100";  // preset name or path
  int nNodes = 1;
  uint64_t seed = 1;
  std::string paramsPath;  // calibrated SimParams JSON; empty = defaults
  abi::PickRule ncclRule = abi::PickRule::Nccl2_28;  // whose channel rule the simulated NCCL follows
};
Expected<std::unique_ptr<MeasurementBackend>> makeSimulatorBackend(const SimulatorBackendOptions& options);

// Interchange CSV rows (shared/data/README.md) of one communicator shape, every repeat kept;
// configs not measured are unavailable. `system` filters by substring; nRanks/nNodes 0 = the
// shape with most forced rows. `platform` (a preset name) declares the hardware of every row,
// for systems whose strings match no known platform.
struct ReplayBackendOptions {
  std::string csvPath;
  std::string system;
  int nRanks = 0, nNodes = 0;
  std::string platform;  // --measured-on: the platform the data was measured on, whatever its system strings say
  // The measured machine's fingerprint as declared (`dynamiccl probe` there, or facts); it wins. Without
  // it the rules carry the platform's the data names, and none where no platform describes the system.
  std::optional<ClusterHardware> declared;
};
Expected<std::unique_ptr<MeasurementBackend>> makeReplayBackend(const ReplayBackendOptions& options);
// One backend per communicator shape (nRanks, nNodes) matching the options, the most forced
// measurements first; a second system or variant of a shape is named in the first one's notes.
Expected<std::vector<std::unique_ptr<MeasurementBackend>>> makeReplayBackends(const ReplayBackendOptions& options);
// The collectives a recorded backend measured (AllReduce where it records none, or measures on demand).
std::vector<Collective> measuredCollectives(const MeasurementBackend& b);

// Runs `script` (scripts/measure_nccl_tests.sh) once per measurement; it prints one time_us per line.
struct RunnerBackendOptions {
  std::string script;       // path to measure_nccl_tests.sh
  std::string launcher = "mpirun";  // mpirun, srun or none
  std::string ncclTestsDir; // where all_reduce_perf etc. live
  std::string pluginPath;   // libnccl-tuner-dynamiccl.so
  int nRanks = 8, nNodes = 1;
  std::vector<std::string> extraArgs;  // passed through to the script (e.g. launcher flags)
  std::optional<ClusterHardware> cluster;  // the measured cluster's hardware (tune --preset/--probe-host/...)
  std::string ncclVersion;                 // NCCL the jobs ran, when known
};
Expected<std::unique_ptr<MeasurementBackend>> makeRunnerBackend(const RunnerBackendOptions& options);
// The command line the runner executes (shell-quoted), exposed for tests and --dry-run.
std::string runnerCommandLine(const RunnerBackendOptions& options, const Config& config, const MeasureKey& key,
                              int iterations, const JobKnobs& knobs);

// A known landscape (tests, benchmarks of the search itself): truth(config, key) in us, with
// lognormal noise of `sigma`; availability by `available` (nullptr = all).
struct SyntheticBackendOptions {
  std::function<double(const Config&, const MeasureKey&)> truth_us;
  std::function<bool(const Config&, const MeasureKey&)> available;
  double sigma = 0.03;
  uint64_t seed = 1;
  int nRanks = 8, nNodes = 1;
};
std::unique_ptr<MeasurementBackend> makeSyntheticBackend(SyntheticBackendOptions options);

}  // namespace dynamiccl::tune
