// The profile this process tunes with: read from the environment once and shared by every
// communicator (jobs create hundreds). Read again only if the environment names another file.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "plugin/tuner/trust_setting.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

struct ProfileSettings {
  std::string profilePath;   // DYNAMICCL_PROFILE (our JSON, or NVIDIA's CSV by content)
  std::string nvidiaCsvPath; // NCCL_TUNER_CONFIG_FILE (NVIDIA's example tuner format)
  bool strict = false;       // DYNAMICCL_STRICT=1: a bad profile fails communicator init
  bool enabled = true;       // DYNAMICCL_ENABLE=0: keep NCCL's choices everywhere
  TrustSetting trust;        // DYNAMICCL_TRUST: verified (default) or all
  static ProfileSettings fromEnvironment();
  bool operator==(const ProfileSettings&) const = default;
};

struct LoadedProfile {
  ProfileSettings settings;
  std::shared_ptr<const policy::Profile> profile;  // never null: empty when none or bad
  bool bad = false;                                // the named file could not be used
  std::string error;
  // One line per loaded profile, not per communicator: learned rules off, host probe disagrees.
  mutable std::atomic<bool> warnedLearnedRulesOff{false}, warnedProbeDisagrees{false}, warnedUnverified{false};
};

// Thread-safe; logs one clear line per distinct settings (loaded, or why it is not used).
std::shared_ptr<const LoadedProfile> currentProfile();

}  // namespace dynamiccl::plugin
