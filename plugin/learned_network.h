// The learned network's part in the plugin, where the build has one (DYNAMICCL_LEARNED): read from
// the profile's "policy" section once, its rules compiled per shape, its arm model in the job. A
// build without it (a .so without Eigen) reads no section: the profile's rules stand alone.
#pragma once

#include <memory>
#include <string>

#include "features/features.h"
#include "learner/learner.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

struct LearnedNetwork;  // the network read, opaque outside learned_network.cpp
using NetworkPtr = std::shared_ptr<const LearnedNetwork>;

// Whether this build reads learned networks.
bool buildHasLearnedNetwork();

// The profile's network: nullptr where it has no "policy" section or the build reads none; an error
// where the section is bad (the profile is then not used).
Expected<NetworkPtr> readLearnedNetwork(const policy::Profile& profile);

// ", learned policy (guard margin 0.05)" for the load line; "" without a network.
std::string learnedPolicyText(const LearnedNetwork* net);

// The profile compiled for a shape, the network's rules ahead of its own where one is given.
struct CompileContext {
  const HostSources* host = nullptr;
  WorkloadContext workload;
  policy::Trust trust = policy::Trust::Verified;
  int ncclVersionCode = 0;
};
policy::PolicyTable compileWithNetwork(const policy::Profile& profile, const NetworkPtr& net, const CommShape& shape,
                                       const CompileContext& context);

// The learned policy in the job: its arm model proposes what to measure, and its rules are evaluated
// again with the leader's recent timings (fp: the fingerprint every rank shares).
void attachNetwork(learner::OnlineLearner& learner, const NetworkPtr& net, const TopologyFingerprint& fp,
                   const WorkloadContext& workload, const CommShape& shape);

}  // namespace dynamiccl::plugin
