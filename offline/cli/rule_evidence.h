// The evidence of a profile's rules as `show` and `validate` print it: one line per rule.
#pragma once

#include <optional>
#include <string>

#include "policy/policy.h"

namespace dynamiccl::cli {

// "rules[3] allreduce [0, 64 KiB] ring/ll: measured-offline on {...}, ... -- verified"; without a
// standing (no communicator given), what would make it verified.
std::string ruleEvidenceLine(const policy::Rule& rule, const std::optional<policy::RuleStanding>& standing);

}  // namespace dynamiccl::cli
