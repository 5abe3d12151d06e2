// The profile this process tunes with: read once and shared by every communicator (jobs create
// hundreds). Read again only if the settings name another file.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "plugin/settings/settings.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

struct ProfileSettings {
  std::string profilePath;   // DYNAMICCL_PROFILE (our JSON, or NVIDIA's CSV by content)
  std::string nvidiaCsvPath; // NCCL_TUNER_CONFIG_FILE (NVIDIA's example tuner format)
  bool strict = false;       // DYNAMICCL_STRICT=1: a bad profile fails communicator init
  bool enabled = true;       // DYNAMICCL_ENABLE=0: keep NCCL's choices everywhere
  policy::Trust trust = policy::Trust::Verified;  // DYNAMICCL_TRUST: which rules change NCCL's choice
  static ProfileSettings from(const Settings& all);
  bool operator==(const ProfileSettings&) const = default;
};

struct LoadedProfile {
  ProfileSettings settings;
  std::shared_ptr<const policy::Profile> profile;  // never null: empty when none or bad
  bool bad = false;                                // the named file could not be used
  std::string error;
  // What every rank compares at init: the file's size and hash, "none", or why it could not be read.
  std::string sourceDigest = "none";
  // One line per loaded profile, not per communicator: learned rules off, host probe disagrees.
  mutable std::atomic<bool> warnedLearnedRulesOff{false}, warnedProbeDisagrees{false}, warnedRefuted{false},
      warnedOtherRelease{false};
  // Init only: whether this line was not yet logged for the profile (one line per distinct reason, so a
  // communicator whose rules stand otherwise than the last one's says why; hundreds alike say it once).
  bool firstTimeSaid(const std::string& line) const {
    std::lock_guard lock(compiledMutex);
    return said.size() < 64 && said.insert(line).second;
  }
  mutable std::set<std::string> said;
  // A rules-only profile's tables depend on the shape, the trust level and the NCCL release alone:
  // compiled once per key.
  mutable std::mutex compiledMutex;
  mutable std::map<std::tuple<int, int, int, int, int, int>, std::shared_ptr<const policy::PolicyTable>> compiledByShape;
};

// The table for a communicator of this shape: from the per-shape cache for a rules-only profile
// (at most kMaxCachedShapes kept), compiled afresh with the learned network's rules otherwise.
inline constexpr size_t kMaxCachedShapes = 64;
// ncclVersionCode: the release in force (NcclRules::versionCode), 0 when unknown.
policy::PolicyTable compileForShape(const LoadedProfile& loaded, const CommShape& shape, const Settings& settings,
                                    int ncclVersionCode);

// Thread-safe; logs one clear line per distinct settings (loaded, or why it is not used).
std::shared_ptr<const LoadedProfile> currentProfile(const Settings& settings);

}  // namespace dynamiccl::plugin
