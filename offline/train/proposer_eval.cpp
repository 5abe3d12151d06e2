#include "offline/train/proposer_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "offline/train/sim_adapter.h"
#include "learned/learned.h"

namespace dynamiccl::train {
namespace {

constexpr double kWithinBest = 1.01;  // arms this close to the best are the best (run-to-run noise)

using Arm = std::pair<Algo, Proto>;

// Every (algo, proto), cheapest first; those the cost marks impossible (< 0) last.
std::vector<sim::Config> byCost(const std::function<double(const sim::Config&)>& cost) {
  std::vector<std::pair<double, sim::Config>> scored;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q) {
      const sim::Config c{Algo(a), Proto(q), 0, 0};
      const double t = cost(c);
      scored.emplace_back(t >= 0 ? t : INFINITY, c);
    }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<sim::Config> out;
  for (const auto& [t, c] : scored) out.push_back(c);
  return out;
}

}  // namespace

ProposerFigures evaluateProposer(const std::string& name, const measurements::ReplayData& data, const ArmOrder& order) {
  ProposerFigures f;
  f.proposer = name;
  const ArmOrder fallback = ncclCostOrder();
  for (const measurements::ReplayPoint& p : data.points) {
    if (p.default_us <= 0 || p.forced_us.empty() || p.ncclDefault.algo == Algo::Default) continue;
    std::map<Arm, double> arms;  // at NCCL's own channel count and chunk: what the proposers order
    for (const auto& [c, t] : p.forced_us)
      if (c.nChannels == 0 && c.chunkBytes == 0) arms[{c.algo, c.proto}] = t;
    arms[{p.ncclDefault.algo, p.ncclDefault.proto}] = p.default_us;  // NCCL's own choice is its default rows
    double best = INFINITY;
    for (const auto& [a, t] : arms) best = std::min(best, t);
    ++f.keys;
    if (p.default_us <= best * kWithinBest) {
      ++f.bestIsDefault;
      continue;
    }
    std::vector<sim::Config> proposed = order(p);
    for (const sim::Config& c : fallback(p)) proposed.push_back(c);
    int trial = 0, found = 0;
    std::map<Arm, bool> tried;
    for (const sim::Config& c : proposed) {
      const Arm a{c.algo, c.proto};
      if (a == Arm{p.ncclDefault.algo, p.ncclDefault.proto} || !arms.count(a) || tried[a]) continue;
      tried[a] = true;
      ++trial;
      if (!found && arms[a] <= best * kWithinBest) found = trial;
    }
    f.everyArm += static_cast<int>(arms.size()) - 1;
    f.trials += found;
    f.top1 += found == 1;
    f.top3 += found >= 1 && found <= 3;
  }
  return f;
}

ArmOrder ncclCostOrder() {
  return [](const measurements::ReplayPoint& p) {
    const model::CostTable cost = p.costTable();
    return byCost([&](const sim::Config& c) { return static_cast<double>(cost[int(c.algo)][int(c.proto)]); });
  };
}

ArmOrder simulatorOrder(std::function<const sim::Simulator*(const measurements::Shape&)> simulatorFor) {
  return [simulatorFor](const measurements::ReplayPoint& p) -> std::vector<sim::Config> {
    const sim::Simulator* s = simulatorFor(*p.shape);
    if (!s) return {};
    return byCost([&](const sim::Config& c) { return s->time_us(p.coll, p.bytes, c); });
  };
}

ArmOrder networkOrder(std::shared_ptr<const learned::PolicyNetwork> guarded) {
  // Its order, not its guard: every key gets the network's candidates.
  learned::PolicyWeights w = guarded->weights();
  w.guardMargin = std::nullopt;
  w.lastLayerCovariance.clear();
  auto unguarded = learned::PolicyNetwork::create(std::move(w));
  std::shared_ptr<const learned::PolicyNetwork> net = unguarded ? *unguarded : guarded;
  auto tables = std::make_shared<std::map<const measurements::Shape*, policy::DecisionTable>>();
  return [net, tables](const measurements::ReplayPoint& p) {
    auto it = tables->find(p.shape);
    if (it == tables->end()) {
      policy::Profile generated;
      learned::PolicyRuleOptions ro;
      ro.candidatesPerKey = policy::Candidates::kMax;
      generated.rules = learned::policyRules(*net, fingerprintOf(p.shape->topology), ro);
      const CommShape shape{.commId = 0, .nRanks = p.shape->nRanks, .nNodes = p.shape->nNodes};
      it = tables->emplace(p.shape, policy::DecisionTable::compile(generated, shape)).first;
    }
    const policy::Candidates& cand = it->second.lookup(static_cast<int>(p.coll), p.bytes, 1, 0);
    std::vector<sim::Config> out;
    for (int i = 0; i < cand.count; ++i)
      if (!cand.decisions[i].keepsAlgoProto() && cand.decisions[i].proto != Proto::Default)
        out.push_back({cand.decisions[i].algo, cand.decisions[i].proto, 0, 0});
    return out;
  };
}

std::string describeProposer(const ProposerFigures& f) {
  char buf[256];
  const int n = f.others();
  std::snprintf(buf, sizeof buf, "%-22s %3d keys, %3d where an alternative is best: top-1 %3d/%d, top-3 %3d/%d, trials to "
                "the best %4d (measuring every alternative: %4d)",
                f.proposer.c_str(), f.keys, n, f.top1, n, f.top3, n, f.trials, f.everyArm);
  return buf;
}

}  // namespace dynamiccl::train
