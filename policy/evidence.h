// Evidence behind a rule (where it came from, what it was measured on, how sure) and the trust
// levels built on it: only rules measured on this communicator's hardware change NCCL's choice by
// default; the rest wait for in-job verification or an explicit opt-in (DYNAMICCL_TRUST=all).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"

namespace dynamiccl::policy {

enum class Provenance : uint8_t { MeasuredOffline, MeasuredInJob, Simulated, Learned };
std::string_view provenanceName(Provenance p);  // "measured-offline", "measured-in-job", "simulated", "learned"
std::optional<Provenance> parseProvenance(std::string_view name);
constexpr bool isMeasured(Provenance p) { return p == Provenance::MeasuredOffline || p == Provenance::MeasuredInJob; }

struct Evidence {
  Provenance provenance = Provenance::Simulated;
  std::optional<ClusterHardware> fingerprint;  // the hardware it was measured (or simulated) on
  std::string ncclVersion;                     // "2.28.9"; empty when unknown
  int samples = 0;                             // timings of the rule's configuration behind it
  int defaultSamples = 0;                      // timings of NCCL's default it was compared with
  double gain = NAN;                           // speed-up over NCCL's default minus 1 (0.1 = 10% faster)
  double gainLow = NAN, gainHigh = NAN;        // interval of gain: each end a one-sided 95% bound (tune's decision rule)
  std::string date;                            // ISO 8601 date (or date-time) it was established
  bool operator==(const Evidence&) const = default;
};

// One line: "measured-offline on {...}, NCCL 2.28.9, 27 vs 27 samples, gain +12.0% [+8.0%, +16.0%], 2026-11-23".
std::string evidenceText(const Evidence& e);

// False when the evidence's own figures show no speed-up: the interval's low end (else the gain) is
// not above 0. True when no gain was recorded (nothing to contradict).
bool measuredGain(const Evidence& e);

// A measured rule whose own figures show no gain: applied at no trust level (ruleStanding's refuted),
// so no tool writes one.
inline bool refutedByItsEvidence(const Evidence& e) { return isMeasured(e.provenance) && !measuredGain(e); }

// Checks values a reader or writer must refuse (negative samples, inverted interval, bad date, an
// nccl_version that names no release).
Status validateEvidence(const Evidence& e);

enum class Trust : uint8_t {
  Verified,  // default: only verified rules (and the user's own NVIDIA CSV rules) change NCCL's choice
  All,       // opted in: every rule applies, verified or not
};
std::optional<Trust> parseTrust(std::string_view name);  // "verified" or "all"

// Whether each rule of a profile is verified for one communicator, and why not. The communicator's
// fingerprint comes from sources every rank shares (features/rule_fingerprint.h); on one node this
// host's probe must not contradict the rule's fingerprint either.
// A measured rule's own evidence is read, not only carried: a gain that is no gain beyond its
// interval refutes the rule (applied at no trust level, not even a candidate), and one measured under
// another release's selection rules (abi/pick_rule.h) is unverified under this one.
struct RuleStanding {
  bool verified = false;
  bool applies = false;   // verified, the user's own rule (NVIDIA CSV), or trust = All
  bool refuted = false;   // its evidence shows no gain beyond its interval: never applied nor re-tested
  bool otherRelease = false;  // measured under another NCCL release's selection rules than the one in force
  std::string why;        // "verified", "simulated", "measured on another fingerprint", ...
};
struct StandingInputs {
  std::optional<TopologyFingerprint> shared;  // fingerprintForRules(shape, declared, host)
  std::optional<TopologyFingerprint> local;   // single-node only: probe and DYNAMICCL_TOPO, no declaration
  bool userRules = false;                     // the profile is the user's own NVIDIA CSV
  Trust trust = Trust::Verified;
  int ncclVersionCode = 0;                    // the NCCL release in force (23101 for 2.31.1); 0: unknown, not checked
  static StandingInputs of(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                           const HostSources& host, bool userRules, Trust trust, int ncclVersionCode = 0);
};
RuleStanding ruleStanding(const std::optional<Evidence>& evidence, const StandingInputs& inputs);

}  // namespace dynamiccl::policy
