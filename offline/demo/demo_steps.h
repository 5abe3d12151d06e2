// `dynamiccl demo`, the main job. By default on measurements (demo_measured.cpp): load a dataset's
// forced sweeps -> tune the simulator's profile for its platform -> replay a job through the real
// plugin verifying that profile -> export what the job verified -> the table against NCCL's default
// and the measured best. The lab's simulated demo (lab/demo) composes these steps with its own
// on the simulator alone. Each step lives in its own demo_*.cpp; this header is what they share.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "policy/policy.h"
#include "offline/sim/sim.h"
#include "offline/harness/harness.h"
#include "offline/jobreplay/jobreplay.h"
#include "offline/tune/tune.h"
#include "store/store.h"

namespace dynamiccl::cli::demo {

struct DemoOptions {
  bool simulated = false;  // the simulated cluster (the lab's `dynamiccl-lab demo`)
  std::string preset = "h800";
  int nodes = 4;
  // Measured (default): the dataset the job replays (empty: the embedded L40S sweeps). Simulated:
  // tune and replay on it instead of the simulator.
  std::string data;
  int ranks = 0;            // measured: the dataset's shape (0: the one with most measured configurations)
  std::string system;       // measured: only rows whose system contains this text (several systems share a shape)
  uint64_t iterations = 0;  // measured: passes of the job over its keys (0: 4000, --quick 1000)
  int jobs = 2;             // measured: jobs run one after another on the same store (the next job collects)
  std::string db;      // SQLite store: also train from it
  std::string out = "demo-out";
  std::string plugin;  // plugin library (default: the build tree's)
  uint64_t seed = 1;
  bool quick = false;  // smaller budgets (the ctest)
  bool noPlots = false;
  bool verbose = false;  // each simulated candidate and each verdict printed, not only in their files
  bool online = false;  // measured job: DYNAMICCL_ONLINE=1 as well (explores beyond the simulator's candidates)
  // Measured job: the learned network's profile instead of the simulator's (trained with the replayed
  // dataset's machine held out), its proposals verified in the job.
  bool learned = false;
  std::vector<std::string> trainData;  // interchange CSVs of other machines' measurements to train on too
};

// The cluster the demo runs on: topology, simulator parameters and NCCL's view of it.
struct DemoCluster {
  model::Topology topology;
  sim::SimParams params;
  std::string paramsSource;  // where params came from, for the printout
  std::shared_ptr<const model::NcclReference> nccl;
};
Expected<DemoCluster> makeCluster(const DemoOptions& o);

// `text` on stdout in lines of at most 120 columns (report::wrapText): the first after `first`, the rest
// after `indent`. The demo prints its prose through here, so that every line fits a terminal.
void printWrapped(const std::string& text, const std::string& first = "      ", const std::string& indent = "        ");
// printf's formatting into a string.
[[gnu::format(printf, 1, 2)]] std::string textf(const char* format, ...);
// A system string quoted again after its first mention: at most 60 characters, cut with "...".
std::string shortSystem(const std::string& system);

// Prints "[i/n] title" and, on done(), the status line with the step's wall time, each wrapped.
class StepTimer {
 public:
  StepTimer(int index, const std::string& title) : StepTimer(index, 6, title) {}
  StepTimer(int index, int steps, const std::string& title);
  void done(const std::string& status);
  double elapsed_s() const;

 private:
  int index_;
  std::chrono::steady_clock::time_point start_;
};

// Step 2 (tune) result.
struct TunedProfile {
  policy::Profile profile;
  std::string reportJson;  // tune report (input of `dynamiccl export` / `env`)
  std::vector<Collective> collectives;
  std::vector<uint64_t> sizes;
  int64_t spentIterations = 0, gridIterations = 0;
  int nRanks = 0, nNodes = 0;
  bool simulated = true;  // timed on the simulator; false: measurements replayed (--data)
};
// The tuner's recipe on one backend, at `sizes` (empty: the backend's own), with the demo's budgets.
Expected<TunedProfile> tuneWith(tune::TunePlan plan, const DemoOptions& o, const std::vector<Collective>& collectives,
                                const std::vector<uint64_t>& sizes);
// On the simulator of `preset` x nodes (paramsPath: its calibrated parameters) at the given sizes.
// candidates: a rule wherever the simulator estimates any gain (the guard left to in-job
// verification); else the CLI's guard (a gain beyond noise).
Expected<TunedProfile> tuneOnSimulator(const DemoOptions& o, const std::string& preset, int nodes,
                                       const std::string& paramsPath, const std::vector<Collective>& collectives,
                                       const std::vector<uint64_t>& sizes, bool candidates);

// Step 3 (train) result; trained=false with the reason when skipped.
struct LearnedProfile {
  bool trained = false;
  std::string skipped;        // why not trained
  std::string failed;         // a file that could not be written: the demo fails
  std::string profilePath;    // learned.json
  std::vector<std::string> notes;  // held-out figures, rows used
};
// forHardware: the fingerprint to declare (the replayed shape's machine), whatever the data span.
LearnedProfile trainProfile(const DemoOptions& o, const std::string& outDir,
                            const std::optional<ClusterHardware>& forHardware = std::nullopt);

// Step 5 (replay): one row per (profile, collective, size).
struct PointResult {
  std::string profile;  // "NCCL default", "tuned", "learned"
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  std::string config;   // what NCCL would run after the plugin decided
  double chosen_us = 0, default_us = 0, best_us = 0;
  sim::Config decision;  // the same as a configuration
  int nRanks = 0;        // the communicator it was judged on
};
struct CollectiveScore {
  Collective coll = Collective::AllReduce;
  int points = 0;
  double geoVsBest = 0, worstVsBest = 0, geoVsDefault = 0, worstVsDefault = 0;
};
struct ProfileScore {
  std::string label;
  std::vector<CollectiveScore> perCollective;
};
struct JudgedProfiles {
  std::string judge;  // "noise-free simulator (simulated times)" or "measurements of <csv>"
  std::string trust;  // how the plugin was told to treat the profiles' unverified rules
  std::vector<ProfileScore> scores;
  std::vector<PointResult> points;
  int unjudged = 0;   // data replay: points whose chosen configuration was never measured
};
struct ProfileToJudge {
  std::string label;
  std::string path;  // empty: NCCL alone (no tuner)
};
// What judging runs the plugin under: the plugin's host probe made to see `t` (DYNAMICCL_TOPO),
// online learning and recording off, DYNAMICCL_TRUST=trust ("all": unverified rules apply too).
using EnvVars = std::vector<std::unique_ptr<harness::ScopedEnv>>;
inline constexpr const char* kReplayTrust = "all";
extern const std::string kTrustNote;  // what kReplayTrust means, for the printout
EnvVars clusterEnv(const model::Topology& t, const std::string& trust = kReplayTrust);
Expected<std::shared_ptr<harness::TunerLibrary>> openPlugin(const std::string& pluginPath);
// One profile loaded by the plugin, one communicator per shape.
class PluginDecider {
 public:
  PluginDecider(std::shared_ptr<harness::TunerLibrary> lib, std::string profilePath)
      : lib_(std::move(lib)), profilePath_(std::move(profilePath)) {}
  // What NCCL runs after the plugin saw `table`; algo Default when the plugin could not init.
  Expected<sim::Config> decide(const model::Topology& t, Collective coll, uint64_t bytes, const model::CostTable& table);

 private:
  std::shared_ptr<harness::TunerLibrary> lib_;
  std::string profilePath_;
  ncclTunerConstants_v5_t constants_ = model::defaultTunerConstants();
  std::map<std::pair<int, int>, std::unique_ptr<harness::TunerComm>> comms_;
};
// trust: DYNAMICCL_TRUST for the plugin ("all": unverified rules apply too); nRanks: only that
// shape of the dataset (0: every shape).
Expected<JudgedProfiles> judgeOnData(const std::string& csvPath, const std::vector<ProfileToJudge>& profiles,
                                    const std::vector<Collective>& collectives, const std::string& pluginPath,
                                    const std::string& trust = "all", int nRanks = 0);

// Steps 4 and 6: the table, the CSVs behind the plots, summary.json, and the plots.
// decision_map.csv holds the points of profile `mapped`.
Status writeJudgedCsvs(const JudgedProfiles& r, int nRanks, const std::string& outDir,
                       const std::string& mapped = "tuned");


// In-job verification (demo_verify.cpp, where it plugs in): every rank's settings for verifying
// the profile at profilePath, and afterwards the store's verdicts as a profile of verified rules.
std::vector<std::pair<std::string, std::string>> verificationEnv(const std::string& profilePath,
                                                                 const std::string& storePath);
struct JobVerdict {
  Collective coll = Collective::AllReduce;
  uint64_t minBytes = 0, maxBytes = 0;  // the size bucket it was tested on
  int nRanks = 0;
  std::string candidate, state;         // "tree/ll", "promoted" | "dropped" | "testing"
  double gain = 0;                      // measured speed-up over NCCL's default minus 1
  std::string line;                     // verdicts::describeVerdict
};
struct VerifiedExport {
  std::string path;
  size_t rules = 0, withoutFingerprint = 0;
  std::vector<JobVerdict> verdicts;
  std::vector<store::VerdictRow> rows;  // the store's rows of `verdicts`, in the same order
};
// hardwareUnknown: the replayed host showed a stand-in's facts, not the measured machine's; the rules
// are written without a fingerprint (a job on the machine tests them before they count).
Expected<VerifiedExport> exportVerified(const std::string& storePath, const std::string& outPath,
                                        bool hardwareUnknown = false);


// What `dynamiccl tune --backend replay` decides on the job's dataset, shape and collectives
// (demo_agreement.cpp): one decision rule on the dataset's runs, which say what the replayed job may
// find (MeasuredJob::withholdGains) and what the job's final configurations are compared with.
struct RunsFindings {
  std::shared_ptr<const tune::TunedShape> tuned;
  tune::DecisionRule rule;
  std::string command;  // the tune command that reproduces it
  // Whether the runs find `arm` faster than NCCL's default at k beyond noise and min-gain (the rule's
  // "faster", on the evidence tune uses: this size's runs, pooled with neighbours whose ratios agree).
  bool establishes(const jobreplay::JobKey& k, const jobreplay::MeasuredConfig& arm) const;
};
Expected<RunsFindings> tuneOnRuns(const std::string& csv, const DemoOptions& o, const jobreplay::MeasuredJob& job);

// The job's final configurations next to tune's on the same dataset's runs, key by key.
struct TuneAgreement {
  std::string command;   // the tune command that reproduces tune's side
  int agree = 0;         // keys where both run the same configuration
  int undecided = 0;     // keys where they differ because the runs cannot decide (tune undecided)
  int differ = 0;        // keys where tune decided and the job ended elsewhere
  std::vector<std::string> lines;  // one per key that differs, saying why
};
TuneAgreement compareWithTune(const RunsFindings& runs, const std::vector<jobreplay::KeyOutcome>& keys);
void printAgreement(const TuneAgreement& a);

// The default main job, on measurements (demo_measured.cpp), with the plugin at pluginPath; plot
// writes the PNGs of outDir and says so (appended to the last step's line). Returns the exit code.
int runMeasured(const DemoOptions& o, const std::string& pluginPath,
                const std::function<std::string(const std::string& outDir)>& plot);

}  // namespace dynamiccl::cli::demo
