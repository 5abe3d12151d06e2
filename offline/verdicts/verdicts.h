// verdicts: what in-job verification stored, turned into a profile of verified rules (each rule
// carries its in-job evidence: samples, gain and interval, the hardware it was measured on).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "policy/policy.h"
#include "store/store.h"

namespace dynamiccl::verdicts {

// A promoted verdict left out of the profile, and why ("ranks must be >= 1, the row has 0").
struct RefusedVerdict {
  store::VerdictRow row;
  std::string reason;
  size_t index = 0;  // its position in VerifiedProfile::verdicts
};

struct VerifiedProfile {
  policy::Profile profile;                 // one rule per promoted candidate
  std::vector<store::VerdictRow> verdicts; // every latest verdict read (promoted, dropped, testing)
  size_t withoutFingerprint = 0;           // promoted but measured on unknown hardware: unverified rules
  std::vector<RefusedVerdict> refused;     // promoted rows no reader would accept: each left out alone
};

// The latest verdict per key in the store; promoted ones become rules with provenance measured-in-job.
// A promoted row that would not make a valid rule is refused by itself, never the whole profile:
// every rule written reads back through the plugin's own parser.
Expected<VerifiedProfile> profileFromStore(store::Store& db, const std::string& name);

// One line per verdict: "allreduce 1M..2M 4x1: ring/ll128 vs tree/simple: promoted, +8.1% [+5.0%, +11.3%], 40 vs 950
// measured calls"; `calls` says what the samples were (a replayed job's are draws, not measurements).
std::string describeVerdict(const store::VerdictRow& v, std::string_view calls = "measured calls");

}  // namespace dynamiccl::verdicts
