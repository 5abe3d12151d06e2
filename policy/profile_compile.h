// A profile compiled for one communicator's shape: the rules that apply there and the candidates
// in-job verification tests, by what each rule's evidence is worth here (policy/evidence.h).
#pragma once

#include <string>
#include <vector>

#include "features/features.h"
#include "policy/decision_table.h"
#include "policy/evidence.h"
#include "policy/profile.h"

namespace dynamiccl::policy {

struct PolicyTable {
  DecisionTable table;       // the rules that apply (policy/evidence.h): the only table the hot path reads
  DecisionTable unverified;  // unverified rules, kept as candidates for in-job verification
  std::string learnedRulesOff;  // the profile has a network but this communicator got no rules from it: why
  std::string probeDisagrees;   // this host's probe contradicts the profile's fingerprint (decisions unaffected)
  // Why the profile's unverified rules are not verified here, by reason and count, most first, e.g.
  // "40 measured on another fingerprint (gpu_cc differs: this communicator's 103, the rule's 100); 3 simulated".
  std::string unverifiedWhy;
  std::string refutedRules;     // rules whose own evidence shows no gain: how many, the first, why (never applied)
  std::string otherReleaseRules;  // rules measured under another release's selection rules: how many, the first
};

// The profile's rules for this shape; `generated` (a learned network's rules for it, or nullptr) go
// ahead of them and are never verified: candidates, applied only with Trust::All.
PolicyTable compileProfile(const Profile& profile, const CommShape& shape, const StandingInputs& standing,
                           const std::vector<Rule>* generated);

}  // namespace dynamiccl::policy
