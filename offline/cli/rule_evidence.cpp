#include "offline/cli/rule_evidence.h"

#include <climits>

namespace dynamiccl::cli {
namespace {

std::string bound(uint64_t n) { return n == UINT64_MAX ? "inf" : std::to_string(n); }

std::string ruleText(const policy::Rule& r) {
  std::string s = r.origin.empty() ? "rule" : r.origin;
  s += " " + (r.collective ? std::string(collectiveName(*r.collective)) : std::string("any"));
  s += r.sizeKey == policy::SizeKey::Bytes ? " bytes [" : " bytes_per_rank [";
  s += bound(r.minBytes) + ", " + bound(r.maxBytes) + "]";
  if (r.minNodes != 1 || r.maxNodes != INT_MAX)
    s += " nodes [" + std::to_string(r.minNodes) + ", " + (r.maxNodes == INT_MAX ? "inf" : std::to_string(r.maxNodes)) + "]";
  s += " " + std::string(algoName(r.decision.algo)) + "/" + std::string(protoName(r.decision.proto));
  if (r.decision.nChannels) s += " channels=" + std::to_string(r.decision.nChannels);
  return s;
}

}  // namespace

std::string ruleEvidenceLine(const policy::Rule& r, const std::optional<policy::RuleStanding>& standing) {
  std::string s = ruleText(r) + ": ";
  if (r.evidence) s += policy::evidenceText(*r.evidence);
  else if (!r.evidenceProblem.empty()) s += "malformed evidence (" + r.evidenceProblem + ")";
  else s += "no evidence";
  if (standing) {
    s += " -- " + (standing->verified ? std::string("verified") : "unverified (" + standing->why + ")");
    if (!standing->verified) s += standing->applies ? ", applied (opted in)" : ", NCCL's choice stands";
  } else if (r.evidence && policy::refutedByItsEvidence(*r.evidence)) {
    s += " -- refuted: its own evidence shows no gain beyond its interval, never applied";
  } else if (r.evidence && policy::isMeasured(r.evidence->provenance) && r.evidence->fingerprint) {
    s += " -- verified where the communicator's fingerprint matches";
  } else {
    s += " -- unverified: applied only with DYNAMICCL_TRUST=all";
  }
  return s;
}

}  // namespace dynamiccl::cli
