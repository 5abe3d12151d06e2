// What a rank's decisions depend on, as named fields, and their record: the same text on every rank
// exactly when the same decisions follow.
#include <cstdio>
#include <sstream>

#include "plugin/inputs/inputs_check.h"

#ifndef DYNAMICCL_PLUGIN_VERSION
#define DYNAMICCL_PLUGIN_VERSION "unknown"
#endif

namespace dynamiccl::plugin {
namespace {

std::string real(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string workload(const WorkloadContext& w) {
  std::ostringstream o;
  o << "intensity=" << (w.intensity ? real(*w.intensity) : "-") << ",batch=" << (w.batch ? std::to_string(*w.batch) : "-");
  return o.str();
}

}  // namespace

std::vector<InputField> decisionInputs(const Settings& s, const std::string& profileDigest, const CommShape& shape,
                                       const NcclRules& rules) {
  const HostSources host = localHostSources(s.topo);  // as compileForShape sees the hardware
  const char* online = s.online == OnlineSwitch::On ? "1" : s.online == OnlineSwitch::Off ? "0" : "unset";
  const char* verify = s.verify == VerifySwitch::On ? "1" : s.verify == VerifySwitch::Off ? "0" : "auto";
  // Switches first: a rank with DYNAMICCL_ENABLE=0 reads no profile, and the line should say why.
  std::vector<InputField> fields = {
      {"plugin", DYNAMICCL_PLUGIN_VERSION},
      {"nccl_rules", rules.versionCode > 0 ? ncclVersionText(rules.versionCode) + " rule " +
                                                 std::to_string(static_cast<int>(rules.rule))
                                           : "unknown, rule " + std::to_string(static_cast<int>(rules.rule))},
      {"DYNAMICCL_ENABLE", s.enabled ? "1" : "0"},
      {"DYNAMICCL_TRUST", s.trust == policy::Trust::All ? "all" : "verified"},
      {"DYNAMICCL_VERIFY", verify},
      {"DYNAMICCL_ONLINE", online},
      {"NCCL_PROFILER_PLUGIN", s.profilerIsUs ? "this library" : "not this library"},
      {"DYNAMICCL_EPOCH_CALLS", std::to_string(s.epochCalls)},
      {"DYNAMICCL_BUDGET explore", real(s.budget.explore)},
      {"profile", profileDigest},
      {"topology", buildFingerprint(shape, host).text()},
      {"DYNAMICCL_WORKLOAD", workload(s.workload)},
  };
  // Only where they differ from NCCL's defaults, so that NCCL's records read as they always did.
  if (rules.host != abi::Host::Nccl) fields[1].value = std::string(rules.hostRules().name) + " " + fields[1].value;
  const std::string fixed = (s.ncclMinChannels.empty() && s.ncclMaxChannels.empty() ? "" : "channels ") +
                            std::string(rules.hostRules().overridesAfterTuner && !s.rcclOverrideAlgo.empty() ? "algo " : "") +
                            (rules.hostRules().overridesAfterTuner && !s.rcclOverrideProto.empty() ? "proto" : "");
  if (!fixed.empty()) fields.push_back({"user_fixed", fixed});
  return fields;
}

std::string inputsRecord(const std::vector<InputField>& fields, const std::string& who) {
  std::string out = std::string(kInputsHeader).append("\nwho=").append(who).append("\n");
  for (const InputField& f : fields) {
    std::string value = f.value;
    for (char& c : value) c = c == '\n' ? ' ' : c;  // one field per line
    out += f.name + "=" + value + "\n";
  }
  return out;
}

}  // namespace dynamiccl::plugin
