#include "plugin/tuner/cost_table_edit.h"

#include <cfloat>
#include <cmath>

namespace dynamiccl::plugin {

TableVerdict inspectCostTable(abi::CostTable table) {
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (!std::isfinite(table[a][p])) return TableVerdict::NonFinite;
  return TableVerdict::Usable;
}

int ncclOwnChoice(abi::CostTable table, abi::PickRule rule) {
  const int slot = abi::ncclChoice(table[0], rule);  // float[7][3] is contiguous; untouched: as NCCL filled it
  return slot == abi::kNoPick ? policy::kNcclChoiceUnknown : slot;
}

const policy::Decision* applyCandidates(const policy::Candidates& candidates, abi::CostTable table, int* nChannels,
                                        abi::PickRule rule) {
  int ncclSlot = -1;  // NCCL's own choice, found once and only for guarded candidates
  for (int i = 0; i < candidates.count; ++i) {
    const policy::Decision& d = candidates.decisions[i];
    if (candidates.guarded(i)) {
      if (ncclSlot < 0) ncclSlot = ncclOwnChoice(table, rule);
      if (!candidates.admitted(i, ncclSlot)) continue;
    }
    if (d.keepsAlgoProto()) {
      if (d.nChannels > 0) *nChannels = d.nChannels;
      return &d;
    }
    const int a = static_cast<int>(d.algo);
    int p = static_cast<int>(d.proto);
    if (d.leavesProtoToNccl()) {  // the protocol NCCL's own costs pick in that algorithm's row
      const int slot = abi::ncclChoiceWithin(table[0], rule, a);
      if (slot == abi::kNoPick) continue;
      p = slot % kNumProtos;
    }
    if (!(table[a][p] >= 0.0f)) continue;  // IGNORE (-1) or any negative: NCCL cannot run it
    // The strict minimum wins; ties go to the lowest slot before 2.31 (no earlier entry may also be
    // 0) and to the highest from 2.31 (no other entry may be 0). Entries NCCL fills in 2.31 are > 0.
    const int chosen = a * kNumProtos + p;
    const int last = rule == abi::PickRule::Nccl2_31 ? kNumAlgos * kNumProtos : chosen;
    for (int k = 0; k < last; ++k) {
      float& e = table[k / kNumProtos][k % kNumProtos];
      if (k != chosen && e == 0.0f) e = FLT_MIN;
    }
    table[a][p] = 0.0f;
    if (d.nChannels > 0) *nChannels = d.nChannels;
    return &d;
  }
  return nullptr;
}

const policy::Decision* firstFeasibleV2(const policy::Candidates& candidates, bool nvlsSupport, bool collNetSupport,
                                        int nNodes) {
  for (int i = 0; i < candidates.count; ++i) {
    const policy::Decision& d = candidates.decisions[i];
    if (!candidates.admitted(i, policy::kNcclChoiceUnknown)) continue;  // a guard needs NCCL's choice: not told here
    if (d.leavesProtoToNccl()) continue;  // NCCL's protocol in that algorithm is its costs' pick: none here
    const bool nvls = d.algo == Algo::Nvls || d.algo == Algo::NvlsTree;
    const bool collnet = d.algo == Algo::CollNetDirect || d.algo == Algo::CollNetChain;
    if ((nvls && !nvlsSupport) || (collnet && !collNetSupport)) continue;
    if (d.algo == Algo::Nvls && nNodes > 1 && !collNetSupport) continue;
    if (d.algo == Algo::NvlsTree && nNodes <= 1) continue;
    return &d;
  }
  return nullptr;
}

}  // namespace dynamiccl::plugin
