// The one recipe every caller of the tuner follows (tune, profile, the demo): make the backends,
// search each communicator shape (per size, or on a cluster by runs), measure undecided sizes
// again, smooth with the decision rule, advise job knobs, and merge the shapes' reports into one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "offline/tune/job_knobs.h"
#include "offline/tune/measurement_backend.h"
#include "offline/tune/run_search.h"
#include "offline/tune/smoothing.h"
#include "offline/tune/tune_report.h"
#include "offline/tune/tuner.h"

namespace dynamiccl::tune {

enum class BackendKind { Simulator, Replay, Runner };

// The runner's search by runs: one nccl-tests run per forced configuration, raced across sizes.
struct RunsPlan {
  std::string fakeCluster;    // a preset: the runs come from the simulator on it, with noise (simulated)
  bool simulatorPrior = true; // candidates in the order of the simulator on TunePlan::simulator's topology
  std::string priorProfile;   // run this profile's configurations first
  bool algoProtoOnly = true;  // NCCL's channels and chunk kept; false: the full space
  int maxRuns = 0, gridRepeats = 3;
};

struct TunePlan {
  BackendKind backend = BackendKind::Simulator;
  SimulatorBackendOptions simulator;  // also the prior of the search by runs
  ReplayBackendOptions replay;
  bool everyShape = true;             // replay: one backend per shape; false: the shape asked for or with most forced rows
  RunnerBackendOptions runner;
  std::optional<RunsPlan> byRuns;     // runner: the search by runs instead of a search per size
  TuneRequest request;                // no collectives: every one the backend measured
  bool measuredOnly = false;          // of request.collectives, those a recorded backend measured
  SmoothingOptions rule;
  int maxRepeats = 0;                 // undecided sizes measured again up to this many repeats (not by runs)
  bool adviseJobKnobs = false;        // NCCL_NTHREADS / NCCL_BUFFSIZE measured where the backend can set them
  std::string name;                   // the profile's; empty: "tuned <backend>", or "tuned N shapes"
};

// One communicator shape, tuned.
struct TunedShape {
  std::string backend;                  // the backend's name
  std::vector<Collective> collectives;  // what was tuned
  TuneResult result;
  SmoothedResult smoothed;
  std::optional<RunSearchResult> runs;  // the search by runs' account (its keys moved into result)
  int measuredAgain = 0;                // undecided sizes measured again
  abi::PickRule target = abi::PickRule::Nccl2_28;  // the release the rules are for
  TuneReport report;
};

struct TunedShapes {
  std::vector<TunedShape> shapes;
  TuneReport merged;  // every shape's rules in one profile; job knobs only where every shape agrees
};
Expected<TunedShapes> tuneShapes(const TunePlan& plan);

}  // namespace dynamiccl::tune
