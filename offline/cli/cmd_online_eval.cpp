// `dynamiccl online-eval`: the online learner's loop per key, 10k calls, against the static
// profile and NCCL's default, in the calibrated simulator and (--data) on real measurements
// resampled by sim::MeasuredEnvironment. Prints exploration cost, final ratio to the best and the
// recovery after an injected drift; writes a CSV trace and plots it (scripts/plot_online_eval.py).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/files/files.h"
#include "offline/cli/plot_runner.h"
#include "policy/policy.h"
#include "offline/sim/sim.h"
#include "offline/train/train.h"

namespace dynamiccl::cli {
namespace {

struct OnlineEvalOptions {
  std::string preset = "dgx-h100", out = "online_eval.csv", png = "online_eval.png", data;
  int nodes = 1;
  uint64_t calls = 10000, epoch = 500;
  bool noModelPrior = false, uncalibrated = false;
};

// One key's world: its arms, their true mean latency, noisy samples, and NCCL's view of it.
struct KeyWorld {
  std::string source, label;  // "sim"/"data", "allreduce 1048576"
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  sim::Config ncclDefault;
  std::vector<sim::Config> arms;  // what can run here (measured, or feasible in the simulator)
  model::CostTable costTable{};   // NCCL's table at getCollInfo; arms nobody can run are IGNORE (-1)
  std::function<double(const sim::Config&)> mean_us;                  // < 0: cannot run
  std::function<std::optional<double>(const sim::Config&)> sample_us;  // nullopt: cannot run
};

struct KeyResult {
  double exploreShare = 0, finalRatio = 0, staticFinalRatio = 0, defaultFinalRatio = 0;
  int64_t recoveryCalls = -1;
};

bool sameArm(const sim::Config& a, const sim::Config& b) { return a.algo == b.algo && a.proto == b.proto; }

sim::Config toConfig(const policy::Decision& d, const KeyWorld& w) {
  if (d.keepsAlgoProto()) return w.ncclDefault;
  for (const sim::Config& a : w.arms)
    if (a.algo == d.algo && a.proto == d.proto) return a;  // the arm as the world runs it
  return d;
}

KeyResult evalKey(const KeyWorld& w, const OnlineEvalOptions& o, std::ostream& trace) {
  const uint64_t driftAt = o.calls / 2;
  const double driftFactor = 2.0;
  // The static profile: the best arm before the drift (what an offline tuner would have written).
  sim::Config staticBest = w.arms.front();
  for (const auto& c : w.arms)
    if (w.mean_us(c) < w.mean_us(staticBest)) staticBest = c;
  auto drift = [&](const sim::Config& c, uint64_t k) { return k >= driftAt && sameArm(c, staticBest) ? driftFactor : 1.0; };
  auto truth = [&](const sim::Config& c, uint64_t k) { return w.mean_us(c) * drift(c, k); };
  auto bestAt = [&](uint64_t k) {
    double b = INFINITY;
    for (const auto& c : w.arms) b = std::min(b, truth(c, k));
    return b;
  };
  policy::OnlineLearner learner({.epochCalls = o.epoch}, [&](int, int) {
    policy::Candidates c;
    c.count = 1;
    c.decisions[0] = {staticBest.algo, staticBest.proto, 0, 0};
    return c;
  });
  const int coll = static_cast<int>(w.coll), bucket = SizeBucket::of(w.bytes);
  learner.setNcclDefault(coll, bucket, w.ncclDefault.algo, w.ncclDefault.proto);
  if (!o.noModelPrior) learner.setModelledCost(coll, bucket, &w.costTable[0][0]);
  std::unique_ptr<policy::OnlineTable> table;
  double total = 0, exploreExtra = 0, lastOnline = 0, lastStatic = 0, lastDefault = 0, lastBest = 0;
  KeyResult r;
  for (uint64_t k = 0; k < o.calls; ++k) {
    if (k % o.epoch == 0) table = learner.build(k / o.epoch);
    const policy::Candidates* picked = table->pick(coll, w.bytes, 0xc0ffee, k);
    const policy::OnlineEntry& e = table->entry(policy::onlineKey(coll, w.bytes));
    // Nothing learned yet for the key: the static profile answers, as in the plugin.
    const sim::Config exploit = e.exploit.count ? toConfig(e.exploit.decisions[0], w) : staticBest;
    // The plugin's fall-through: a candidate NCCL cannot run (IGNORE) yields to the next one.
    sim::Config ran = exploit;
    std::optional<double> sample;
    for (int i = 0; picked && i < picked->count && !sample; ++i) {
      ran = toConfig(picked->decisions[i], w);
      if (w.costTable[int(ran.algo)][int(ran.proto)] >= 0) sample = w.sample_us(ran);
    }
    if (!sample) ran = exploit, sample = w.sample_us(exploit);
    if (!sample) continue;
    const double lat = *sample * drift(ran, k);
    learner.observe(coll, w.bytes, ran.algo, ran.proto, lat);
    total += lat;
    if (!sameArm(ran, exploit)) exploreExtra += std::max(0.0, truth(ran, k) - truth(exploit, k));
    if (k >= driftAt && r.recoveryCalls < 0 && truth(exploit, k) <= 1.05 * bestAt(k))
      r.recoveryCalls = static_cast<int64_t>(k - driftAt);
    if (k + 1000 >= o.calls) {
      lastOnline += truth(ran, k);
      lastStatic += truth(staticBest, k);
      lastDefault += truth(w.ncclDefault, k);
      lastBest += bestAt(k);
    }
    if (k % 50 == 0)
      trace << w.source << ',' << w.label << ',' << k << ',' << truth(ran, k) / bestAt(k) << ','
            << truth(staticBest, k) / bestAt(k) << ',' << truth(w.ncclDefault, k) / bestAt(k) << '\n';
  }
  r.exploreShare = total > 0 ? exploreExtra / total : 0;
  r.finalRatio = lastOnline / lastBest;
  r.staticFinalRatio = lastStatic / lastBest;
  r.defaultFinalRatio = lastDefault / lastBest;
  return r;
}

// The simulator's keys: ring/tree x LL/LL128/Simple as the hardware allows, calibrated times.
std::vector<KeyWorld> simulatedKeys(const sim::Simulator& s, const sim::NcclReference& ref) {
  const std::pair<Collective, uint64_t> keys[] = {{Collective::AllReduce, 4096},     {Collective::AllReduce, 65536},
                                                  {Collective::AllReduce, 1 << 20},  {Collective::AllReduce, 16 << 20},
                                                  {Collective::AllReduce, 256 << 20}, {Collective::AllGather, 1 << 20}};
  std::vector<KeyWorld> out;
  for (auto [coll, bytes] : keys) {
    KeyWorld w;
    w.source = "sim";
    w.label = std::string(collectiveName(coll)) + " " + std::to_string(bytes);
    w.coll = coll;
    w.bytes = bytes;
    w.ncclDefault = ref.defaultConfig(coll, bytes);
    w.costTable = ref.costTable(coll, bytes);
    for (Algo a : {Algo::Ring, Algo::Tree})
      for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple})
        if (s.feasible(coll, {a, p, 0, 0}) && s.time_us(coll, bytes, {a, p, 0, 0}) > 0 && w.costTable[int(a)][int(p)] >= 0)
          w.arms.push_back({a, p, 0, 0});
    if (w.ncclDefault.algo != Algo::Default && std::none_of(w.arms.begin(), w.arms.end(), [&](const sim::Config& c) {
          return sameArm(c, w.ncclDefault);
        }))
      w.arms.push_back(w.ncclDefault);
    if (w.arms.empty()) continue;
    w.mean_us = [&s, coll, bytes](const sim::Config& c) { return s.time_us(coll, bytes, c); };
    auto env = std::make_shared<sim::SimulatedEnvironment>(s, bytes ^ 0x5eed);
    w.sample_us = [env, coll, bytes](const sim::Config& c) { return env->latency_us(coll, bytes, c); };
    out.push_back(std::move(w));
  }
  return out;
}

// Measured keys: points with at least three measured (algo, proto), at up to five sizes per shape
// spread over the measured range; arms nobody measured are IGNORE in the table handed over.
std::vector<KeyWorld> measuredKeys(const sim::ReplayData& data) {
  std::map<const sim::Shape*, std::vector<const sim::ReplayPoint*>> byShape;
  for (const sim::ReplayPoint& p : data.points)
    if (p.forced_us.size() + (p.default_us > 0 && !p.forced_us.count({p.ncclDefault.algo, p.ncclDefault.proto})) >= 3)
      byShape[p.shape].push_back(&p);
  std::vector<KeyWorld> out;
  for (auto& [shape, points] : byShape) {
    std::sort(points.begin(), points.end(), [](auto* a, auto* b) { return a->bytes < b->bytes; });
    std::vector<const sim::ReplayPoint*> picked;
    for (double f : {0.1, 0.35, 0.55, 0.75, 0.98}) {
      const sim::ReplayPoint* p = points[static_cast<size_t>(f * (points.size() - 1))];
      if (picked.empty() || picked.back() != p) picked.push_back(p);
    }
    for (const sim::ReplayPoint* p : picked) {
      KeyWorld w;
      w.source = "data";
      w.label = std::string(collectiveName(p->coll)) + " " + std::to_string(p->bytes) + " " +
                std::to_string(shape->nRanks) + "r";
      w.coll = p->coll;
      w.bytes = p->bytes;
      w.ncclDefault = p->ncclDefault;
      w.costTable = shape->nccl->costTable(p->coll, p->bytes);
      std::map<std::pair<Algo, Proto>, double> measured = p->forced_us;
      if (p->default_us > 0) measured[{p->ncclDefault.algo, p->ncclDefault.proto}] = p->default_us;
      for (int a = 0; a < kNumAlgos; ++a)
        for (int q = 0; q < kNumProtos; ++q)
          if (!measured.count({Algo(a), Proto(q)})) w.costTable[a][q] = -1.0f;
      // Arms: measured and allowed by NCCL's table (the tuner cannot pick an IGNORE entry, e.g. LL128 on PCIe).
      for (const auto& [ap, t] : measured)
        if (w.costTable[int(ap.first)][int(ap.second)] >= 0) w.arms.push_back({ap.first, ap.second, 0, 0});
      if (w.arms.size() < 2) continue;  // nothing to choose among
      w.mean_us = [measured](const sim::Config& c) {
        auto it = measured.find({c.algo, c.proto});
        return it == measured.end() ? -1.0 : it->second;
      };
      auto env = std::make_shared<sim::MeasuredEnvironment>(data, p->group, shape->nRanks, shape->nNodes, p->bytes ^ 0xda7a);
      const Collective coll = p->coll;
      const uint64_t bytes = p->bytes;
      w.sample_us = [env, coll, bytes](const sim::Config& c) { return env->latency_us(coll, bytes, c); };
      out.push_back(std::move(w));
    }
  }
  return out;
}

void printTable(const std::vector<KeyWorld>& keys, const OnlineEvalOptions& o, std::ostream& trace) {
  std::printf("%-28s %12s %12s %12s %13s %15s\n", "key", "explore_cost", "online/best", "static/best", "default/best",
              "recovery_calls");
  double worst = 0;
  for (const KeyWorld& w : keys) {
    const KeyResult r = evalKey(w, o, trace);
    worst = std::max(worst, r.exploreShare);
    std::printf("%-28s %11.3f%% %12.4f %12.4f %13.4f %15lld\n", w.label.c_str(), 100 * r.exploreShare, r.finalRatio,
                r.staticFinalRatio, r.defaultFinalRatio, static_cast<long long>(r.recoveryCalls));
  }
  std::printf("worst exploration cost %.3f%% of collective time (target <= %.0f%%)\n", 100 * worst,
              100 * policy::OnlineConfig{}.exploreTimeShare);
}

int run(const OnlineEvalOptions& o) {
  auto topo = sim::preset(o.preset, o.nodes);
  if (!topo) return std::cerr << "online-eval: " << topo.error() << "\n", 1;
  const train::CalibratedParams cal =
      o.uncalibrated ? train::CalibratedParams{sim::SimParams{}, "defaults (--uncalibrated)"} : train::calibratedParams(o.preset);
  const sim::Simulator s(*topo, cal.params);
  auto ref = sim::NcclReference::create(*topo);
  if (!ref) return std::cerr << "online-eval: " << ref.error() << "\n", 1;
  auto traceFile = files::OutputFile::open(o.out);
  if (!traceFile) return std::cerr << "online-eval: " << traceFile.error() << "\n", 1;
  std::ostream& trace = (*traceFile)->stream();
  trace << "source,key,call,online_ratio,static_ratio,default_ratio\n";
  std::printf("%llu calls per key, epoch %llu, drift: the static choice becomes 2x slower at call %llu; prior for "
              "untried arms: %s\n",
              static_cast<unsigned long long>(o.calls), static_cast<unsigned long long>(o.epoch),
              static_cast<unsigned long long>(o.calls / 2),
              o.noModelPrior ? "2x slower (--no-model-prior)" : "NCCL's cost table");
  std::printf("== simulator: %s x%d (calibration %s)\n", o.preset.c_str(), o.nodes, cal.source.c_str());
  printTable(simulatedKeys(s, *ref), o, trace);
  if (!o.data.empty()) {
    auto loaded = sim::loadMeasurements(o.data);
    if (!loaded) return std::cerr << "online-eval: " << loaded.error() << "\n", 1;
    auto data = sim::buildReplayData(loaded->rows);
    if (!data) return std::cerr << "online-eval: " << data.error() << "\n", 1;
    const std::vector<KeyWorld> keys = measuredKeys(*data);
    std::printf("== measurements: %s (resampled with MeasuredEnvironment; %zu keys; arms = measured configs NCCL's table allows)\n",
                o.data.c_str(), keys.size());
    if (keys.empty()) std::printf("no point has three measured configurations: nothing to learn among\n");
    else printTable(keys, o, trace);
  }
  if (auto s = (*traceFile)->close(); !s) return std::cerr << "online-eval: " << s.error() << "\n", 1;
  std::printf("trace: %s\n", o.out.c_str());
  if (!o.png.empty()) {
    if (auto plotted = runPlotScript("plot_online_eval.py", {o.out, o.png}); !plotted)
      return std::cerr << "online-eval: " << plotted.error() << "\n", 1;
    if (!std::filesystem::exists(o.png) || std::filesystem::file_size(o.png) == 0)
      return std::cerr << "online-eval: the plot script did not write " << o.png << "\n", 1;
    std::printf("plot: %s\n", o.png.c_str());
  }
  return 0;
}

}  // namespace

void addOnlineEvalCommand(CLI::App& app) {
  auto o = std::make_shared<OnlineEvalOptions>();
  auto* cmd = app.add_subcommand("online-eval",
                                 "online learning in the simulator and on measurements: exploration cost, ratio to best, drift recovery");
  addPlatformOption(cmd);
  cmd->add_option("--preset", o->preset, "topology preset");
  cmd->add_option("--nodes", o->nodes, "nodes of the preset")->check(CLI::Range(1, 512));
  cmd->add_option("--data", o->data, "also replay on a normalized.csv (shared/data/<dataset>/normalized.csv)");
  cmd->add_option("--out", o->out, "CSV trace");
  cmd->add_option("--png", o->png, "plot of the trace (scripts/plot_online_eval.py); empty: none");
  cmd->add_option("--calls", o->calls, "calls per key")->check(CLI::Range(1000, 10000000));
  cmd->add_option("--epoch", o->epoch, "calls per table version")->check(CLI::Range(10, 1000000));
  cmd->add_flag("--no-model-prior", o->noModelPrior, "assume untried arms 2x slower instead of NCCL's cost table");
  cmd->add_flag("--uncalibrated", o->uncalibrated, "simulator defaults instead of offline/platforms/calibration");
  cmd->callback([o] {
    if (int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
