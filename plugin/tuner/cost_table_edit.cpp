#include "plugin/tuner/cost_table_edit.h"

#include <cfloat>
#include <cmath>

namespace dynamiccl::plugin {
namespace {

constexpr int kOurCells = kNumAlgos * kNumProtos;

bool isOurs(int a, int p) { return a < kNumAlgos && p < kNumProtos; }

// A cell outside NCCL's 7x3 the host could run at `cost` or less (or at all, when cost < 0): then
// the host's own pick may not be one of ours.
bool outsiderCompetes(const CostCells& t, float cost) {
  for (int a = 0; a < t.numAlgo; ++a)
    for (int p = 0; p < t.numProto; ++p)
      if (!isOurs(a, p) && t.at(a, p) >= 0.0f && (cost < 0.0f || t.at(a, p) <= cost)) return true;
  return false;
}

}  // namespace

const float* CostCells::ours(float (&scratch)[kNumAlgos * kNumProtos]) const {
  if (ncclShape()) return cells;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) scratch[a * kNumProtos + p] = at(a, p);
  return scratch;
}

CellScan scanOtherShape(CostCells table) {
  CellScan scan;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      const float v = table.at(a, p);
      if (!std::isfinite(v)) scan.finite = false;
      if (v == 0.0f) scan.anyZero = true;
    }
  return scan;
}

int ncclOwnChoice(const CostCells& table, abi::PickRule rule) {
  float scratch[kOurCells];
  const float* cells = table.ours(scratch);
  const int slot = abi::ncclChoice(cells, rule);  // untouched: as NCCL filled it
  if (!table.ncclShape() && outsiderCompetes(table, slot == abi::kNoPick ? -1.0f : cells[slot]))
    return policy::kNcclChoiceUnknown;
  return slot == abi::kNoPick ? policy::kNcclChoiceUnknown : slot;
}

namespace edit_detail {

bool outsiderHoldsZero(const CostCells& t) {
  for (int a = 0; a < t.numAlgo; ++a)
    for (int p = 0; p < t.numProto; ++p)
      if (!isOurs(a, p) && t.at(a, p) == 0.0f) return true;
  return false;
}

// The strict minimum wins; ties go to the lowest slot before 2.31 (no earlier entry may also be
// 0) and to the highest from 2.31 (no other entry may be 0). Entries NCCL fills in 2.31 are > 0.
// RCCL takes the tuner's choice only when the minimum is exactly 0.0: ours is the only 0 there.
void moveOtherZeros(const CostCells& table, int chosen, abi::PickRule rule, const EditLimits& limits) {
  const int last = rule == abi::PickRule::Nccl2_31 || limits.uniqueZero ? kOurCells : chosen;
  for (int k = 0; k < last; ++k) {
    float& e = table.at(k / kNumProtos, k % kNumProtos);
    if (k != chosen && e == 0.0f) e = FLT_MIN;
  }
}

const policy::Decision* applyFirstFeasible(const policy::Candidates& candidates, CostCells table,
                                           int* nChannels, abi::PickRule rule, const EditLimits& limits,
                                           CellScan scan, policy::Decision* applied) {
  if (!table.ncclShape() && outsiderHoldsZero(table)) return nullptr;  // a 0 we may not move would tie ours
  int ncclSlot = -1;  // NCCL's own choice, found once and only for guarded candidates
  for (int i = 0; i < candidates.count; ++i) {
    const policy::Decision& d = candidates.decisions[i];
    if (candidates.guarded(i)) {
      if (ncclSlot < 0) ncclSlot = ncclOwnChoice(table, rule);
      if (!candidates.admitted(i, ncclSlot)) continue;
    }
    *applied = d;
    if (limits.keepChannels) applied->nChannels = 0;
    if (!d.keepsAlgoProto()) {
      const int a = static_cast<int>(d.algo);
      int chosen = a * kNumProtos + static_cast<int>(d.proto);
      if (d.leavesProtoToNccl() || limits.keepProto) {  // the protocol NCCL's own costs pick in that row
        float scratch[kOurCells];
        chosen = abi::ncclChoiceWithin(table.ours(scratch), rule, a);
        if (chosen == abi::kNoPick) continue;
        applied->proto = Proto::Default;
      }
      float& cell = table.at(a, chosen % kNumProtos);
      if (!(cell >= 0.0f)) continue;  // IGNORE (-1) or any negative: NCCL cannot run it
      if (scan.anyZero) moveOtherZeros(table, chosen, rule, limits);
      cell = 0.0f;
    }
    if (applied->nChannels > 0) *nChannels = applied->nChannels;
    return &d;
  }
  return nullptr;
}

}  // namespace edit_detail

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
