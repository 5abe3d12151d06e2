// A build without learned/ (DYNAMICCL_LEARNED=OFF): no network is read; the profile's rules stand alone.
#include "plugin/learned_network.h"

namespace dynamiccl::plugin {

struct LearnedNetwork {};

bool buildHasLearnedNetwork() { return false; }

Expected<NetworkPtr> readLearnedNetwork(const policy::Profile&) { return NetworkPtr(); }

std::string learnedPolicyText(const LearnedNetwork*) { return ""; }

policy::PolicyTable compileWithNetwork(const policy::Profile& profile, const NetworkPtr&, const CommShape& shape,
                                       const CompileContext& context) {
  static const HostSources kNothingKnown;
  const policy::StandingInputs standing = policy::StandingInputs::of(
      shape, profile.hardware, context.host ? *context.host : kNothingKnown, profile.userRules, context.trust,
      context.ncclVersionCode);
  return policy::compileProfile(profile, shape, standing, nullptr);
}

void attachNetwork(learner::OnlineLearner&, const NetworkPtr&, const TopologyFingerprint&, const WorkloadContext&,
                   const CommShape&) {}

}  // namespace dynamiccl::plugin
