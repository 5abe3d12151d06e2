// Telling the host a decision by editing its cost table: the chosen entry becomes 0.0 (the minimum),
// under the selection rule of the host in the process (abi::PickRule, abi::HostRules). Never a
// negative cost: 2.31 would select a valid slot holding one.
#pragma once

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

enum class TableVerdict : uint8_t { Usable, NonFinite };

// A table with NaN or infinite entries among NCCL's cells is not one we trust to edit (NCCL's choice stands).
TableVerdict inspectCostTable(const CostCells& table);

// NCCL's own choice (abi::ncclChoice) as policy::ncclChoiceSlot; policy::kNcclChoiceUnknown
// when no entry counts or the host's own pick may be a cell outside NCCL's 7x3.
int ncclOwnChoice(const CostCells& table, abi::PickRule rule = abi::PickRule::Nccl2_28);

// Applies the first candidate NCCL can run (entry not IGNORE/negative) whose guard admits NCCL's own
// choice for this table; one that leaves the protocol to NCCL forces the protocol NCCL's costs pick
// in its algorithm's row (abi::ncclChoiceWithin). Returns the decision applied or nullptr when none was feasible, in which
// case table and nChannels are untouched (so too where a cell outside NCCL's 7x3 holds 0.0, which we
// may not move). Writes only 0 and FLT_MIN, into entries NCCL filled; a decision's channels go to
// nChannels as they are (from 2.31 NCCL reads them as a cap) unless the user fixed them. `applied`
// receives what ran: the protocol picked for an algorithm alone, no channels where they were kept.
const policy::Decision* applyCandidates(const policy::Candidates& candidates, const CostCells& table, int* nChannels,
                                        abi::PickRule rule, const EditLimits& limits, policy::Decision* applied);

// v2 has no table: a candidate is feasible unless it needs NVLS or CollNet that NCCL says is absent
// (NCCL 2.28's v2 shim: multi-node NVLS also needs CollNet; NVLS_TREE is off on one node). Guarded
// candidates are skipped: NCCL's own choice is unknown, so no guard can admit them; so are those that
// leave the protocol to NCCL (no costs to pick it from).
const policy::Decision* firstFeasibleV2(const policy::Candidates& candidates, bool nvlsSupport, bool collNetSupport,
                                        int nNodes);

}  // namespace dynamiccl::plugin
