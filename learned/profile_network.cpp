#include "learned/profile_network.h"

namespace dynamiccl::learned {

Expected<std::shared_ptr<const PolicyNetwork>> readNetwork(const policy::Profile& profile) {
  if (profile.policySection.empty()) return std::shared_ptr<const PolicyNetwork>();
  auto weights = parsePolicyWeights(std::string_view(profile.policySection));
  auto network = weights ? PolicyNetwork::create(std::move(*weights)) : Error{weights.error()};
  if (!network) return makeError("policy: " + network.error());
  return *network;
}

void setNetwork(policy::Profile& profile, const PolicyWeights& weights) {
  profile.policySection = policyWeightsToJson(weights, WeightEncoding::Base64);
}

}  // namespace dynamiccl::learned
