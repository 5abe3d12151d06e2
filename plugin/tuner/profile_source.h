// The profile this process tunes with: read once and shared by every communicator (jobs create
// hundreds). Read again only if the settings name another file.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "plugin/learned_network.h"
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

// A profile file bigger than this is parsed on a thread of its own, off NCCL's init path: measured
// here (bench_policy_init), rules parse at about 23 ms per MB and a learned network at 70 ms per MB,
// against the first init's 50 ms budget.
inline constexpr uint64_t kParsedAtInitBytes = uint64_t{1} << 20;
// Such a profile's rules apply from this call of each communicator (NCCL's choices before it). The
// file's size is in the digest every rank agrees on, so every rank switches at the same call; one
// whose parse is not done by then waits for it there (a parse of bytes already read: it ends).
inline constexpr uint64_t kBackgroundProfileFirstCall = 1000;

struct LoadedProfile {
  ProfileSettings settings;
  // profile, bad and error are final once parsed (at once, or when the background parse ends).
  std::shared_ptr<const policy::Profile> profile;  // never null: empty when none or bad
  NetworkPtr network;                              // its "policy" section read; nullptr: none
  bool bad = false;                                // the named file could not be used
  std::string error;
  uint64_t firstCall = 0;  // the call of each communicator from which the profile's rules apply
  mutable std::atomic<bool> parsed{true};
  mutable std::mutex parseMutex;
  mutable std::vector<std::function<void()>> afterParse;  // what waits for the parse (whenParsed)
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

// Runs job once the profile is parsed: at once in this thread if it is, else in the thread parsing
// it, right after the parse.
void whenParsed(const std::shared_ptr<const LoadedProfile>& loaded, std::function<void()> job);

// Thread-safe; logs one clear line per distinct settings (loaded, or why it is not used).
std::shared_ptr<const LoadedProfile> currentProfile(const Settings& settings);

}  // namespace dynamiccl::plugin
