#include "plugin/tuner/profile_source.h"

#include <cstdio>
#include <mutex>
#include <optional>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

// ", learned policy (guard margin 0.05)" when the profile carries a network, so logs say what decides.
std::string learnedPolicyText(const policy::Profile& p) {
  if (!p.network) return "";
  const std::optional<float> margin = p.network->weights().guardMargin;
  if (!margin) return ", learned policy (no guard: its choices replace NCCL's everywhere)";
  char text[64];
  std::snprintf(text, sizeof text, ", learned policy (guard margin %.3g)", *margin);
  return text;
}

std::mutex gMutex;
std::shared_ptr<const LoadedProfile> gLoaded;

std::shared_ptr<const LoadedProfile> load(const ProfileSettings& s) {
  auto out = std::make_shared<LoadedProfile>();
  out->settings = s;
  out->profile = std::make_shared<policy::Profile>();
  if (!s.enabled) {
    logInfo("disabled by DYNAMICCL_ENABLE=0; NCCL's own choices stand");
    return out;
  }
  std::string path = s.profilePath;
  policy::ProfileFormat format = policy::ProfileFormat::Auto;
  if (path.empty() && !s.nvidiaCsvPath.empty()) {
    path = s.nvidiaCsvPath;
    format = policy::ProfileFormat::NvidiaCsv;
  } else if (!path.empty() && !s.nvidiaCsvPath.empty()) {
    logInfo("DYNAMICCL_PROFILE takes precedence over NCCL_TUNER_CONFIG_FILE=%s", s.nvidiaCsvPath.c_str());
  }
  if (path.empty()) {
    logInfo("no profile (DYNAMICCL_PROFILE unset); NCCL's own choices stand");
    return out;
  }
  auto profile = policy::loadProfileFile(path, format);
  if (!profile) {
    out->bad = true;
    out->error = profile.error();
    logWarn("profile not used, NCCL's own choices stand%s: %s", s.strict ? " (DYNAMICCL_STRICT=1: failing init)" : "",
            profile.error().c_str());
    return out;
  }
  logInfo("profile %s loaded from %s: %zu rules%s", profile->name.empty() ? "(unnamed)" : profile->name.c_str(),
          path.c_str(), profile->rules.size(), learnedPolicyText(*profile).c_str());
  out->profile = std::make_shared<policy::Profile>(std::move(profile.value()));
  return out;
}

}  // namespace

ProfileSettings ProfileSettings::from(const Settings& all) {
  return ProfileSettings{all.profilePath, all.nvidiaCsvPath, all.strict, all.enabled};
}

std::shared_ptr<const LoadedProfile> currentProfile(const Settings& all) {
  const ProfileSettings settings = ProfileSettings::from(all);
  std::lock_guard lock(gMutex);
  if (!gLoaded || !(gLoaded->settings == settings)) gLoaded = load(settings);
  return gLoaded;
}

policy::PolicyTable compileForShape(const LoadedProfile& loaded, const CommShape& shape, const Settings& settings) {
  if (loaded.profile->network) {
    // With a learned "policy" section, Eigen scores configurations here, off the hot path.
    HostSources host = localHostSources();
    host.overrides = settings.topo;  // the operator's word beats every probe
    return policy::compileWithPolicy(*loaded.profile, shape, {&host, settings.workload});
  }
  const std::pair<int, int> key{shape.nNodes, shape.nRanks};
  std::lock_guard lock(loaded.compiledMutex);
  auto it = loaded.compiledByShape.find(key);
  if (it == loaded.compiledByShape.end()) {
    auto table = std::make_shared<const policy::DecisionTable>(policy::DecisionTable::compile(*loaded.profile, shape));
    if (loaded.compiledByShape.size() >= kMaxCachedShapes) return policy::PolicyTable{*table, {}, {}};
    it = loaded.compiledByShape.emplace(key, std::move(table)).first;
  }
  return policy::PolicyTable{*it->second, {}, {}};
}

}  // namespace dynamiccl::plugin
