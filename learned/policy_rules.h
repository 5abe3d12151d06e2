// Rule generation from the learned policy: for each (collective, size bucket) score the feasible
// configurations with the network and emit rules, so the hot path stays a table lookup.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "features/features.h"
#include "policy/policy.h"
#include "learned/network_eval.h"

namespace dynamiccl::learned {
using namespace dynamiccl::policy;  // the rule table's vocabulary: Rule, Profile, Decision


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

// Rules for this fingerprint, in lookup order; empty on internal failure. With the network's guard
// margin set (PolicyWeights::guardMargin), each rule admits only the NCCL choices (algo, proto with
// NCCL's channels) it is predicted to beat by the margin, and, with a last-layer covariance, by
// keyErrorSigmas standard deviations of that prediction at the key; a key gets no rule where it beats none;
// the plugin falls through to the next rule, then to NCCL's own choice.
std::vector<Rule> policyRules(const PolicyNetwork& net, const TopologyFingerprint& fp, const PolicyRuleOptions& options);

// What learned rules may depend on besides the profile and NCCL's init arguments. Every part must be
// the same on every rank of a communicator: fingerprintForRules (features/rule_fingerprint.h) uses
// the host probe only for single-node communicators; DYNAMICCL_TOPO and DYNAMICCL_WORKLOAD are job
// configuration, like DYNAMICCL_PROFILE.
struct PolicyInputs {
  const HostSources* host = nullptr;  // probe and DYNAMICCL_TOPO; nullptr: nothing known
  WorkloadContext workload;           // DYNAMICCL_WORKLOAD
  Trust trust = Trust::Verified;      // DYNAMICCL_TRUST (the plugin passes its setting)
  int ncclVersionCode = 0;            // the NCCL release in force (plugin/tuner/nccl_version.h); 0: unknown
};

// The plugin's entry: the network's guarded rules (when it is given and a fingerprint
// every rank shares) ahead of the profile's own rules, compiled for this shape; rules that are not
// verified for this communicator (learned ones never are) go into `table` only with Trust::All. Generated rules are
// cached per (network, fingerprint, workload) because jobs create hundreds of communicators of a few
// shapes; the cache is a pure memo, so which communicators came first never changes a decision.
PolicyTable compileWithPolicy(const Profile& profile, const std::shared_ptr<const PolicyNetwork>& network,
                              const CommShape& shape, const PolicyInputs& inputs);
// The same with the profile's own network, read from its "policy" section (none where it is bad).
PolicyTable compileWithPolicy(const Profile& profile, const CommShape& shape, const PolicyInputs& inputs);

}  // namespace dynamiccl::learned
