// Telling NCCL a decision by editing its cost table: the chosen entry becomes 0 (the minimum), under
// the selection rule of the NCCL in the process (abi::PickRule). Never a negative cost: 2.31 would
// select a valid slot holding one.
#pragma once

#include "abi/abi.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

enum class TableVerdict : uint8_t { Usable, NonFinite };

// A table with NaN or infinite entries is not one we trust to edit (NCCL's choice stands).
TableVerdict inspectCostTable(abi::CostTable table);

// NCCL's own choice (abi::ncclChoice) as policy::ncclChoiceSlot; policy::kNcclChoiceUnknown
// when no entry counts.
int ncclOwnChoice(abi::CostTable table, abi::PickRule rule = abi::PickRule::Nccl2_28);

// Applies the first candidate NCCL can run (entry not IGNORE/negative) whose guard admits NCCL's own
// choice for this table; one that leaves the protocol to NCCL forces the protocol NCCL's costs pick
// in its algorithm's row (abi::ncclChoiceWithin). Returns the decision applied or nullptr when none was feasible, in which
// case table and nChannels are untouched. Writes only 0 and FLT_MIN, into entries NCCL filled; a
// decision's channels go to nChannels as they are (from 2.31 NCCL reads them as a cap).
const policy::Decision* applyCandidates(const policy::Candidates& candidates, abi::CostTable table, int* nChannels,
                                        abi::PickRule rule = abi::PickRule::Nccl2_28);

// v2 has no table: a candidate is feasible unless it needs NVLS or CollNet that NCCL says is absent
// (NCCL 2.28's v2 shim: multi-node NVLS also needs CollNet; NVLS_TREE is off on one node). Guarded
// candidates are skipped: NCCL's own choice is unknown, so no guard can admit them; so are those that
// leave the protocol to NCCL (no costs to pick it from).
const policy::Decision* firstFeasibleV2(const policy::Candidates& candidates, bool nvlsSupport, bool collNetSupport,
                                        int nNodes);

}  // namespace dynamiccl::plugin
