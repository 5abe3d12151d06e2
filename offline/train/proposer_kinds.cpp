#include "offline/train/proposer_kinds.h"

namespace dynamiccl::train {

const std::vector<ProposerKind>& proposerKinds() {
  static const std::vector<ProposerKind> kinds = {
      {"NCCL's cost order", [](const ProposerInputs&, std::string&) -> std::optional<ArmOrder> { return ncclCostOrder(); }},
      {"simulator (calibrated)",
       [](const ProposerInputs& in, std::string&) -> std::optional<ArmOrder> { return simulatorOrder(in.simulatorFor); }},
      {"learned network",
       [](const ProposerInputs& in, std::string& whyNot) -> std::optional<ArmOrder> {
         if (!in.network) return whyNot = "not trained (" + in.networkMissing + ")", std::nullopt;
         return networkOrder(in.network);
       },
       true},
  };
  return kinds;
}

}  // namespace dynamiccl::train
