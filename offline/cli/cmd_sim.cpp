// dynamiccl sim: predict one configuration, compare every feasible configuration for a
// (collective, bytes, preset, nodes), or emit a synthetic normalized.csv for a preset.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/cli/value_checks.h"
#include "offline/files/files.h"
#include "offline/sim/sim.h"
#include "abi/abi.h"

namespace dynamiccl::cli {
namespace {

struct SimCmdOptions {
  std::string topology = "dgx-h100", collective = "allreduce", algo, proto, emitCsv, params, ncclVersion = "2.28";
  int nodes = 1, channels = 0, samples = 1;
  uint64_t bytes = 1 << 20, chunk = 0, seed = 1;
};

int run(const SimCmdOptions& o) {
  auto topo = sim::loadTopology(o.topology, o.nodes);
  if (!topo) return std::cerr << "sim: " << topo.error() << "\n", 1;
  sim::SimParams params;
  if (!o.params.empty()) {
    auto text = readRegularFile(o.params, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
    if (!text) return std::cerr << "sim: " << text.error() << "\n", 1;
    auto p = sim::paramsFromJson(*text);
    if (!p) return std::cerr << "sim: " << o.params << ": " << p.error() << "\n", 1;
    params = p.value();
  }
  const std::optional<abi::PickRule> rule = abi::parsePickRule(o.ncclVersion);
  if (!rule)
    return std::cerr << "sim: --nccl-version " << o.ncclVersion << ": expected a version such as 2.31 or 2.28.9\n", 1;
  auto ref = model::NcclReference::create(topo.value());
  if (!ref) return std::cerr << "sim: " << ref.error() << "\n", 1;
  const sim::Simulator simulator(topo.value(), params);
  const auto coll = parseCollective(o.collective);
  if (!coll) return std::cerr << "sim: unknown collective " << o.collective << "\n", 1;

  if (!o.emitCsv.empty()) {
    auto file = files::OutputFile::open(o.emitCsv);
    if (!file) return std::cerr << "sim: " << file.error() << "\n", 1;
    const int rows = sim::writeSyntheticDataset(simulator, *ref, o.seed, (*file)->stream());
    if (auto s = (*file)->close(); !s) return std::cerr << "sim: " << s.error() << "\n", 1;
    std::printf("wrote %d rows to %s\n", rows, o.emitCsv.c_str());
    return 0;
  }

  const sim::Config def = ref->defaultConfig(*coll, o.bytes);
  std::printf("%s, %d node(s), %d ranks, %s %llu B\n", topo->name.c_str(), topo->nNodes, topo->nRanks(),
              o.collective.c_str(), static_cast<unsigned long long>(o.bytes));
  if (def.algo != Algo::Default)
    std::printf("NCCL default: %s  model %.1f us  simulated %.1f us\n", decisionLabel(def).c_str(),
                ref->costTable(*coll, o.bytes)[int(def.algo)][int(def.proto)], simulator.time_us(*coll, o.bytes, def));
  if (!o.algo.empty() || !o.proto.empty()) {
    const auto a = parseAlgo(o.algo.empty() ? "ring" : o.algo);
    const auto p = parseProto(o.proto.empty() ? "simple" : o.proto);
    if (!a || !p) return std::cerr << "sim: unknown algo/proto\n", 1;
    const sim::Config c = ref->resolve(sim::Config{*a, *p, o.channels, o.chunk}, o.bytes, *rule);
    if (!simulator.feasible(*coll, c)) return std::cerr << "sim: " << decisionLabel(c) << " is not feasible here\n", 1;
    if (o.channels > c.nChannels)
      std::printf("NCCL %s runs %d channels, not %d: the tuner's count only lowers NCCL's own\n",
                  abi::pickRuleName(*rule), c.nChannels, o.channels);
    sim::NoiseSource noise(o.seed);
    std::printf("%s: simulated %.2f us", decisionLabel(c).c_str(), simulator.time_us(*coll, o.bytes, c));
    for (int i = 0; i < o.samples && o.samples > 1; ++i) std::printf(" %.2f", simulator.sample_us(*coll, o.bytes, c, noise));
    std::printf("\n");
    return 0;
  }
  // Compare all feasible configurations, fastest first; from 2.31 none with more channels than NCCL's own.
  std::vector<std::pair<double, sim::Config>> all;
  for (const sim::Config& cand : simulator.candidateConfigs(*coll)) {
    if (!ref->channelsProposable(*coll, cand, o.bytes, *rule)) continue;
    const sim::Config c = ref->resolve(cand, o.bytes, *rule);
    all.emplace_back(simulator.time_us(*coll, o.bytes, c), c);
  }
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const double defT = def.algo != Algo::Default ? simulator.time_us(*coll, o.bytes, def) : 0;
  std::printf("  simulated times:\n");
  for (const auto& [t, c] : all)
    std::printf("  %-36s %10.2f us  %s\n", decisionLabel(c).c_str(), t,
                defT > 0 ? (std::to_string(int(100 * t / defT)) + "% of default").c_str() : "");
  return 0;
}

}  // namespace

void addSimCommand(CLI::App& app) {
  auto o = std::make_shared<SimCmdOptions>();
  CLI::App* cmd = app.add_subcommand("sim", "Simulate collectives: one config, all configs, or a synthetic CSV");
  addPlatformOption(cmd);
  cmd->add_option("--preset", o->topology, "preset name or topology JSON file")->capture_default_str();
  cmd->add_option("--topology", o->topology)->group("");  // the former name, hidden: the other commands say --preset
  cmd->add_option("--nodes", o->nodes, "node count")->capture_default_str()->check(CLI::Range(1, 512));
  cmd->add_option("--collective", o->collective)->capture_default_str()->check(collectiveCheck());
  cmd->add_option("--bytes", o->bytes, "NCCL's nBytes")->capture_default_str()->check(byteCountCheck());
  cmd->add_option("--algo", o->algo, "predict this algorithm (else compare all)");
  cmd->add_option("--proto", o->proto, "predict this protocol (else compare all)");
  cmd->add_option("--channels", o->channels, "0 = NCCL's count")->check(channelCountCheck());
  cmd->add_option("--nccl-version", o->ncclVersion,
                  "NCCL whose channel rule applies (2.28, 2.30, 2.31...): from 2.31 a channel count only lowers "
                  "NCCL's own")->capture_default_str();
  cmd->add_option("--chunk", o->chunk, "bytes per pipeline step, 0 = default")->check(byteCountOrZeroCheck());
  cmd->add_option("--samples", o->samples, "also print this many noisy samples")->check(countCheck());
  cmd->add_option("--seed", o->seed, "noise seed")->capture_default_str();
  cmd->add_option("--params", o->params, "simulator parameters JSON (one group's \"params\" object)");
  cmd->add_option("--emit-csv", o->emitCsv, "write a synthetic normalized.csv for the topology");
  cmd->callback([o] {
    if (const int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
