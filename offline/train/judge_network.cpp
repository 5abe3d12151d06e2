// The network judged on settled points: its decisions at every measured point, judged on the medians.
#include "offline/train/judge_network.h"

#include <map>

#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/train/sim_adapter.h"

namespace dynamiccl::train {

JudgedFigures judgeNetwork(const learned::PolicyNetwork& net, const measurements::ReplayData& data) {
  // One generated table per communicator shape, as the plugin builds one per communicator.
  std::map<const measurements::Shape*, policy::DecisionTable> tables;
  const sim::DecisionFn decide = [&](const measurements::ReplayPoint& p, const model::CostTable& cost) {
    auto it = tables.find(p.shape);
    if (it == tables.end()) {
      policy::Profile generated;
      generated.rules = learned::policyRules(net, fingerprintOf(p.shape->topology), {});
      const CommShape shape{.commId = 0, .nRanks = p.shape->nRanks, .nNodes = p.shape->nNodes};
      it = tables.emplace(p.shape, policy::DecisionTable::compile(generated, shape)).first;
    }
    // The plugin's rule: the first candidate NCCL did not mark IGNORE and whose guard admits NCCL's
    // own choice, else NCCL's own choice.
    const policy::Candidates& cand = it->second.lookup(static_cast<int>(p.coll), p.bytes, 1, 0);
    const int ownSlot = p.ncclDefault.algo == Algo::Default || p.ncclDefault.proto == Proto::Default
                            ? policy::kNcclChoiceUnknown
                            : policy::ncclChoiceSlot(p.ncclDefault.algo, p.ncclDefault.proto);
    for (int i = 0; i < cand.count; ++i) {
      if (!cand.admitted(i, ownSlot)) continue;
      const policy::Decision& d = cand.decisions[i];
      if (d.keepsAlgoProto()) return sim::Config{p.ncclDefault.algo, p.ncclDefault.proto, d.nChannels, 0};
      if (cost[static_cast<int>(d.algo)][static_cast<int>(d.proto)] >= 0)
        return sim::Config{d.algo, d.proto, d.nChannels, 0};
    }
    return p.ncclDefault;
  };
  JudgedFigures f;
  f.policy = sim::replay(data, decide);
  f.nccl = sim::replay(data, [](const measurements::ReplayPoint& p, const model::CostTable&) { return p.ncclDefault; });
  return f;
}

}  // namespace dynamiccl::train
