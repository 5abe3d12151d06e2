// dynamiccl-lab demo: the simulated demo, on a simulated cluster (h800, 4 x 8 GPUs by default): it
// simulates NCCL's defaults, tunes a profile (TPE + Hyperband), trains the learned policy, exports
// both, judges them through the real plugin on the simulator, verifies the learned profile in a
// simulated job, and plots the outcome. The product's demo (`dynamiccl demo`) runs on measurements.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "lab/cli/commands.h"
#include "lab/demo/demo.h"
#include "offline/cli/cli.h"
#include "offline/files/files.h"
#include "policy/policy.h"
#include "offline/sim/sim.h"

namespace dynamiccl::cli {
namespace {

using demo::DemoOptions;

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// Step 1 on the simulator: NCCL's default per (collective, size) and its simulated time.
Status simulateDefaults(const demo::DemoCluster& cl, const std::string& outDir) {
  const sim::Simulator simulator(cl.topology, cl.params);
  auto file = files::OutputFile::open((std::filesystem::path(outDir) / "nccl_default.csv").string());
  if (!file) return makeError(file.error());
  std::ostream& csv = (*file)->stream();
  csv << "collective,bytes,config,time_us\n";
  for (Collective coll : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter})
    for (uint64_t bytes = 4096; bytes <= (uint64_t(1) << 30); bytes *= 2) {
      const sim::Config def = cl.nccl->defaultConfig(coll, bytes);
      csv << collectiveName(coll) << "," << bytes << "," << decisionLabel(def) << ","
          << simulator.time_us(coll, bytes, def) << "\n";
    }
  if (auto s = (*file)->close(); !s) return s;
  const uint64_t mib = 1 << 20;
  const sim::Config def = cl.nccl->defaultConfig(Collective::AllReduce, mib);
  std::printf("      %s: %d ranks / %d nodes, NVLink:NIC %.0f:1; simulator: %s\n", cl.topology.name.c_str(),
              cl.topology.nRanks(), cl.topology.nNodes, cl.topology.nvlinkToNicRatio(), cl.paramsSource.c_str());
  std::printf("      e.g. allreduce 1M: NCCL picks %s, %.1f us (simulated)\n", decisionLabel(def).c_str(),
              simulator.time_us(Collective::AllReduce, mib, def));
  return Ok{};
}

// Step 1 with --data: what the dataset holds.
Status summarizeData(const std::string& csv) {
  auto loaded = measurements::loadMeasurements(csv);
  if (!loaded) return makeError(loaded.error());
  auto data = measurements::buildReplayData(loaded->rows);
  if (!data) return makeError(data.error());
  std::printf("      %s: %zu rows, %zu communicator shapes, %zu (collective, size) points\n", csv.c_str(),
              loaded->rows.size(), data->shapes.size(), data->points.size());
  for (const std::string& line : measurements::describeSkipped(data->skipped)) std::printf("      %s\n", line.c_str());
  return Ok{};
}

// Step 4: the tuned profile in our JSON, NVIDIA's CSV and the tune report; each must load back.
Status exportTuned(const demo::TunedProfile& t, const std::string& outDir) {
  namespace fs = std::filesystem;
  const std::string json = (fs::path(outDir) / "tuned.json").string();
  const std::string csv = (fs::path(outDir) / "tuned-nvidia.conf").string();
  if (auto s = files::writeFile(json, policy::profileToJson(t.profile)); !s) return s;
  if (auto s = files::writeFile(csv, policy::profileToNvidiaCsv(t.profile)); !s) return s;
  if (auto s = files::writeFile((fs::path(outDir) / "tune-report.json").string(), t.reportJson); !s) return s;
  if (auto p = policy::loadProfileFile(json); !p) return makeError(json + " does not load: " + p.error());
  if (auto p = policy::loadProfileFile(csv, policy::ProfileFormat::NvidiaCsv); !p)
    return makeError(csv + " does not load: " + p.error());
  return Ok{};
}

int fail(const std::string& what) {
  std::cerr << "demo: " << what << "\n";
  return 1;
}

// The PNGs of outDir, as the last step's status says it.
std::string plot(const DemoOptions& o, const std::string& outDir) { return demoPlots(o.noPlots, outDir); }

int runSimulated(const DemoOptions& o) {
  namespace fs = std::filesystem;

  auto cluster = demo::makeCluster(o);
  if (!cluster) return fail(cluster.error());
  const std::string paramsPath = (fs::path(o.out) / "sim-params.json").string();
  if (auto s = files::writeFile(paramsPath, sim::paramsToJson(cluster->params)); !s) return fail(s.error());

  demo::StepTimer s1(1, o.data.empty() ? "Simulate: NCCL's default per collective and size" : "Load measurements");
  if (auto st = o.data.empty() ? simulateDefaults(*cluster, o.out) : summarizeData(o.data); !st) return fail(st.error());
  s1.done("ok");

  demo::StepTimer s2(2, "Tune: TPE + Hyperband per (collective, size), smoothing + guard vs NCCL's default");
  auto tuned = demo::tuneProfile(o, paramsPath);
  if (!tuned) return fail("tune: " + tuned.error());
  s2.done(std::to_string(tuned->profile.rules.size()) + " rules; " + std::to_string(tuned->spentIterations) +
          (o.data.empty() ? " timed iterations on the simulator (" : " measured iterations replayed (") + fmt("%.1f%%", 100.0 * tuned->spentIterations / std::max<int64_t>(1, tuned->gridIterations)) +
          " of the exhaustive grid)");

  demo::StepTimer s3(3, "Train: learned policy (LibTorch), holding out " + o.preset);
  const demo::LearnedProfile learned = demo::trainProfile(o, o.out);
  if (!learned.failed.empty()) return fail(learned.failed);
  for (const std::string& n : learned.notes) std::printf("      %s\n", n.c_str());
  s3.done(learned.trained ? "wrote " + learned.profilePath : "skipped: " + learned.skipped);

  demo::StepTimer s4(4, "Export profiles");
  if (auto st = exportTuned(*tuned, o.out); !st) return fail(st.error());
  s4.done("tuned.json, tuned-nvidia.conf, tune-report.json" + std::string(learned.trained ? ", learned.json" : "") +
          " (all load back)");

  const std::string plugin = locatePlugin(o.plugin);
  demo::StepTimer s5(5, "Replay: every decision through the real plugin (" + plugin + ")");
  std::vector<demo::ProfileToJudge> profiles = {{"NCCL default", ""},
                                                 {"tuned", (fs::path(o.out) / "tuned.json").string()}};
  if (learned.trained) profiles.push_back({"learned", learned.profilePath});
  auto replayed = o.data.empty()
                      ? demo::judgeOnSimulator(*cluster, profiles, tuned->collectives, tuned->sizes, plugin)
                      : demo::judgeOnData(o.data, profiles, tuned->collectives, plugin);
  if (!replayed) return fail("replay: " + replayed.error());
  s5.done(std::to_string(replayed->points.size()) + " decisions judged on the " + replayed->judge +
          " (unverified rules applied: DYNAMICCL_TRUST=all)");
  demo::printScoreTable(*replayed, *tuned);

  // The learned profile's rules are unverified: the profile the main job emits is what a job
  // verified of them (the simulator standing in for measurements here).
  if (learned.trained && o.data.empty()) {
    demo::StepTimer s5b(5, "Learned, as the job emits it: its rules verified in a job on the simulated cluster while "
                           "the network learns in the job (simulated)");
    auto lj = demo::verifyLearnedInSimulatedJob(o, *cluster, learned.profilePath, tuned->collectives, tuned->sizes,
                                                plugin);
    if (!lj) return fail("learned job: " + lj.error());
    demo::printLearnedJob(*lj);
    s5b.done(lj->verifiedPath + ": " + std::to_string(lj->promoted) + " rules verified in the job (simulated)");
  }

  demo::StepTimer s6(6, "Plots and the CSVs behind them");
  if (auto st = demo::writeJudgedCsvs(*replayed, cluster->topology.nRanks(), o.out); !st) return fail(st.error());
  if (auto st = demo::writeSummaryJson(*replayed, *tuned, (fs::path(o.out) / "summary.json").string()); !st)
    return fail(st.error());
  s6.done("replay_points.csv, decision_map.csv, summary.json" + plot(o, o.out));
  return 0;
}

}  // namespace

void addDemoCommand(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  o->simulated = true;
  CLI::App* cmd = app.add_subcommand("demo",
                                     "The simulated demo: simulate, tune, train, export, judge through the real plugin on "
                                     "the simulator, verify the learned profile in a simulated job, plot");
  addPlatformOption(cmd);
  cmd->add_option("--preset", o->preset, "sim preset of the cluster (" + [] {
    std::string s;
    for (const auto& n : sim::presetNames()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }() + ")");
  cmd->add_option("--nodes", o->nodes, "nodes of the cluster")->check(CLI::Range(1, 512));
  cmd->add_option("--data", o->data, "normalized.csv: tune and judge on these measurements instead of the simulator");
  cmd->add_option("--db", o->db, "SQLite store of observations to train from as well");
  cmd->add_option("--out", o->out, "output folder");
  cmd->add_option("--plugin", o->plugin, "plugin library (default: the build tree's)");
  cmd->add_option("--seed", o->seed, "seed (simulator noise, TPE, training)");
  cmd->add_flag("--quick", o->quick, "smaller budgets (what the test runs)");
  cmd->add_flag("--verbose", o->verbose, "print each simulated candidate (always in tuned.json)");
  cmd->add_flag("--no-plots", o->noPlots, "skip the PNGs");
  cmd->callback([o] {
    namespace fs = std::filesystem;
    const auto start = std::chrono::steady_clock::now();
    std::error_code ec;
    fs::create_directories(o->out, ec);
    if (ec) throw CLI::RuntimeError(fail("cannot create " + o->out + ": " + ec.message()));
    std::printf("dynamiccl-lab demo%s, simulated cluster %s x %d nodes: output in %s/\n", o->quick ? " (quick)" : "",
                o->preset.c_str(), o->nodes, o->out.c_str());
    if (const int rc = runSimulated(*o); rc != 0) throw CLI::RuntimeError(rc);
    std::printf("done in %.1f s; files in %s/\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), o->out.c_str());
  });
}

}  // namespace dynamiccl::cli
