// dynamiccl policy-eval: the learned policy's figures in one place: DecisionTable rebuild time with
// the network, and latency ratio to the best configuration on held-out simulated machines against
// NCCL's default (and the TPE table / shared/data replay once those modules exist).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "offline/commands.h"
#include "policy/policy.h"
#include "train/policy_eval.h"

namespace dynamiccl::cli {
namespace {

struct PolicyEvalOptions {
  std::string profile;
  std::vector<std::string> presets = {"h800"};
};

int run(const PolicyEvalOptions& o) {
  auto profile = policy::loadProfileFile(o.profile);
  if (!profile) {
    std::cerr << "invalid profile: " << profile.error() << "\n";
    return 1;
  }
  if (!profile->network) {
    std::cerr << o.profile << " has no \"policy\" section (train one with `dynamiccl train`)\n";
    return 1;
  }
  const policy::PolicyNetwork& net = *profile->network;
  auto systems = train::presetsMatching(o.presets, true);
  if (systems.empty()) {
    std::cerr << "no preset matches\n";
    return 1;
  }
  std::printf("DecisionTable rebuild with the network (5 collectives x %d size buckets, Eigen):\n",
              policy::kPolicyMaxBucket - policy::kPolicyMinBucket + 1);
  std::printf("ratio = latency of the configuration run / latency of the best configuration (geometric mean over\n"
              "5 collectives x 29 sizes, 32 B..4 GiB); worst = largest ratio; wins = keys where the policy beats NCCL by >1%%\n");
  std::printf("%-20s %5s %10s | %8s %8s | %8s %8s | %6s\n", "machine (held out)", "cong", "rebuild_us", "policy",
              "worst", "NCCL", "worst", "wins");
  for (const auto& topo : systems) {
    auto sys = train::SimSystem::make(topo);
    if (!sys) {
      std::printf("%-20s %s\n", topo.name.c_str(), sys.error().c_str());
      continue;
    }
    for (double congestion : {0.0, 1.0}) {
      const train::RatioSummary r = train::ratioToBest(net, *sys, congestion);
      std::printf("%-20s %5.1f %10.0f | %8.3f %8.2f | %8.3f %8.2f | %5.0f%%\n", topo.name.c_str(), congestion, r.rebuild_us,
                  r.policyGeoMean, r.policyWorst, r.ncclGeoMean, r.ncclWorst, 100 * r.policyBeatsNccl);
    }
  }
  // The plugin's own init path (fingerprint of this host, no cache hit on a fresh shape).
  const CommShape shape{.commId = 1, .nRanks = 24, .nNodes = 3, .minRanksPerNode = 8, .maxRanksPerNode = 8};
  const auto start = std::chrono::steady_clock::now();
  const policy::DecisionTable table = policy::compileWithPolicy(*profile, shape);
  const double init_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("plugin init path (compileWithPolicy, 24 ranks / 3 nodes, uncached): %.0f us, %zu rules\n", init_us,
              table.ruleCount());
  std::printf("TPE tuned table: not compared (tune/ has no TPE search in this build yet)\n");
  std::printf("shared/data replay: not compared (sim/ replay is not in this build yet)\n");
  return 0;
}

}  // namespace

void addPolicyEvalCommand(CLI::App& app) {
  auto o = std::make_shared<PolicyEvalOptions>();
  CLI::App* cmd = app.add_subcommand("policy-eval", "figures of a learned policy on held-out simulated machines");
  cmd->add_option("profile", o->profile, "profile with a \"policy\" section")->required();
  cmd->add_option("--presets", o->presets, "preset name prefixes to evaluate on (default h800)");
  cmd->callback([o] {
    if (int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
