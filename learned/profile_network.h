// The learned network a profile carries: policy/ keeps its "policy" section as text, this reads it.
#pragma once

#include <memory>
#include <string>

#include "learned/network_eval.h"
#include "policy/policy.h"

namespace dynamiccl::learned {

// The network of the profile's "policy" section; nullptr where it has none. An error says what is
// wrong with the section: the profile is then unusable, as a bad rule makes it.
Expected<std::shared_ptr<const PolicyNetwork>> readNetwork(const policy::Profile& profile);

// Gives the profile these weights as its "policy" section, in the encoding that reads fast.
void setNetwork(policy::Profile& profile, const PolicyWeights& weights);

}  // namespace dynamiccl::learned
