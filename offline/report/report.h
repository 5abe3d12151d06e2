// report: "did it help my job?" from one store or several nodes' stores (`dynamiccl report`). Per
// communicator the store's plugin runs recorded, per key (collective, size bucket): what NCCL runs
// alone and what ran, the measured gain of the deciding verdict with its interval and the samples and
// runs behind it, the collective time that gain saved on the measured calls, what exploring and
// measuring cost, the net; the share of calls that reached the tuner (offline/applied); the rules of
// the profiles the job loaded that answered no call. Only what the store holds: a figure it cannot
// give is said to be not recorded (docs/REPORT.md).
//
//   auto r = report::buildReport({.stores = {"node0.db", "node1.db"}, .profiles = {"verified.json"}});
//   std::cout << report::formatReport(*r);   // or reportJson(*r); writePlotData(*r, "out")
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/applied/applied.h"
#include "policy/policy.h"
#include "store/store.h"

namespace dynamiccl::report {

// The rule of `profile` that answers (coll, bytes) on a communicator of nRanks on nNodes: the first
// whose collective, size (in its key: bytes or bytes per rank), ranks and nodes hold it; nullptr: none
// (NCCL's choice). What the store cannot tell (pipelined ops, registered buffers) is not matched on.
bool ruleMatches(const policy::Rule& rule, Collective coll, uint64_t bytes, int nRanks, int nNodes);
const policy::Rule* ruleFor(const policy::Profile& profile, Collective coll, uint64_t bytes, int nRanks, int nNodes);

// Of several arms verified at a key, the verdict that decided it: promoted, else testing, else dropped;
// among equals the highest gain, the first on a tie. Matched on collective, bucket containing bytes,
// ranks (and nodes unless nNodes is 0). -1: none.
int decidingVerdict(const std::vector<store::VerdictRow>& verdicts, Collective coll, uint64_t bytes, int nRanks,
                    int nNodes = 0);

struct ReportPlan {
  std::vector<std::string> stores;    // read as they are (one per node, or one merged)
  std::vector<std::string> profiles;  // the profiles the job loaded: the store does not name them
  std::string measurementCost;        // a calibration (learner::MeasurementCost JSON); empty: published prices
};

// A configuration as the store names it (stored names: "RING", "SIMPLE"; channels and chunk -1: unknown).
struct Arm {
  std::string algo, proto;
  int channels = -1;
  int64_t chunk = -1;
  bool known() const { return !algo.empty(); }
  bool sameArm(const Arm& o) const { return algo == o.algo && proto == o.proto; }
  std::string label() const;  // "ring/simple"; "not recorded" when unknown
};

// The deciding verdict of a key (the store's latest rows), with the plugin runs that measured the key.
struct Gain {
  Arm candidate, baseline;
  std::string state;  // promoted | testing | dropped
  double gain = NAN, low = NAN, high = NAN;  // speed-up over NCCL's default minus 1, one-sided 95% bounds
  int64_t samples = 0, baseSamples = 0;      // what every job pooled
  int runs = 0;                              // plugin runs (jobs) of the report with measured calls at the key
};

struct KeyReport {
  std::string collective;
  int bucket = 0;
  uint64_t minBytes = 0, maxBytes = 0;  // sizes of its measured calls
  Arm nccl;                // what NCCL runs alone here
  std::string ncclFrom;    // "calls left to NCCL" | "the verdict's baseline" | "" (not recorded)
  Arm ran;                 // the configuration of the key's last measured calls (majority of the last 5)
  int64_t calls = 0;       // measured calls
  double share = 0;        // of the communicator's measured calls
  double time_us = 0;      // their collective time
  bool hasGain = false;
  Gain gain;
  int64_t savedCalls = 0;  // measured calls that ran a promoted candidate
  double saved_us = 0;     // those calls' time x the measured gain; NaN: ran off NCCL's choice, no gain recorded
  int64_t exploreCalls = 0;  // measured calls of neither `ran` nor `nccl`
  double explore_us = 0;     // their mean time's excess over `ran`'s (a faster trial costs nothing)
  double measure_us = 0;     // what profiling the measured calls cost, at the price
  applied::KeyShare reach;   // whether the calls reached the tuner and NCCL ran its choice
  double net_us() const { return (std::isfinite(saved_us) ? saved_us : 0) - explore_us - measure_us; }
};

struct CommReport {
  std::string store;
  int64_t run = 0;
  uint64_t commId = 0;
  int rank = -1, nRanks = 0, nNodes = 0;
  std::string ncclVersion;
  std::string price;  // the measurement price's source
  std::vector<KeyReport> keys;  // by collective, then bucket
  int64_t calls = 0, exploreCalls = 0, savedCalls = 0;
  double time_us = 0, saved_us = 0, explore_us = 0, measure_us = 0;
  int keysWithoutGain = 0;  // keys that ran off NCCL's choice with no verdict: their saving is not recorded
  applied::KeyShare reach;  // every key together
  double net_us() const { return saved_us - explore_us - measure_us; }
};

// A rule of a loaded profile that answered no measured call.
struct UnappliedRule {
  std::string profile, origin;  // the file and "rules[3]"
  std::string text;             // "allreduce 1K..2K, ranks 4-8: tree/ll"
};

struct Report {
  std::vector<CommReport> comms;  // by store, run, communicator, rank
  std::vector<std::string> profiles;
  size_t rulesLoaded = 0;
  std::vector<UnappliedRule> neverApplied;
  std::vector<std::string> notRecorded;  // what the store cannot say, one line each
};

Expected<Report> buildReport(const ReportPlan& plan);
// The words of `text` on lines of at most `width` columns, each line after `indent` (the first after
// `first`) and ending in a newline; a word longer than a line is cut where the line ends. The report's
// terminal text and `dynamiccl demo`'s lines are wrapped by it.
std::string wrapText(const std::string& text, const std::string& first = "", const std::string& indent = "    ",
                     size_t width = 120);
// The terminal's table, no line wider than 120 columns.
std::string formatReport(const Report& report);
std::string reportJson(const Report& report);
// time_saved.csv and decision_map.csv / report_points.csv (scripts/plot_report.py reads them).
Status writePlotData(const Report& report, const std::string& outDir);
// The file names plot_report.py writes into outDir.
inline constexpr const char* kReportPlots = "time_saved.png, decision_map.png";

}  // namespace dynamiccl::report
