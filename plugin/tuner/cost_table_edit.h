// Telling the host a decision by editing its cost table: the chosen entry becomes 0.0 (the minimum),
// under the selection rule of the host in the process (abi::PickRule, abi::HostRules). Never a
// negative cost: 2.31 would select a valid slot holding one.
#pragma once

#include <cstdint>
#include <cstring>

#include "abi/abi.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

// The table as the host hands it: numAlgo rows of numProto floats (NCCL: 7x3; RCCL also 7x4, 8x4).
// The plugin reads and writes only the cells of algorithms 0-6 and protocols 0-2; the others it
// compares, never touches.
struct CostCells {
  float* cells = nullptr;
  int numAlgo = kNumAlgos;
  int numProto = kNumProtos;
  float& at(int algo, int proto) const { return cells[algo * numProto + proto]; }
  bool ncclShape() const { return numAlgo == kNumAlgos && numProto == kNumProtos; }
  // NCCL's 21 cells as the contiguous float[7][3] abi::ncclChoice reads (no copy for NCCL's shape).
  const float* ours(float (&scratch)[kNumAlgos * kNumProtos]) const;
};

// How the user or the host limits an edit: knobs fixed by the user (NCCL_MIN/MAX_NCHANNELS,
// RCCL_OVERRIDE_PROTO) and the host's tie rule.
struct EditLimits {
  bool keepChannels = false;  // never write nChannels
  bool keepProto = false;     // force the algorithm only; the protocol is the host's pick in that row
  bool uniqueZero = false;    // every other 0 moves to FLT_MIN, whatever the tie rule (RCCL)
};

// One pass over NCCL's cells: a table with NaN or infinite entries among them is not one we trust to edit
// (NCCL's choice stands); one without a 0.0 needs no tie scan when a cell becomes 0.
struct CellScan {
  bool finite = true;
  bool anyZero = false;
};
CellScan scanOtherShape(CostCells table);  // any shape, a cell at a time

// NCCL's float[7][3] with no 0.0 and nothing non-finite (the usual table), as five 4-lane words and the
// last cell in all four lanes (a word overlapping the fifth would span two of the caller's stores, which
// the CPU does not forward: 15 cycles); a scalar loop was 15% of getCollInfo. One signed compare tells
// |bits| of 0 or above the largest finite float from the rest: |bits| + 0x7fffffff is (|bits| - 1) with
// its sign bit flipped, the unsigned compare SSE2 lacks.
inline bool usualNcclTable(const float* cells) {
  using Bits = uint32_t __attribute__((vector_size(16)));  // unsigned: the add wraps by definition
  using Lanes = int32_t __attribute__((vector_size(16)));
  constexpr uint32_t kMagnitude = 0x7fffffffu;
  constexpr int32_t kUsualBelow = static_cast<int32_t>(0xff7fffffu);
  const auto usualLanes = [](Bits v) {
    return Lanes{kUsualBelow, kUsualBelow, kUsualBelow, kUsualBelow} > (Lanes)((v & kMagnitude) + kMagnitude);
  };
  uint32_t last;
  std::memcpy(&last, cells + 20, sizeof last);
  Lanes usual = usualLanes(Bits{last, last, last, last});
#pragma GCC unroll 5
  for (int at = 0; at < 20; at += 4) {
    Bits v;
    std::memcpy(&v, cells + at, sizeof v);
    usual &= usualLanes(v);
  }
  usual &= __builtin_shufflevector(usual, usual, 2, 3, 0, 1);
  usual &= __builtin_shufflevector(usual, usual, 1, 0, 3, 2);
  return usual[0] != 0;
}

inline CellScan scanCostTable(const CostCells& table) {
  if (table.ncclShape() && usualNcclTable(table.cells)) [[likely]]
    return {};
  return scanOtherShape(table);  // which: a 0 to tie with, or a table not to edit
}

// NCCL's own choice (abi::ncclChoice) as policy::ncclChoiceSlot; policy::kNcclChoiceUnknown
// when no entry counts or the host's own pick may be a cell outside NCCL's 7x3.
int ncclOwnChoice(const CostCells& table, abi::PickRule rule = abi::PickRule::Nccl2_28);

// Applies the first candidate NCCL can run (entry not IGNORE/negative) whose guard admits NCCL's own
// choice for this table; one that leaves the protocol to NCCL forces the protocol NCCL's costs pick
// in its algorithm's row (abi::ncclChoiceWithin). Returns the decision applied or nullptr when none was feasible, in which
// case table and nChannels are untouched (so too where a cell outside NCCL's 7x3 holds 0.0, which we
// may not move). `scan` is the table's scanCostTable. Writes only 0 and FLT_MIN, into entries NCCL filled; a decision's channels go to
// nChannels as they are (from 2.31 NCCL reads them as a cap) unless the user fixed them. `applied`
// receives what ran: the protocol picked for an algorithm alone, no channels where they were kept.
namespace edit_detail {
// Every candidate in order, every host shape, guards, user limits and ties: the whole rule, out of line.
// The table by value: a caller's CostCells whose address escaped stays in memory on the hot path.
const policy::Decision* applyFirstFeasible(const policy::Candidates& candidates, CostCells table,
                                           int* nChannels, abi::PickRule rule, const EditLimits& limits,
                                           CellScan scan, policy::Decision* applied);
}  // namespace edit_detail

// The usual call, inline: a usual NCCL table (usualNcclTable), a first candidate with its own algorithm and
// protocol that no guard or user limit holds back and NCCL can run. nullptr: not the usual call, for
// applyCandidates to decide; otherwise its result is applyCandidates'.
inline const policy::Decision* applyUsual(const policy::Candidates& candidates, float* cells, int* nChannels,
                                          const EditLimits& limits, policy::Decision* applied) {
  const policy::Decision& d = candidates.decisions[0];
  if (candidates.count == 0 || candidates.guarded(0) || d.keepsAlgoProto() || d.leavesProtoToNccl() ||
      limits.keepProto) [[unlikely]]
    return nullptr;
  float& cell = cells[static_cast<int>(d.algo) * kNumProtos + static_cast<int>(d.proto)];
  if (!(cell >= 0.0f)) [[unlikely]]
    return nullptr;
  cell = 0.0f;
  *applied = d;
  if (limits.keepChannels) applied->nChannels = 0;
  if (applied->nChannels > 0) *nChannels = applied->nChannels;
  return &d;
}

inline const policy::Decision* applyCandidates(const policy::Candidates& candidates, const CostCells& table,
                                               int* nChannels, abi::PickRule rule, const EditLimits& limits,
                                               CellScan scan, policy::Decision* applied) {
  if (table.ncclShape() && !scan.anyZero)
    if (const policy::Decision* d = applyUsual(candidates, table.cells, nChannels, limits, applied)) return d;
  return edit_detail::applyFirstFeasible(candidates, table, nChannels, rule, limits, scan, applied);
}

// v2 has no table: a candidate is feasible unless it needs NVLS or CollNet that NCCL says is absent
// (NCCL 2.28's v2 shim: multi-node NVLS also needs CollNet; NVLS_TREE is off on one node). Guarded
// candidates are skipped: NCCL's own choice is unknown, so no guard can admit them; so are those that
// leave the protocol to NCCL (no costs to pick it from).
const policy::Decision* firstFeasibleV2(const policy::Candidates& candidates, bool nvlsSupport, bool collNetSupport,
                                        int nNodes);

}  // namespace dynamiccl::plugin
