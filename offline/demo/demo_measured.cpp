// `dynamiccl demo` by default: the main job on real measurements. A dataset's forced sweeps (the
// embedded L40S ones unless --data) give every key's measured configurations; the simulator tunes
// a profile for the dataset's platform (simulated rules: unverified); a job replayed through the
// real plugin (forked ranks, tuner + profiler roles, latencies drawn from the measured repeats)
// verifies that profile; the store's verdicts become verified.json; the table compares, per key,
// what the job ended with against NCCL's default and the measured best.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "offline/demo/demo_steps.h"
#include "offline/files/files.h"
#include "offline/jobreplay/jobreplay.h"
#include "offline/platforms/platforms.h"
#include "offline/report/report.h"
#include "offline/sim/sim.h"
#include "offline/train/train.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {

namespace {

namespace fs = std::filesystem;
constexpr int kSteps = 6;

int fail(const std::string& what) {
  std::fputs(report::wrapText("demo: " + what, "", "    ").c_str(), stderr);
  return 1;
}

std::string pct(double g) { return std::isfinite(g) ? textf("%+.1f%%", 100 * g) : ""; }

// `text` with the system string it quotes ('system') shortened: the shape line says it in full.
std::string quotedShort(std::string text, const std::string& system) {
  const std::string quoted = "'" + system + "'";
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1))
    text.replace(at, quoted.size(), "'" + shortSystem(system) + "'");
  return text;
}

// Step 1: the keys of one shape, with what was measured at each.
void describeJob(const jobreplay::MeasuredJob& job) {
  const fs::path provenance = fs::path(job.source).parent_path() / "PROVENANCE.md";
  const std::string note = fs::exists(provenance) ? " (provenance: PROVENANCE.md beside it)" : "";
  printWrapped(job.source + note);
  size_t configs = 0, repeats = 0;
  std::set<Collective> colls;
  for (const jobreplay::JobKey& k : job.keys) {
    colls.insert(k.coll);
    configs += k.measured.size();
    for (const jobreplay::MeasuredConfig& m : k.measured) repeats += m.samples_us.size();
  }
  std::string collNames;
  for (Collective c : colls) collNames += (collNames.empty() ? "" : ", ") + std::string(collectiveName(c));
  printWrapped(textf("shape: %s, %d ranks on %d node(s); %zu keys (%s, %s .. %s)", job.system.c_str(), job.nRanks,
                     job.nNodes, job.keys.size(), collNames.c_str(), sizeText(job.keys.front().bytes).c_str(),
                     sizeText(job.keys.back().bytes).c_str()));
  printWrapped(textf("%zu measured configurations NCCL's table allows (%zu timings); spread between repeats %.1f%% "
                     "(measured, pooled over %d configurations with repeats)",
                     configs, repeats, 100 * job.repeatSigma, job.repeatGroups));
  for (const std::string& n : job.notes) printWrapped(quotedShort(n, job.system));
}

// What the runs establish, which the replayed job's calls are drawn to show.
void describeWithheld(const jobreplay::MeasuredJob& job, int withheld, const std::string& command) {
  int established = 0, runs = 0, defaultRuns = 0;
  for (const jobreplay::JobKey& k : job.keys)
    for (size_t i = 1; i < k.measured.size(); ++i)
      if (k.measured[i].mean_us < k.byDefault().mean_us && k.measured[i].withheld_us <= 0)
        ++established, runs += k.measured[i].runs(), defaultRuns += k.byDefault().runs();
  // The command itself is said after the table, beside what it decides per key.
  std::string text = textf("the dataset's runs (measured; the decision rule, as `%s` after the table) establish a "
                           "gain over NCCL's default for %d arm(s) (%d real run(s) of them against %d of the default)",
                           command.substr(0, command.find(" --data")).c_str(), established, runs, defaultRuns);
  if (withheld)
    text += textf("; %d arm(s) have a faster median they do not establish: the replayed job draws those around NCCL's "
                  "default's median, so its calls (draws, not runs) cannot find a gain the runs do not hold", withheld);
  printWrapped(text);
}

// The simulator's platform for the job's shape: the one the system string names, or the platform
// calibrated on the same dataset with the shape's GPUs per node (l40s-pcie-2 for 2 ranks).
Expected<std::string> simulatorPlatform(const jobreplay::MeasuredJob& job) {
  auto reg = platforms::registry();
  if (!reg) return makeError(reg.error());
  const platforms::Platform* named = (*reg)->forSystem(job.system);
  if (!named) return makeError(measurements::unknownSystemReason(job.system));
  const int perNode = job.nRanks / job.nNodes;
  if (named->topology.gpusPerNode == perNode) return named->name;
  for (const platforms::Platform& p : (*reg)->all())
    if (p.topology.gpusPerNode == perNode && p.calibration && named->calibration &&
        p.calibration->dataset == named->calibration->dataset)
      return p.name;
  return makeError("no platform with " + std::to_string(perNode) + " GPUs per node is calibrated like " + named->name);
}

// --learned: the platform the system string names (the machine held out of training).
Expected<std::string> namedPlatform(const jobreplay::MeasuredJob& job) {
  auto reg = platforms::registry();
  if (!reg) return makeError(reg.error());
  const platforms::Platform* named = (*reg)->forSystem(job.system);
  if (!named) return makeError(measurements::unknownSystemReason(job.system));
  return named->name;
}

// One row of the table and of job_keys.csv.
struct KeyRow {
  jobreplay::KeyOutcome job;
  std::string simRule = "-";   // the simulator's rule here ("-": none, NCCL's choice)
  double simGain = NAN;        // its gain over NCCL's default, simulated
  std::string verdict = "-";   // in-job verification's state for the candidate
  double verdictGain = NAN;    // measured in the job
  std::string judgedConfig;    // verified.json through the plugin, statically
};

std::vector<KeyRow> tableRows(const jobreplay::MeasuredJob& job, const jobreplay::JobResult& jr,
                              const TunedProfile& tuned, const VerifiedExport& verified, const JudgedProfiles& judged) {
  std::vector<KeyRow> rows;
  for (const jobreplay::KeyOutcome& k : jr.keys) {
    KeyRow row;
    row.job = k;
    if (const policy::Rule* r = report::ruleFor(tuned.profile, k.coll, k.bytes, job.nRanks, job.nNodes)) {
      row.simRule = decisionLabel(r->decision);
      if (r->evidence) row.simGain = r->evidence->gain;
    }
    // Several arms were tried per key: show the one that decided the key (as `dynamiccl report` does).
    if (const int at = report::decidingVerdict(verified.rows, k.coll, k.bytes, job.nRanks); at >= 0) {
      const JobVerdict& shown = verified.verdicts[static_cast<size_t>(at)];
      row.verdict = shown.candidate + " " + shown.state, row.verdictGain = shown.gain;
    }
    for (const PointResult& p : judged.points)
      if (p.coll == k.coll && p.bytes == k.bytes) row.judgedConfig = armLabel(p.decision);
    rows.push_back(std::move(row));
  }
  return rows;
}

struct Totals {
  double geoVsDefault = 1, geoVsBest = 1, worstVsDefault = 0, worstVsBest = 0;
  int withinOnePercent = 0, judgedAgrees = 0, promoted = 0;
  int withinOnePercentChoosable = 0, bestIsDefaultsTwin = 0;
  int withinOnePercentEstablished = 0;  // of the best the runs establish (a withheld gain is none)
  // The whole job, learning included: every call as drawn plus what measuring cost, against the same
  // calls at NCCL's default unprofiled (KeyOutcome::netVsDefault); overall and the worst key.
  double netVsDefault = 1, worstNetVsDefault = 0;
};

Totals totals(const std::vector<KeyRow>& rows) {
  Totals t;
  double lD = 0, lB = 0, jobNet = 0, jobDefault = 0;
  for (const KeyRow& r : rows) {
    lD += std::log(r.job.vsDefault());
    lB += std::log(r.job.vsBest());
    t.worstVsDefault = std::max(t.worstVsDefault, r.job.vsDefault());
    t.worstVsBest = std::max(t.worstVsBest, r.job.vsBest());
    t.withinOnePercent += r.job.vsBest() <= 1.01;
    t.withinOnePercentChoosable += r.job.vsBestChoosable <= 1.01;
    t.withinOnePercentEstablished += r.job.vsBestEstablished <= 1.01;
    t.bestIsDefaultsTwin += r.job.bestIsDefaultsTwin();
    t.worstNetVsDefault = std::max(t.worstNetVsDefault, r.job.netVsDefault());
    jobNet += r.job.job_us;
    jobDefault += r.job.jobDefault_us;
    t.judgedAgrees += r.judgedConfig == armLabel(r.job.finalConfig);
    t.promoted += r.verdict.find("promoted") != std::string::npos;
  }
  if (!rows.empty()) t.geoVsDefault = std::exp(lD / rows.size()), t.geoVsBest = std::exp(lB / rows.size());
  if (jobDefault > 0) t.netVsDefault = jobNet / jobDefault;
  return t;
}

// NCCL's default as the table names it: "*" where the runs refuted the model's pick and it was inferred.
std::string defaultLabel(const jobreplay::KeyOutcome& k) {
  return armLabel(k.ncclDefault) + (measurements::inferredFromRuns(k.defaultSettledBy) ? "*" : "");
}

// A time of the table: five characters up to 100 ms, as precise as they allow.
std::string usText(double v) { return textf(v < 100 ? "%.2f" : v < 1000 ? "%.1f" : "%.0f", v); }

// The table's cells of one key; `sim` is the simulator's rule without its chunk size (the rule in
// full: tuned.json, job_keys.csv, --verbose).
struct TableCells {
  std::string key, defaultConfig, default_us, sim, simGain, verdict, verdictGain, finalConfig, vsDefault, bestConfig,
      vsBest;
};

std::vector<TableCells> tableCells(const std::vector<KeyRow>& rows, const TunedProfile& tuned,
                                   const jobreplay::MeasuredJob& job, bool oneCollective) {
  std::vector<TableCells> cells;
  for (const KeyRow& r : rows) {
    const jobreplay::KeyOutcome& k = r.job;
    TableCells c;
    c.key = oneCollective ? sizeText(k.bytes) : std::string(collectiveName(k.coll)) + " " + sizeText(k.bytes);
    c.defaultConfig = defaultLabel(k);
    c.default_us = usText(k.default_us);
    if (const policy::Rule* rule = report::ruleFor(tuned.profile, k.coll, k.bytes, job.nRanks, job.nNodes))
      c.sim = decisionLabel(policy::Decision{rule->decision.algo, rule->decision.proto, rule->decision.nChannels, 0});
    else c.sim = "-";
    c.simGain = pct(r.simGain);
    c.verdict = r.verdict;
    c.verdictGain = pct(r.verdictGain);
    // Configurations with their channel count where the rows forced one ("ring/ll ch=56").
    c.finalConfig = decisionLabel(k.finalConfig);
    c.vsDefault = textf("%.3f", k.vsDefault());
    c.bestConfig = decisionLabel(k.best);
    c.vsBest = textf("%.3f", k.vsBest());
    cells.push_back(std::move(c));
  }
  return cells;
}

void printTable(const jobreplay::MeasuredJob& job, const std::vector<KeyRow>& rows, const Totals& t,
                const jobreplay::JobResult& jr, const TunedProfile& tuned) {
  std::set<Collective> colls;
  bool anyRule = false, anyChunk = false;
  for (const KeyRow& r : rows) colls.insert(r.job.coll), anyRule = anyRule || r.simRule != "-";
  for (const policy::Rule& r : tuned.profile.rules) anyChunk = anyChunk || r.decision.chunkBytes > 0;
  const bool oneCollective = colls.size() == 1;
  const std::vector<TableCells> cells = tableCells(rows, tuned, job, oneCollective);
  // Columns as wide as their widest cell, so a long verdict or rule never shifts the row; groups two
  // spaces apart.
  auto widest = [&](size_t least, std::string TableCells::*cell) {
    for (const TableCells& c : cells) least = std::max(least, (c.*cell).size());
    return least;
  };
  const size_t wKey = widest(oneCollective ? 4 : 3, &TableCells::key), wDef = widest(6, &TableCells::defaultConfig),
               wDefUs = widest(2, &TableCells::default_us), wSim = widest(6, &TableCells::sim),
               wSimGain = widest(4, &TableCells::simGain), wVerdict = widest(15, &TableCells::verdict),
               wVerdictGain = widest(4, &TableCells::verdictGain), wFinal = widest(6, &TableCells::finalConfig),
               wBest = widest(6, &TableCells::bestConfig);
  constexpr size_t wRatio = 6;  // "x NCCL", "0.958"
  struct Group {
    std::string title;
    size_t width;
  };
  std::vector<Group> groups = {{"NCCL default", std::max<size_t>(12, wDef + 1 + wDefUs)},
                               {"simulator's rule", std::max<size_t>(16, wSim + 1 + wSimGain)},
                               {"in-job verdict", std::max<size_t>(14, wVerdict + 1 + wVerdictGain)},
                               {"job's final epoch", std::max<size_t>(17, wFinal + 1 + wRatio)},
                               {"measured best", std::max<size_t>(13, wBest + 1 + wRatio)}};
  size_t width = 2 + wKey;
  for (const Group& g : groups) width += 2 + g.width;
  // The simulator's column only where it has a rule and fits in 120 columns (else job_keys.csv has it).
  const bool simColumn = anyRule && width <= 120;
  const bool simDropped = anyRule && !simColumn;
  if (!simColumn) groups.erase(groups.begin() + 1);

  std::printf("\n");
  // "Per key on ...: times are measured medians" on its first line, whatever the system (tests read it).
  printWrapped("Per key on " + std::to_string(job.nRanks) + " x " + shortSystem(job.system) +
                   ": times are measured medians of repeats (us) of the dataset" +
                   (oneCollective ? " (the keys: " + std::string(collectiveName(*colls.begin())) + " by size)" : "") +
                   (simColumn ? std::string("; the simulator's gain is simulated") +
                                    (anyChunk ? " (its rules here without their chunk size: tuned.json has them)" : "")
                              : "") +
                   (simDropped ? "; the simulator's rule per key is in job_keys.csv (sim_rule, sim_gain): the table "
                                 "has no room for it"
                               : "") +
                   "; verdicts and exploration come from the replayed job, whose calls are draws from noise fitted to "
                   "the dataset's real runs (how many runs stand behind each verdict: verdicts.txt); x NCCL, x best: "
                   "the final epoch's time over NCCL's default's and over the best's.",
               "  ", "    ");
  auto line = [](std::string text) {
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::printf("%s\n", text.c_str());
  };
  std::string head = textf("  %-*s", int(wKey), "");
  for (const Group& g : groups) head += textf("  %-*s", int(g.width), g.title.c_str());
  line(head);
  auto pair = [](const std::string& a, size_t wa, const std::string& b, size_t groupWidth) {
    return textf("  %-*s %*s", int(wa), a.c_str(), int(groupWidth - wa - 1), b.c_str());
  };
  std::string sub = textf("  %-*s", int(wKey), oneCollective ? "size" : "key");
  size_t g = 0;
  sub += pair("config", wDef, "us", groups[g++].width);
  if (simColumn) sub += pair("config", wSim, "gain", groups[g++].width);
  sub += pair("candidate state", wVerdict, "gain", groups[g++].width);
  sub += pair("config", wFinal, "x NCCL", groups[g++].width);
  sub += pair("config", wBest, "x best", groups[g++].width);
  line(sub);
  for (const TableCells& c : cells) {
    std::string row = textf("  %-*s", int(wKey), c.key.c_str());
    g = 0;
    row += pair(c.defaultConfig, wDef, c.default_us, groups[g++].width);
    if (simColumn) row += pair(c.sim, wSim, c.simGain, groups[g++].width);
    row += pair(c.verdict, wVerdict, c.verdictGain, groups[g++].width);
    row += pair(c.finalConfig, wFinal, c.vsDefault, groups[g++].width);
    row += pair(c.bestConfig, wBest, c.vsBest, groups[g++].width);
    line(row);
  }
  auto say = [](const std::string& text) { printWrapped(text, "  ", "    "); };
  if (job.keysSettled(measurements::DefaultSettledBy::Matched) + job.keysSettled(measurements::DefaultSettledBy::Unforced) > 0)
    say("* NCCL's choice inferred from the runs: the forced runs of the configuration NCCL's model picks differ from "
        "the default rows beyond noise (step 1), so that configuration is an arm the job tests");
  const jobreplay::RankOutcome& r0 = jr.ranks.front();
  say(textf("job's final epoch over %zu keys (judged on measured medians): vs NCCL default geomean %.3fx (worst %.3fx), "
            "vs measured best geomean %.3fx (worst %.3fx); %d/%zu keys within 1.01x of the best (what learning cost: the "
            "net line below)",
            rows.size(), t.geoVsDefault, t.worstVsDefault, t.geoVsBest, t.worstVsBest, t.withinOnePercent, rows.size()));
  if (t.withinOnePercentEstablished != t.withinOnePercent)
    say(textf("of the best the dataset's runs establish (a median faster than the job's choice that the runs cannot tell "
              "from it is no measured gain, step 1): %d/%zu keys within 1.01x",
              t.withinOnePercentEstablished, rows.size()));
  if (t.bestIsDefaultsTwin > 0)
    say(textf("at %d key(s) the measured best is a forced run of the configuration NCCL's model says NCCL runs, faster "
              "than the default runs beyond their noise: NCCL ran something else there (a real job's cost table would "
              "show it) or the runs drifted; the replayed table follows the model, so the job's verification cannot test "
              "that arm apart from NCCL's default. Within 1.01x of the best arm it can test (judged on measured medians): "
              "%d/%zu keys",
              t.bestIsDefaultsTwin, t.withinOnePercentChoosable, rows.size()));
  say(textf("exploration: %llu calls per rank ran off their epoch's choice for the key, costing %.2f%% of collective time "
            "(replayed: calls drawn from noise fitted to the real runs; %.0f of %.0f us; a faster trial costs nothing)",
            static_cast<unsigned long long>(r0.exploreCalls), 100 * r0.exploreShare(), r0.explore_us, r0.total_us));
  {  // Measuring costs the job: only the leader profiles, at the release's price, counted in the net figure.
    uint64_t others = 0;
    for (size_t i = 1; i < jr.ranks.size(); ++i) others += jr.ranks[i].profiledCalls;
    say(textf("measurement: the leader profiled %llu of %llu calls (%.2f%%; the last 10 epochs %.2f%%), the other ranks "
              "%llu, costing %.3f%% of collective time (priced by %s)",
              static_cast<unsigned long long>(r0.profiledCalls), static_cast<unsigned long long>(r0.calls),
              100 * r0.profiledShare(), 100 * r0.settledProfiledShare(10, jr.epochCalls),
              static_cast<unsigned long long>(others), 100 * r0.measureShare(),
              jobreplay::defaultMeasurementCost().source().c_str()));
    say(textf("net of measuring and exploring, the whole job ran %.4fx NCCL's default (replayed: the same calls, drawn "
              "alike from noise fitted to the real runs; worst key %.4fx)",
              t.netVsDefault, t.worstNetVsDefault));
  }
  {  // The search per key: trials until the measured best had been tried, against trying every arm.
    int keys = 0, atDefault = 0, never = 0, trials = 0, every = 0, tried = 0;
    for (const KeyRow& row : rows) {
      const jobreplay::KeyOutcome& k = row.job;
      if (k.alternatives <= 0) continue;
      ++keys, every += k.alternatives, tried += k.tried;
      if (k.trialsToBest == 0) ++atDefault;
      else if (k.trialsToBest < 0) ++never;
      else trials += k.trialsToBest;
    }
    say(textf("search (measured, per rank): %d keys with alternatives; the best arm it can test is NCCL's default at %d, "
              "found after %d trial(s) in all at %d, never tried at %d; %d of %d alternatives tried (trying every arm: "
              "%d trials)",
              keys, atDefault, trials, keys - atDefault - never, never, tried, every, every));
  }
  bool channelsForced = false;  // rows that force a channel count: the job measured channel arms from them
  for (const jobreplay::JobKey& k : job.keys)
    for (const jobreplay::MeasuredConfig& m : k.measured) channelsForced = channelsForced || m.config.nChannels > 0;
  say(channelsForced ? "channel counts are arms here (the rows force them): the job searched them; chunk sizes no row "
                       "varies, so none was tried"
                     : "no row here forces a channel count or chunk: a rule that keeps NCCL's algorithm and protocol "
                       "changes only those, which the job cannot time here, so it cannot verify it");
  say(textf("verified.json through the plugin alone (as `dynamiccl replay`): the job's final configuration at %d/%zu keys",
            t.judgedAgrees, rows.size()));
  std::printf("\n");
}

Status writeKeysCsv(const std::vector<KeyRow>& rows, const std::string& path) {
  std::string csv =
      "collective,bytes,default_config,default_us,sim_rule,sim_gain,verdict,verdict_gain,final_config,final_us,"
      "final_vs_default,best_config,best_us,final_vs_best,verified_replay_config,alternatives,tried,trials_to_best\n";
  for (const KeyRow& r : rows) {
    const jobreplay::KeyOutcome& k = r.job;
    csv += std::string(collectiveName(k.coll)) + "," + std::to_string(k.bytes) + "," +
           armLabel(k.ncclDefault) + "," + textf("%.3f", k.default_us) + "," + r.simRule + "," +
           (std::isfinite(r.simGain) ? textf("%.4f", r.simGain) : "") + "," + r.verdict + "," +
           (std::isfinite(r.verdictGain) ? textf("%.4f", r.verdictGain) : "") + "," +
           armLabel(k.finalConfig) + "," + textf("%.3f", k.final_us) + "," + textf("%.4f", k.vsDefault()) +
           "," + armLabel(k.best) + "," + textf("%.3f", k.best_us) + "," + textf("%.4f", k.vsBest()) + "," +
           r.judgedConfig + "," + std::to_string(k.alternatives) + "," + std::to_string(k.tried) + "," +
           std::to_string(k.trialsToBest) + "\n";
  }
  return files::writeFile(path, csv);
}

// replay_points.csv and decision_map.csv in the simulated demo's layout, for the same plots.
Status writePlotCsvs(const jobreplay::MeasuredJob& job, const std::vector<KeyRow>& rows, const std::string& outDir) {
  JudgedProfiles r;
  for (const KeyRow& row : rows) {
    const jobreplay::KeyOutcome& k = row.job;
    r.points.push_back({"NCCL default", k.coll, k.bytes, armLabel(k.ncclDefault), k.default_us,
                        k.default_us, k.best_us, k.ncclDefault, job.nRanks});
    r.points.push_back({"verified in job", k.coll, k.bytes, armLabel(k.finalConfig), k.final_us, k.default_us,
                        k.best_us, k.finalConfig, job.nRanks});
  }
  return writeJudgedCsvs(r, job.nRanks, outDir, "verified in job");
}

// One job of the run (the demo runs the next jobs on the same store): what it ended with and what it paid.
struct JobFigures {
  int index = 1;
  double finalVsDefault = 1;       // final epoch, geomean over keys of the measured medians
  double profiledShare = 0, settledProfiledShare = 0;  // the leader's, all and the last 10 epochs
  double measureShare = 0, exploreShare = 0;            // of collective time
  double net = 1;                  // the whole job against the same calls at NCCL's default
  int keys = -1, keysSearching = -1;  // the leader's search at the job's end
};

JobFigures jobFigures(const jobreplay::JobResult& jr, int index) {
  JobFigures f;
  f.index = index;
  const jobreplay::RankOutcome& r0 = jr.ranks.front();
  double logSum = 0, job = 0, nccl = 0;
  for (const jobreplay::KeyOutcome& k : jr.keys) logSum += std::log(k.vsDefault()), job += k.job_us, nccl += k.jobDefault_us;
  if (!jr.keys.empty()) f.finalVsDefault = std::exp(logSum / static_cast<double>(jr.keys.size()));
  f.profiledShare = r0.profiledShare();
  f.settledProfiledShare = r0.settledProfiledShare(10, jr.epochCalls);
  f.measureShare = r0.measureShare();
  f.exploreShare = r0.exploreShare();
  if (nccl > 0) f.net = job / nccl;
  f.keys = r0.keysAtEnd;
  f.keysSearching = r0.keysSearching;
  return f;
}

void printJobFigures(const JobFigures& f) {
  printWrapped(textf("job %d: final epoch %.3fx NCCL's default (geomean of keys, judged on measured medians); the "
                     "leader profiled %.2f%% of calls (last 10 epochs %.2f%%), measuring %.3f%% and exploring %.3f%% of "
                     "the replayed collective time; net of measuring and exploring %.4fx NCCL's default; keys still "
                     "searching at the end: %s",
                     f.index, f.finalVsDefault, 100 * f.profiledShare, 100 * f.settledProfiledShare,
                     100 * f.measureShare, 100 * f.exploreShare, f.net,
                     f.keys >= 0 ? (std::to_string(f.keysSearching) + " of " + std::to_string(f.keys)).c_str()
                                 : "not said"));
  std::fflush(stdout);
}

Status writeSummary(const jobreplay::MeasuredJob& job, const jobreplay::JobResult& jr, const TunedProfile& tuned,
                    const VerifiedExport& verified, const std::vector<KeyRow>& rows, const Totals& t, bool learned,
                    const std::vector<JobFigures>& jobs, const std::string& path) {
  nlohmann::json doc;
  doc["mode"] = "measured";
  doc["dataset"] = job.source;
  doc["shape"] = {{"system", job.system}, {"nRanks", job.nRanks}, {"nNodes", job.nNodes}};
  doc["repeat_sigma"] = job.repeatSigma;
  if (!learned)
    doc["tuner"] = {{"simulated", true},
                  {"rules", tuned.profile.rules.size()},
                  {"spent_iterations", tuned.spentIterations},
                  {"grid_iterations", tuned.gridIterations}};
  const jobreplay::RankOutcome& r0 = jr.ranks.front();
  nlohmann::json ranks = nlohmann::json::array();
  for (const jobreplay::RankOutcome& r : jr.ranks)
    ranks.push_back({{"rank", r.rank}, {"finished", r.finished}, {"failure", r.failure}, {"hash", r.decisionHash},
                     {"explore_share", r.exploreShare()}, {"explore_calls", r.exploreCalls},
                {"profiled_calls", r.profiledCalls},
                     {"unmeasured_calls", r.unmeasuredCalls}});
  doc["job"] = {{"ranks", job.nRanks},           {"calls_per_rank", jr.callsPerRank},
                {"all_finished", jr.allFinished}, {"ranks_agree", jr.ranksAgree},
                {"explore_share", r0.exploreShare()}, {"explore_calls", r0.exploreCalls}, {"total_us", r0.total_us},
                {"measure_share", r0.measureShare()}, {"measure_us", r0.measure_us},
                {"profiled_share", r0.profiledShare()},
                {"settled_profiled_share", r0.settledProfiledShare(10, jr.epochCalls)},
                {"measurement_price", jobreplay::defaultMeasurementCost().source()},
                {"wall_s", jr.wall_s},             {"per_rank", ranks}};
  nlohmann::json perJob = nlohmann::json::array();
  for (const JobFigures& f : jobs)
    perJob.push_back({{"job", f.index},
                      {"final_vs_default", f.finalVsDefault},
                      {"profiled_share", f.profiledShare},
                      {"settled_profiled_share", f.settledProfiledShare},
                      {"measure_share", f.measureShare},
                      {"explore_share", f.exploreShare},
                      {"net_vs_default", f.net},
                      {"keys", f.keys},
                      {"keys_searching", f.keysSearching}});
  doc["jobs"] = perJob;  // one after another on the same store: each the next job of the one before
  int promoted = 0, dropped = 0;
  for (const JobVerdict& v : verified.verdicts) promoted += v.state == "promoted", dropped += v.state == "dropped";
  doc["profile"] = learned ? "learned" : "tuned";
  doc["verified"] = {{"path", verified.path},         {"rules", verified.rules}, {"verdicts", verified.verdicts.size()},
                     {"promoted", promoted},           {"dropped", dropped}};
  nlohmann::json keys = nlohmann::json::array();
  for (const KeyRow& r : rows) {
    const jobreplay::KeyOutcome& k = r.job;
    size_t measuredConfigs = 0;  // 1: NCCL's default alone, nothing to choose
    for (const jobreplay::JobKey& jk : job.keys)
      if (jk.coll == k.coll && jk.bytes == k.bytes) measuredConfigs = jk.measured.size();
    keys.push_back({{"collective", collectiveName(k.coll)},
                    {"bytes", k.bytes},
                    {"measured_configs", measuredConfigs},
                    {"default_config", armLabel(k.ncclDefault)},
                    {"default_settled_by", measurements::defaultSettledByName(k.defaultSettledBy)},
                    {"default_us", k.default_us},
                    {"sim_rule", r.simRule},
                    {"sim_gain", std::isfinite(r.simGain) ? nlohmann::json(r.simGain) : nlohmann::json()},
                    {"verdict", r.verdict},
                    {"final_config", armLabel(k.finalConfig)},
                    {"final_us", k.final_us},
                    {"best_config", armLabel(k.best)},
                    {"best_us", k.best_us},
                    {"vs_default", k.vsDefault()},
                    {"net_vs_default", k.netVsDefault()},
                    {"profiled_calls", k.profiled},
                    {"vs_best", k.vsBest()},
                    {"vs_established_best", k.vsBestEstablished},
                    {"verified_replay_config", r.judgedConfig}});
  }
  doc["keys"] = keys;
  doc["totals"] = {{"geomean_vs_default", t.geoVsDefault}, {"worst_vs_default", t.worstVsDefault},
                   {"geomean_vs_best", t.geoVsBest},       {"worst_vs_best", t.worstVsBest},
                   {"within_1pct_of_best", t.withinOnePercent}, {"replay_agrees", t.judgedAgrees},
                   {"within_1pct_of_choosable_best", t.withinOnePercentChoosable},
                   {"within_1pct_of_established_best", t.withinOnePercentEstablished},
                   {"best_is_defaults_twin", t.bestIsDefaultsTwin},
                   {"net_vs_default", t.netVsDefault}, {"worst_key_net_vs_default", t.worstNetVsDefault},
                   {"keys", rows.size()}};
  return files::writeFile(path, doc.dump(2) + "\n");
}

// --learned, step 2: the learned network's profile for the dataset's hardware, trained on simulator
// rollouts and the other datasets' measurements with the dataset's machine held out (never trained on
// what the job judges it by). Its rules are generated per communicator; the job verifies them.
Expected<std::string> trainLearnedForJob(const DemoOptions& o, const jobreplay::MeasuredJob& job,
                                         const std::string& csv, const std::string& platform) {
  StepTimer s2(2, kSteps, "Train the learned policy (simulator rollouts + other machines' measurements), holding out " +
                              platform + "'s machine");
  DemoOptions to = o;
  to.preset = platform;
  to.nodes = job.nNodes;
  to.data = csv;  // the fingerprint of the hardware the job runs on, and its machine held out
  const LearnedProfile learned = trainProfile(to, o.out, model::clusterHardwareOf(job.topology));
  for (const std::string& n : learned.notes) printWrapped(n);
  if (!learned.failed.empty()) return makeError(learned.failed);
  if (!learned.trained) return makeError("learned profile not trained: " + learned.skipped);
  s2.done("learned.json: the network's rules only (unverified), fingerprint of " + shortSystem(job.system));
  return learned.profilePath;
}

// Step 2: the profile the job verifies: none (the job searches alone), the learned network's, or
// the simulator's candidates for the dataset's platform.
struct JobProfile {
  TunedProfile tuned;  // the simulator's rules (none with --learned: the network's are generated in the job)
  std::string path, name;
};
Expected<JobProfile> profileForJob(const DemoOptions& o, const jobreplay::MeasuredJob& job, const std::string& csv,
                                   const Expected<std::string>& platform, const std::vector<Collective>& colls,
                                   const std::vector<uint64_t>& sizes) {
  const fs::path out(o.out);
  JobProfile p;
  if (!platform) {
    StepTimer s2(2, kSteps, "Tune on the simulator: skipped (" + quotedShort(platform.error(), job.system) + ")");
    p.path = (out / "tuned.json").string();
    p.name = "no profile (the job searches NCCL's alternatives: DYNAMICCL_VERIFY=1)";
    p.tuned.profile.name = "none";
    if (auto s = files::writeFile(p.path, policy::profileToJson(p.tuned.profile)); !s) return makeError(s.error());
    s2.done("no simulated rule: every configuration NCCL's table allows is a candidate the job measures");
    return p;
  }
  if (o.learned) {
    auto learned = trainLearnedForJob(o, job, csv, *platform);
    if (!learned) return makeError(learned.error());
    p.path = *learned;
    p.name = "learned.json";
    return p;
  }
  StepTimer s2(2, kSteps, "Tune on the simulator (simulated): TPE + Hyperband for " + *platform + " at the measured sizes");
  DemoOptions so = o;
  so.preset = *platform;
  so.nodes = job.nNodes;
  auto cluster = makeCluster(so);
  if (!cluster) return makeError(cluster.error());
  const std::string paramsPath = (out / "sim-params.json").string();
  if (auto s = files::writeFile(paramsPath, sim::paramsToJson(cluster->params)); !s) return makeError(s.error());
  printWrapped("simulator: " + cluster->paramsSource);
  auto tunedOr = tuneOnSimulator(o, *platform, job.nNodes, paramsPath, colls, sizes, true);
  if (!tunedOr) return makeError("tune: " + tunedOr.error());
  p.tuned = std::move(*tunedOr);
  const TunedProfile& tuned = p.tuned;
  printWrapped(std::string("candidates: a rule wherever the simulator estimates a gain over NCCL's default (no guard: "
                           "the job verifies)") + (o.verbose ? "" : "; each in tuned.json (--verbose: here)"));
  for (const policy::Rule& r : tuned.profile.rules)
    if (o.verbose)
      printWrapped(textf("%s %s: %s, %s (simulated)",
                         r.collective ? std::string(collectiveName(*r.collective)).c_str() : "any",
                         sizeRangeText(r.minBytes, r.maxBytes).c_str(), decisionLabel(r.decision).c_str(),
                         r.evidence ? pct(r.evidence->gain).c_str() : "no evidence"));
  p.path = (out / "tuned.json").string();
  p.name = "tuned.json";
  if (auto s = files::writeFile(p.path, policy::profileToJson(tuned.profile)); !s) return makeError(s.error());
  if (auto s = files::writeFile((out / "tune-report.json").string(), tuned.reportJson); !s) return makeError(s.error());
  if (auto back = policy::loadProfileFile(p.path); !back) return makeError(p.path + " does not load: " + back.error());
  s2.done("tuned.json: " + std::to_string(tuned.profile.rules.size()) + " rules, simulated (unverified); " +
          std::to_string(tuned.spentIterations) + " simulated iterations (" +
          textf("%.1f%%", 100.0 * tuned.spentIterations / std::max<int64_t>(1, tuned.gridIterations)) +
          " of the exhaustive grid)");
  return p;
}

// Step 3: the job replayed through the real plugin, verifying the profile; every rank must finish
// with the same decisions.
// index: 1 for the first job, which starts the store afresh; the next ones run on what it left.
Expected<jobreplay::JobResult> runJob(const DemoOptions& o, const jobreplay::MeasuredJob& job, const std::string& pluginPath,
                                      const JobProfile& profile, bool searchOnly, const fs::path& workDir,
                                      const std::string& storePath, int index) {
  StepTimer s3(3, kSteps, "Replayed job " + std::to_string(index) + " of " + std::to_string(o.jobs) + ": " +
                              std::to_string(job.nRanks) +
                              " ranks (processes) through the real plugin, tuner + profiler roles, verifying " + profile.name +
                              (index > 1 ? " (the next job: the same store)" : ""));
  std::error_code ec;
  fs::create_directories(workDir, ec);
  if (index == 1)
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(storePath + suffix, ec);  // every demo starts afresh
  jobreplay::JobOptions jo;
  jo.pluginPath = pluginPath;
  jo.iterations = o.iterations ? o.iterations : o.quick ? 1000 : 4000;
  jo.seed = o.seed + static_cast<uint64_t>(index - 1);  // the next job draws its own calls
  jo.env = verificationEnv(profile.path, storePath);
  if (searchOnly) jo.env.emplace_back("DYNAMICCL_VERIFY", "1");  // asked for: no rule to verify, the search alone
  if (o.online) jo.env.emplace_back("DYNAMICCL_ONLINE", "1");  // opted in: learning beyond the candidates
  jo.workDir = workDir.string();
  jo.timeout_s = o.quick ? 90 : 300;
  if (measurements::measuredOnRccl(job.system))
    std::printf("      %s\n", measurements::kRcclRulesLine);
  jo.progress = [](const std::string& line) {
    printWrapped(line);
    std::fflush(stdout);
  };
  if (index == 1)
    printWrapped(textf("plugin %s; %llu passes over the keys, epoch %llu calls; rank logs and store in %s/",
                       pluginPath.c_str(), static_cast<unsigned long long>(jo.iterations),
                       static_cast<unsigned long long>(jo.epochCalls), workDir.string().c_str()));
  else printWrapped("the same plugin, passes and store; rank logs in " + workDir.string() + "/");
  std::fflush(stdout);
  auto jr = jobreplay::replayJob(job, jo);
  if (!jr) return makeError("job: " + jr.error());
  for (const jobreplay::RankOutcome& r : jr->ranks)
    if (!r.finished) printWrapped("rank " + std::to_string(r.rank) + " failed: " + r.failure);
  if (!jr->allFinished) return makeError("the replayed job did not finish on every rank");
  if (!jr->ranksAgree) return makeError("ranks decided differently: the plugin broke its first invariant");
  uint64_t unmeasured = 0;
  for (const jobreplay::RankOutcome& r : jr->ranks) unmeasured += r.unmeasuredCalls;
  s3.done(std::to_string(jr->callsPerRank) + " calls per rank; every rank made the same decisions; " +
          std::to_string(jr->ranks.front().exploreCalls) + " exploring calls costing " +
          textf("%.2f%%", 100 * jr->ranks.front().exploreShare()) + " of collective time" +
          (index == 1 ? " (replayed: calls drawn from noise fitted to the real runs)" : "") +
          (unmeasured ? "; " + std::to_string(unmeasured) + " calls ran an unmeasured configuration" : ""));
  return jr;
}

// Step 4: the job's verdicts exported as verified.json, each said with the real runs behind it.
Expected<VerifiedExport> exportJob(const jobreplay::MeasuredJob& job, const std::string& storePath, const fs::path& out,
                                   bool verbose) {
  StepTimer s4(4, kSteps, "Export: the job's verdicts as a verified profile (as `dynamiccl export --from-store`)");
  const bool hardwareUnknown = !job.standIn.empty();
  auto verified = exportVerified(storePath, (out / "verified.json").string(), hardwareUnknown);
  if (!verified) return makeError("export: " + verified.error());
  if (hardwareUnknown)
    printWrapped("no platform describes the measured machine, so the replayed host showed " + job.standIn +
                 "'s facts: verified.json's rules carry no fingerprint, and a job on the machine tests them before they "
                 "count (DYNAMICCL_TRUST=all applies them at once)");
  // The samples of a verdict are the job's calls, each a draw from the dataset's repeats: say how many
  // real runs stand behind each side, so nobody reads thousands of draws as thousands of measurements.
  auto realRuns = [&](const JobVerdict& v) {
    for (const jobreplay::JobKey& k : job.keys)
      if (k.coll == v.coll && v.minBytes <= k.bytes && k.bytes <= v.maxBytes)
        for (const jobreplay::MeasuredConfig& m : k.measured)
          if (m.forced && armLabel(m.config) == v.candidate)
            return "; real runs behind it: " + std::to_string(m.runs()) + " of the candidate, " +
                   std::to_string(k.byDefault().runs()) + " of NCCL's default" +
                   (m.withheld_us > 0 ? " (they do not establish its faster median, so the job drew it at NCCL's default's)"
                                      : "");
    return std::string("; no real run of the candidate at this size");
  };
  // One line per verdict is more than a newcomer reads before the table: they go to a file.
  std::string lines;
  for (const JobVerdict& v : verified->verdicts) lines += v.line + realRuns(v) + "\n";
  const std::string verdictsPath = (out / "verdicts.txt").string();
  if (auto s = files::writeFile(verdictsPath, lines); !s) return makeError(s.error());
  if (verbose)
    for (const JobVerdict& v : verified->verdicts) printWrapped(v.line + realRuns(v));
  else printWrapped("each verdict with the real runs behind it: " + verdictsPath + " (--verbose: here)");
  s4.done("verified.json: " + std::to_string(verified->rules) + " verified rules from " +
          std::to_string(verified->verdicts.size()) + " verdicts (loads back)");
  return verified;
}

// The check that the exported profile carries what the job learned: keys where verified.json runs
// neither the job's final configuration nor its last promotion. A promotion at the job's last table
// build (published for a boundary the job never reached) is carried though the job never ran it.
int keysExportLost(const std::vector<KeyRow>& rows) {
  int wrong = 0;
  for (const KeyRow& r : rows) {
    if (r.judgedConfig == armLabel(r.job.finalConfig)) continue;
    if (r.verdict == r.judgedConfig + " promoted") {
      printWrapped(textf("%s %s: promoted at the job's last table build, after its final epoch began: verified.json "
                         "runs %s, the job never did",
                         std::string(collectiveName(r.job.coll)).c_str(), sizeText(r.job.bytes).c_str(),
                         r.judgedConfig.c_str()),
                   "  ", "    ");
    } else {
      ++wrong;
      printWrapped(textf("%s %s: verified.json runs %s; the job ended with %s (in-job verdict: %s)",
                         std::string(collectiveName(r.job.coll)).c_str(), sizeText(r.job.bytes).c_str(),
                         r.judgedConfig.c_str(), armLabel(r.job.finalConfig).c_str(), r.verdict.c_str()),
                   "  ", "    ");
    }
  }
  return wrong;
}

}  // namespace

int runMeasured(const DemoOptions& o, const std::string& pluginPath,
                const std::function<std::string(const std::string& outDir)>& plot) {
  const std::string csv = o.data.empty() ? train::embeddedDataset() : o.data;
  const fs::path out(o.out);

  StepTimer s1(1, kSteps, "Load measurements (measured): " + std::string(o.data.empty() ? "the embedded L40S sweeps" : "--data"));
  auto job = jobreplay::loadMeasuredJob(csv, {o.ranks, 0, o.system});
  if (!job) return fail(job.error());
  describeJob(*job);
  // The dataset's runs decide what the replayed job can find: draws stand for calls, not runs.
  auto runs = tuneOnRuns(csv, o, *job);
  if (!runs) return fail("tune on the dataset's runs: " + runs.error());
  const int withheld = job->withholdGains(
      [&](const jobreplay::JobKey& k, const jobreplay::MeasuredConfig& m) { return runs->establishes(k, m); });
  describeWithheld(*job, withheld, runs->command);
  s1.done(std::to_string(job->keys.size()) + " keys of one communicator shape");

  auto platform = simulatorPlatform(*job);
  if (!platform && o.learned) platform = namedPlatform(*job);  // no simulator tuning: the machine's name suffices
  // No calibrated platform for this shape: the measurements still decide. The simulator's proposals
  // are skipped and the job searches NCCL's own alternatives at every key (DYNAMICCL_VERIFY=1).
  const bool searchOnly = !platform;
  std::set<Collective> collSet;
  std::vector<uint64_t> sizes;
  for (const jobreplay::JobKey& k : job->keys) collSet.insert(k.coll), sizes.push_back(k.bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const std::vector<Collective> colls(collSet.begin(), collSet.end());
  auto profile = profileForJob(o, *job, csv, platform, colls, sizes);
  if (!profile) return fail(profile.error());
  const TunedProfile& tuned = profile->tuned;

  // The jobs share one store, as the next job on the same cluster does: the first job's verdicts and
  // the evidence of its undecided candidates are where the next one starts.
  const fs::path workDir = out / "job";
  const std::string storePath = (workDir / "store.db").string();
  std::vector<JobFigures> perJob;
  auto jr = runJob(o, *job, pluginPath, *profile, searchOnly, workDir, storePath, 1);
  if (!jr) return fail(jr.error());
  perJob.push_back(jobFigures(*jr, 1));
  printJobFigures(perJob.back());
  for (int j = 2; j <= o.jobs; ++j) {
    auto next = runJob(o, *job, pluginPath, *profile, searchOnly, out / ("job" + std::to_string(j)), storePath, j);
    if (!next) return fail(next.error());
    perJob.push_back(jobFigures(*next, j));
    printJobFigures(perJob.back());  // the table below is the first job's: the one that learns
  }
  auto verified = exportJob(*job, storePath, out, o.verbose);
  if (!verified) return fail(verified.error());

  StepTimer s5(5, kSteps, "Check: verified.json through the real plugin alone, judged on the measurements");
  // Rules without a fingerprint (unknown hardware) apply at once only when the user trusts them.
  const std::string trust = job->standIn.empty() ? "verified" : "all";
  auto replayed = judgeOnData(csv, {{"verified", verified->path}}, colls, pluginPath, trust, job->nRanks);
  if (!replayed) return fail("replay: " + replayed.error());
  const std::vector<KeyRow> rows = tableRows(*job, *jr, tuned, *verified, *replayed);
  const Totals t = totals(rows);
  s5.done(std::to_string(t.judgedAgrees) + "/" + std::to_string(rows.size()) +
          " keys run the job's final configuration (DYNAMICCL_TRUST=" + trust +
          (trust == "verified" ? ": the rules apply as verified)" : ": rules without a fingerprint apply when trusted)"));
  printTable(*job, rows, t, *jr, tuned);
  printAgreement(compareWithTune(*runs, jr->keys));
  // The exported profile must carry what the job learned: a failure fails the command.
  if (const int wrong = keysExportLost(rows))
    return fail("check failed: verified.json through the plugin alone runs neither the job's final configuration nor "
                "its last promotion at " + std::to_string(wrong) + " of " + std::to_string(rows.size()) + " keys");
  if (o.learned) {
    int promoted = 0, dropped = 0;
    for (const JobVerdict& v : verified->verdicts) promoted += v.state == "promoted", dropped += v.state == "dropped";
    printWrapped(textf("learned profile (no simulator rules, so the table has no simulator's column), verified in the "
                       "replayed job: %d candidates promoted, %d dropped, %zu verdicts; ranks agree: %s",
                       promoted, dropped, verified->verdicts.size(), jr->ranksAgree ? "yes" : "no"),
                 "  ", "    ");
    std::printf("\n");
  }

  StepTimer s6(6, kSteps, "Files and plots");
  if (auto s = writeKeysCsv(rows, (out / "job_keys.csv").string()); !s) return fail(s.error());
  if (auto s = writePlotCsvs(*job, rows, out.string()); !s) return fail(s.error());
  if (auto s = writeSummary(*job, *jr, tuned, *verified, rows, t, o.learned, perJob, (out / "summary.json").string()); !s)
    return fail(s.error());
  s6.done("job_keys.csv, summary.json, replay_points.csv, decision_map.csv" + plot(out.string()));
  return 0;
}

}  // namespace dynamiccl::cli::demo
