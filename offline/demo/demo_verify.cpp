// ============================ IN-JOB VERIFICATION PLUGS IN HERE ============================
// The measured demo's tuned profile holds simulated rules: unverified, so with the default trust
// (DYNAMICCL_TRUST=verified) they change none of NCCL's choices unless the job verifies them.
//   verificationEnv(): what every rank of the replayed job is given for that (docs/ONLINE.md,
//                      "In-job verification"): the profile, the trust level, the switch, the store.
//   exportVerified():  what the job leaves, the store's verdicts as a profile of verified rules
//                      (what `dynamiccl export --from-store` writes).
// Everything else in the demo stays as it is when these settings change.
#include <cctype>
#include <filesystem>
#include <cstdio>

#include "offline/demo/demo_steps.h"
#include "offline/files/files.h"
#include "offline/verdicts/verdicts.h"
#include "store/store.h"

namespace dynamiccl::cli::demo {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> verificationEnv(const std::string& profilePath,
                                                                 const std::string& storePath) {
  return {
      {"DYNAMICCL_PROFILE", profilePath},
      {"DYNAMICCL_TRUST", "verified"},  // unverified rules reach NCCL only as candidates under test
      // DYNAMICCL_VERIFY left at its default (auto): on, since the profiler role is this library, as a
      // user's job gets it; no DYNAMICCL_ONLINE: verification acts alone.
      {"DYNAMICCL_DB", storePath},  // the verdicts, and the observations behind them
      {"DYNAMICCL_RECORD", "1"},    // verdicts are stored with the observations
  };
}

Expected<VerifiedExport> exportVerified(const std::string& storePath, const std::string& outPath, bool hardwareUnknown) {
  if (!std::filesystem::exists(storePath)) {  // a job with nothing to search measures nothing and stores nothing
    policy::Profile empty;
    empty.name = "dynamiccl demo: verified in the replayed job (nothing to verify)";
    if (auto s = files::writeFile(outPath, policy::profileToJson(empty)); !s) return makeError(s.error());
    VerifiedExport out;
    out.path = outPath;
    return out;
  }
  store::StoreOptions so;
  so.path = storePath;
  so.read_only = true;
  auto db = store::Store::open(so);
  if (!db) return makeError(db.error());
  auto verified = verdicts::profileFromStore(**db, "dynamiccl demo: verified in the replayed job");
  if (!verified) return makeError(verified.error());
  if (hardwareUnknown)  // a guessed fingerprint is never written as the machine's
    for (policy::Rule& r : verified->profile.rules)
      if (r.evidence) r.evidence->fingerprint.reset();
  if (auto s = files::writeFile(outPath, policy::profileToJson(verified->profile)); !s) return makeError(s.error());
  if (auto back = policy::loadProfileFile(outPath); !back) return makeError(outPath + " does not load: " + back.error());
  VerifiedExport out;
  out.path = outPath;
  out.rules = verified->profile.rules.size();
  out.withoutFingerprint = verified->withoutFingerprint;
  for (const store::VerdictRow& v : verified->verdicts) {
    JobVerdict j;
    j.coll = parseCollective(v.collective).value_or(Collective::AllReduce);
    j.minBytes = v.min_bytes;
    j.maxBytes = v.max_bytes;
    j.nRanks = v.n_ranks;
    j.candidate = lower(v.algo + "/" + v.proto);
    j.state = v.state;
    j.gain = v.gain;
    j.line = verdicts::describeVerdict(v, "replayed calls (draws, not runs)");
    out.verdicts.push_back(std::move(j));
    out.rows.push_back(v);
  }
  return out;
}

}  // namespace dynamiccl::cli::demo
