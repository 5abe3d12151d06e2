// `dynamiccl online-eval`: the online learner in the simulator, 10k calls per key, against the
// static profile and NCCL's default; prints exploration cost, final ratio to the best and the
// recovery time after an injected drift, and writes a CSV for scripts/plot_online_eval.py.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>

#include "offline/commands.h"
#include "policy/policy.h"
#include "sim/nccl_reference.h"
#include "sim/simulator.h"
#include "sim/topology_presets.h"

namespace dynamiccl::cli {
namespace {

struct KeyResult {
  double exploreShare = 0, finalRatio = 0, staticFinalRatio = 0, defaultFinalRatio = 0;
  int64_t recoveryCalls = -1;
};

sim::Config toConfig(const policy::Decision& d, const sim::Config& ncclDefault) {
  if (d.keepsAlgoProto() || (d.algo == ncclDefault.algo && d.proto == ncclDefault.proto && d.nChannels == 0))
    return ncclDefault;  // NCCL's own (algo, proto) runs with NCCL's own channels
  return sim::Config{d.algo, d.proto, d.nChannels, d.chunkBytes};
}

KeyResult evalKey(const sim::Simulator& s, const sim::NcclReference& ref, Collective coll, uint64_t bytes,
                  uint64_t calls, uint64_t epoch, uint64_t driftAt, double driftFactor, std::ostream& trace) {
  const sim::Config def = ref.defaultConfig(coll, bytes);
  std::vector<sim::Config> arms;
  for (Algo a : {Algo::Ring, Algo::Tree})
    for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple})
      if (s.feasible(coll, {a, p, 0, 0}) && s.time_us(coll, bytes, {a, p, 0, 0}) > 0) arms.push_back({a, p, 0, 0});
  // The static profile: the best arm before the drift (what an offline tuner would have written).
  if (std::find(arms.begin(), arms.end(), def) == arms.end() && def.algo != Algo::Default) arms.push_back(def);
  sim::Config staticBest = arms.front();
  for (const auto& c : arms)
    if (s.time_us(coll, bytes, c) < s.time_us(coll, bytes, staticBest)) staticBest = c;
  auto truth = [&](const sim::Config& c, uint64_t k) {
    const double t = s.time_us(coll, bytes, c);
    return k >= driftAt && c == staticBest ? t * driftFactor : t;  // the drift hits the static choice
  };
  auto bestAt = [&](uint64_t k) {
    double b = truth(arms.front(), k);
    for (const auto& c : arms) b = std::min(b, truth(c, k));
    return b;
  };
  policy::OnlineLearner learner({.epochCalls = epoch}, [&](int, int) {
    policy::Candidates c;
    c.count = 1;
    c.decisions[0] = {staticBest.algo, staticBest.proto, 0, 0};
    return c;
  });
  learner.setNcclDefault(static_cast<int>(coll), SizeBucket::of(bytes), def.algo, def.proto);
  sim::NoiseSource noise(bytes ^ 0x5eed);
  std::unique_ptr<policy::OnlineTable> table;
  double total = 0, exploreExtra = 0, lastOnline = 0, lastStatic = 0, lastDefault = 0, lastBest = 0;
  KeyResult r;
  for (uint64_t k = 0; k < calls; ++k) {
    if (k % epoch == 0) table = learner.build(k / epoch);
    const policy::Candidates* picked = table->pick(static_cast<int>(coll), bytes, 0xc0ffee, k);
    const policy::OnlineEntry& e = table->entry(policy::onlineKey(static_cast<int>(coll), bytes));
    // Nothing learned yet for the key: the static profile answers, as in the plugin.
    const sim::Config exploit = e.exploit.count ? toConfig(e.exploit.decisions[0], def) : staticBest;
    const sim::Config ran = picked ? toConfig(picked->decisions[0], def) : exploit;
    const double lat = s.sample_us(coll, bytes, ran, noise) * (truth(ran, k) / s.time_us(coll, bytes, ran));
    learner.observe(static_cast<int>(coll), bytes, ran.algo, ran.proto, lat);
    total += lat;
    if (!(ran == exploit)) exploreExtra += std::max(0.0, truth(ran, k) - truth(exploit, k));
    if (k >= driftAt && r.recoveryCalls < 0 && truth(exploit, k) <= 1.05 * bestAt(k))
      r.recoveryCalls = static_cast<int64_t>(k - driftAt);
    if (k + 1000 >= calls) {
      lastOnline += truth(ran, k);
      lastStatic += truth(staticBest, k);
      lastDefault += truth(def, k);
      lastBest += bestAt(k);
    }
    if (k % 50 == 0)
      trace << collectiveName(coll) << ',' << bytes << ',' << k << ',' << truth(ran, k) / bestAt(k) << ','
            << truth(staticBest, k) / bestAt(k) << ',' << truth(def, k) / bestAt(k) << '\n';
  }
  r.exploreShare = exploreExtra / total;
  r.finalRatio = lastOnline / lastBest;
  r.staticFinalRatio = lastStatic / lastBest;
  r.defaultFinalRatio = lastDefault / lastBest;
  return r;
}

}  // namespace

void addOnlineEvalCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("online-eval", "online learning in the simulator: exploration cost, ratio to best, drift recovery");
  auto presetName = std::make_shared<std::string>("dgx-h100");
  auto out = std::make_shared<std::string>("online_eval.csv");
  auto calls = std::make_shared<uint64_t>(10000);
  auto epoch = std::make_shared<uint64_t>(500);
  cmd->add_option("--preset", *presetName, "topology preset");
  cmd->add_option("--out", *out, "CSV trace for scripts/plot_online_eval.py");
  cmd->add_option("--calls", *calls, "calls per key")->check(CLI::Range(1000, 10000000));
  cmd->add_option("--epoch", *epoch, "calls per table version")->check(CLI::Range(10, 1000000));
  cmd->callback([=] {
    auto topo = sim::preset(*presetName);
    if (!topo) {
      std::cerr << "online-eval: " << topo.error() << "\n";
      throw CLI::RuntimeError(1);
    }
    sim::Simulator s(*topo);
    auto ref = sim::NcclReference::create(*topo);
    if (!ref) {
      std::cerr << "online-eval: " << ref.error() << "\n";
      throw CLI::RuntimeError(1);
    }
    std::ofstream trace(*out);
    trace << "collective,bytes,call,online_ratio,static_ratio,default_ratio\n";
    std::cout << "preset " << *presetName << ", " << *calls << " calls per key, epoch " << *epoch
              << ", drift: the static choice becomes 2x slower at call " << *calls / 2 << "\n"
              << std::left << std::setw(24) << "key" << std::setw(14) << "explore_cost" << std::setw(14)
              << "online/best" << std::setw(14) << "static/best" << std::setw(14) << "default/best"
              << "recovery_calls\n";
    double worstExplore = 0;
    for (auto [coll, bytes] : std::vector<std::pair<Collective, uint64_t>>{{Collective::AllReduce, 4096},
                                                                          {Collective::AllReduce, 65536},
                                                                          {Collective::AllReduce, 1 << 20},
                                                                          {Collective::AllReduce, 16 << 20},
                                                                          {Collective::AllReduce, 256 << 20},
                                                                          {Collective::AllGather, 1 << 20}}) {
      const KeyResult r = evalKey(s, *ref, coll, bytes, *calls, *epoch, *calls / 2, 2.0, trace);
      worstExplore = std::max(worstExplore, r.exploreShare);
      std::cout << std::setw(24) << (std::string(collectiveName(coll)) + " " + std::to_string(bytes)) << std::fixed
                << std::setprecision(4) << std::setw(14) << r.exploreShare << std::setw(14) << r.finalRatio
                << std::setw(14) << r.staticFinalRatio << std::setw(14) << r.defaultFinalRatio << r.recoveryCalls
                << "\n";
    }
    std::cout << "worst exploration cost " << worstExplore * 100 << "% of collective time (target <= 1%)\n"
              << "trace: " << *out << " (plot: python3 scripts/plot_online_eval.py " << *out << ")\n";
  });
}

}  // namespace dynamiccl::cli
