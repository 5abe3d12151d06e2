#include "plugin/learned_network.h"

#include <cmath>
#include <cstdio>

#include "learned/learned.h"

namespace dynamiccl::plugin {

struct LearnedNetwork {
  std::shared_ptr<const learned::PolicyNetwork> net;
};

bool buildHasLearnedNetwork() { return true; }

Expected<NetworkPtr> readLearnedNetwork(const policy::Profile& profile) {
  auto net = learned::readNetwork(profile);
  if (!net) return makeError(net.error());
  if (!*net) return NetworkPtr();
  return std::make_shared<const LearnedNetwork>(LearnedNetwork{std::move(*net)});
}

std::string learnedPolicyText(const LearnedNetwork* n) {
  if (!n) return "";
  const std::optional<float> margin = n->net->weights().guardMargin;
  if (!margin) return ", learned policy (no guard: its choices replace NCCL's everywhere)";
  char text[64];
  std::snprintf(text, sizeof text, ", learned policy (guard margin %.3g)", *margin);
  return text;
}

policy::PolicyTable compileWithNetwork(const policy::Profile& profile, const NetworkPtr& n, const CommShape& shape,
                                       const CompileContext& context) {
  const learned::PolicyInputs inputs{context.host, context.workload, context.trust, context.ncclVersionCode};
  return learned::compileWithPolicy(profile, n ? n->net : nullptr, shape, inputs);
}

void attachNetwork(learner::OnlineLearner& learner, const NetworkPtr& n, const TopologyFingerprint& fp,
                   const WorkloadContext& workload, const CommShape& shape) {
  if (!n) return;
  learned::ArmModelOptions armOptions;
  armOptions.workload = workload;
  if (const auto margin = n->net->weights().guardMargin; margin && *margin > 0)
    armOptions.priorErrorLog = -std::log1p(-static_cast<double>(*margin));
  learner.setArmModel(std::make_unique<learned::LearnedArmModel>(n->net, fp, armOptions));
  learner.setLearnedRefresh([net = n->net, fp, workload, shape](const TimingWindows& windows) {
    learned::PolicyRuleOptions options;
    options.windows = &windows;
    options.workload = workload;
    policy::Profile rules;
    rules.rules = learned::policyRules(*net, fp, options);
    return policy::DecisionTable::compile(rules, shape);
  });
}

}  // namespace dynamiccl::plugin
