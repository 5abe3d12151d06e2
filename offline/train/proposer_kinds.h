// The kinds of policy that rank what to measure, in one list: `policy-eval --proposers` evaluates each
// of them leave-one-machine-out. A new kind is one file defining its order and one line in proposerKinds().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "offline/train/proposer_eval.h"
#include "learned/learned.h"

namespace dynamiccl::train {

// What a kind may draw on at one held-out dataset: the network trained without that dataset's machine
// (null: none trained) and a calibrated simulator per shape (null: no calibrated platform for it).
struct ProposerInputs {
  std::shared_ptr<const learned::PolicyNetwork> network;
  std::string networkMissing;  // why there is none
  std::function<const sim::Simulator*(const measurements::Shape&)> simulatorFor;
};

struct ProposerKind {
  std::string name;  // as printed
  // Its order at one dataset; nullopt: it cannot propose there (the reason is the string).
  std::function<std::optional<ArmOrder>(const ProposerInputs&, std::string& whyNot)> order;
  bool needsNetwork = false;  // policy-eval trains a network for it (leave one machine out)
};

// NCCL's cost order first: the yardstick the others are compared with.
const std::vector<ProposerKind>& proposerKinds();

}  // namespace dynamiccl::train
