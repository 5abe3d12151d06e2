// Rule generation from the learned policy: for each (collective, size bucket) score the feasible
// configurations with the network and emit rules, so the hot path stays a table lookup.
#pragma once

#include <memory>
#include <vector>

#include "features/features.h"
#include "policy/decision_table.h"
#include "policy/network_eval.h"
#include "policy/profile.h"

namespace dynamiccl::policy {

inline constexpr int kPolicyMinBucket = 1;   // 1 byte
inline constexpr int kPolicyMaxBucket = 36;  // up to 32 GiB; the last bucket's rule is open-ended
inline constexpr int kPolicyChannelChoices[] = {0, 4, 16};  // 0 = NCCL's own count

// The configurations the policy chooses among for a collective on this topology (NCCL marks the
// unusable ones IGNORE at run time; rules then fall through to the next candidate).
std::vector<Decision> policyConfigurations(Collective coll, const TopologyFingerprint& fp);

// Size the policy is asked about for a bucket: the geometric middle of [2^(b-1), 2^b).
uint64_t policyProbeBytes(int bucket);

struct PolicyRuleOptions {
  int candidatesPerKey = 3;           // fall-through depth (distinct algo/proto)
  const TimingWindows* windows = nullptr;  // recent timings per key; nullptr: none yet (init)
  WorkloadContext workload;
};

// Rules for this fingerprint, in lookup order; empty on internal failure.
std::vector<Rule> policyRules(const PolicyNetwork& net, const TopologyFingerprint& fp, const PolicyRuleOptions& options);

// The plugin's entry: the network's rules (when the profile has a policy) ahead of the profile's
// own rules, compiled for this shape. Generated rules are cached per (network, shape) because
// jobs create hundreds of communicators of a few shapes.
DecisionTable compileWithPolicy(const Profile& profile, const CommShape& shape);

}  // namespace dynamiccl::policy
