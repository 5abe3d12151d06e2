// Provenance names, evidence checks and whether a rule is verified for a communicator.
#include "policy/evidence.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "abi/abi.h"
#include "policy/profile.h"

namespace dynamiccl::policy {
namespace {

constexpr std::string_view kProvenanceNames[] = {"measured-offline", "measured-in-job", "simulated", "learned"};

bool sameRate(double a, double b) { return std::fabs(a - b) <= 0.02 * std::max(std::fabs(a), std::fabs(b)); }

// YYYY-MM-DD, optionally followed by 'T' and a time (not checked further).
bool isoDate(std::string_view s) {
  if (s.size() < 10 || (s.size() > 10 && s[10] != 'T')) return false;
  for (size_t i = 0; i < 10; ++i)
    if (i == 4 || i == 7 ? s[i] != '-' : !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  const int month = (s[5] - '0') * 10 + (s[6] - '0'), day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

std::string percent(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * x);
  return text;
}

// Facts the probe knows (non-zero) must agree; unknown ones cannot contradict.

// The first fact that differs, ours against the rule's (the tolerance: rates within 2%, counts exact);
// "" when they match. `probe`: a single-node probe, whose unknown (0) facts are not compared.
std::string firstDifference(const TopologyFingerprint& ours, const ClusterHardware& rule, bool probe, const char* whose) {
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  auto differs = [&](const char* name, double a, double b) {
    return std::string(name) + " differs: " + whose + " " + num(a) + ", the rule's " + num(b);
  };
  const bool gpuKnown = !probe || ours.computeCap > 0;
  if (gpuKnown && ours.computeCap != rule.computeCap) return differs("gpu_cc", ours.computeCap, rule.computeCap);
  if (gpuKnown && !sameRate(ours.nvlinkBwPerGpu_GBps, rule.nvlinkBwPerGpu_GBps))
    return differs("nvlink_GBps (2% tolerance)", ours.nvlinkBwPerGpu_GBps, rule.nvlinkBwPerGpu_GBps);
  if ((!probe || ours.nicsPerNode > 0) && ours.nicsPerNode != rule.nicsPerNode)
    return differs("nics_per_node", ours.nicsPerNode, rule.nicsPerNode);
  if ((!probe || ours.nicSpeed_GBps > 0) && !sameRate(ours.nicSpeed_GBps, rule.nicSpeed_GBps))
    return differs("nic_GBps (2% tolerance)", ours.nicSpeed_GBps, rule.nicSpeed_GBps);
  return {};
}

}  // namespace

bool measuredGain(const Evidence& e) {
  if (std::isfinite(e.gainLow)) return e.gainLow > 0;
  return !std::isfinite(e.gain) || e.gain > 0;
}

std::string_view provenanceName(Provenance p) { return kProvenanceNames[static_cast<int>(p)]; }

std::optional<Provenance> parseProvenance(std::string_view name) {
  for (size_t i = 0; i < std::size(kProvenanceNames); ++i)
    if (name == kProvenanceNames[i]) return static_cast<Provenance>(i);
  return std::nullopt;
}

std::string evidenceText(const Evidence& e) {
  std::string s(provenanceName(e.provenance));
  if (e.fingerprint) s += " on " + clusterHardwareToJson(*e.fingerprint);
  if (!e.ncclVersion.empty()) s += ", NCCL " + e.ncclVersion;
  if (e.samples || e.defaultSamples)
    s += ", " + std::to_string(e.samples) + " vs " + std::to_string(e.defaultSamples) + " default samples";
  if (std::isfinite(e.gain)) {
    s += ", gain " + percent(e.gain);
    if (std::isfinite(e.gainLow) && std::isfinite(e.gainHigh))
      s += " [" + percent(e.gainLow) + ", " + percent(e.gainHigh) + "]";
  }
  if (!e.date.empty()) s += ", " + e.date;
  return s;
}

Status validateEvidence(const Evidence& e) {
  if (e.samples < 0 || e.defaultSamples < 0) return makeError("samples must be non-negative");
  if (std::isnan(e.gain) && !std::isnan(e.gainLow)) return makeError("gain_ci needs a gain");
  if (std::isinf(e.gain) || (std::isfinite(e.gain) && e.gain <= -1)) return makeError("gain must be a number > -1");
  if (std::isnan(e.gainLow) != std::isnan(e.gainHigh)) return makeError("gain_ci must be [low, high]");
  if (std::isfinite(e.gainLow) && !(e.gainLow <= e.gain && e.gain <= e.gainHigh))
    return makeError("gain_ci must be [low, high] around gain");
  if (std::isinf(e.gainLow) || std::isinf(e.gainHigh)) return makeError("gain_ci must be finite");
  if (!e.date.empty() && !isoDate(e.date)) return makeError("date must be ISO 8601 (YYYY-MM-DD)");
  if (!e.ncclVersion.empty() && !abi::parseNcclVersion(e.ncclVersion))
    return makeError("nccl_version \"" + e.ncclVersion.substr(0, 32) + "\" is not a release (such as 2.28.9)");
  if (e.fingerprint)
    if (auto s = validateClusterHardware(*e.fingerprint); !s) return makeError("fingerprint: " + s.error());
  return Ok{};
}

std::optional<Trust> parseTrust(std::string_view name) {
  if (name == "verified") return Trust::Verified;
  if (name == "all") return Trust::All;
  return std::nullopt;
}

StandingInputs StandingInputs::of(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                                  const HostSources& host, bool userRules, Trust trust, int ncclVersionCode) {
  StandingInputs in;
  in.ncclVersionCode = ncclVersionCode;
  in.shared = fingerprintForRules(shape, declared, host).fingerprint;
  if (shape.nNodes <= 1) in.local = fingerprintForRules(shape, std::nullopt, host).fingerprint;
  in.userRules = userRules;
  in.trust = trust;
  return in;
}

RuleStanding ruleStanding(const std::optional<Evidence>& e, const StandingInputs& in) {
  RuleStanding s;
  // The release the evidence was measured under; 0 when it names none (unreadable is told apart below).
  const int measuredUnder = e && !e->ncclVersion.empty() ? abi::parseNcclVersion(e->ncclVersion).value_or(0) : 0;
  if (!e) s.why = "no evidence";
  else if (!isMeasured(e->provenance)) s.why = std::string(provenanceName(e->provenance));
  else if (!measuredGain(*e)) s.refuted = true, s.why = "measured, no gain beyond its interval (" + evidenceText(*e) + ")";
  else if (!e->fingerprint) s.why = "measured, fingerprint not recorded";
  else if (!in.shared) s.why = "measured, but this communicator has no fingerprint every rank shares";
  else if (std::string d = firstDifference(*in.shared, *e->fingerprint, false, "this communicator's");
           !d.empty() || (in.local && !(d = firstDifference(*in.local, *e->fingerprint, true, "this host's probe")).empty()))
    s.why = "measured on another fingerprint (" + d + ")";
  else if (!e->ncclVersion.empty() && measuredUnder == 0) s.why = "measured, NCCL version \"" + e->ncclVersion + "\" unreadable";
  else if (measuredUnder > 0 && in.ncclVersionCode > 0 &&
           abi::pickRuleFor(measuredUnder) != abi::pickRuleFor(in.ncclVersionCode))
    s.otherRelease = true,
    s.why = std::string("measured under NCCL ") + abi::pickRuleName(abi::pickRuleFor(measuredUnder)) +
            "'s selection rules, this job runs " + abi::pickRuleName(abi::pickRuleFor(in.ncclVersionCode)) + "'s";
  else s.verified = true, s.why = "verified";
  // NVIDIA CSV files are the user's own explicit rules: applying them is the user's opt-in.
  s.applies = !s.refuted && (s.verified || in.userRules || in.trust == Trust::All);
  if (!s.verified && in.userRules) s.why = "the user's own rule (NVIDIA CSV)";
  return s;
}

}  // namespace dynamiccl::policy
