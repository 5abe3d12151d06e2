#include "plugin/tuner/profile_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
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

// " (2 measured-offline, 5 simulated, 1 without evidence)": what the rules rest on.
std::string evidenceSummary(const policy::Profile& p) {
  if (p.userRules) return " (NVIDIA CSV: the user's own rules)";
  size_t counts[4] = {}, none = 0;
  for (const policy::Rule& r : p.rules) r.evidence ? ++counts[static_cast<int>(r.evidence->provenance)] : ++none;
  std::string text;
  for (int i = 0; i < 4; ++i)
    if (counts[i])
      text += (text.empty() ? "" : ", ") + std::to_string(counts[i]) + " " +
              std::string(policy::provenanceName(static_cast<policy::Provenance>(i)));
  if (none) text += (text.empty() ? "" : ", ") + std::to_string(none) + " without evidence";
  return text.empty() ? "" : " (" + text + ")";
}

// FNV-1a over 8-byte words (a 60k-rule profile in a few ms), carried across the chunks of one file.
uint64_t digestWords(uint64_t h, const char* bytes, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes + i, std::min<size_t>(8, n - i));
    h = ((h ^ w) * 0x100000001b3ull) ^ (h >> 29);
  }
  return h;
}
constexpr uint64_t kDigestSeed = 0x6479636364696765ull;

std::string digestText(uint64_t size, uint64_t h) {
  char text[64];
  std::snprintf(text, sizeof text, "%llu bytes, hash %016llx", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(h));
  return text;
}

// The bytes the profile was parsed from, digested as digestOfFile does (its chunks are whole words).
std::string digestOfBytes(std::string_view bytes) {
  return digestText(bytes.size(), digestWords(kDigestSeed, bytes.data(), bytes.size()));
}

// The file's bytes as one short text ranks compare: a mount that failed on one node shows here.
// Read apart from the parse only when the parse did not read it (a file over the size cap, or gone).
std::string digestOfFile(const std::string& path) {
  auto fd = openRegularFile(path, O_RDONLY);  // never blocks: a FIFO is refused like the parser refuses it
  if (!fd) return "unreadable (" + fd.error() + ")";
  std::FILE* f = fdopen(*fd, "rb");
  if (!f) {
    close(*fd);
    return std::string("unreadable (") + std::strerror(errno) + ")";
  }
  uint64_t h = kDigestSeed, size = 0;
  char buf[1 << 16];  // a multiple of 8: the words are those of the whole file
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) {
    h = digestWords(h, buf, n);
    size += n;
  }
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return "unreadable (read error)";
  return digestText(size, h);
}

constexpr double kFirstReadBudget_ms = 50;

std::mutex gMutex;
std::shared_ptr<const LoadedProfile> gLoaded;
std::atomic<bool> gWarnedTrustAll{false};

void logTrust(policy::Trust trust) {
  if (trust == policy::Trust::All && firstTime(gWarnedTrustAll))  // the user's choice, not a fault: info
    logInfo("DYNAMICCL_TRUST=all: unverified rules (simulated, learned, measured elsewhere or without evidence) "
            "change NCCL's choices");
}

// One line when rules' evidence could not be read: those rules load unverified.
void logEvidenceProblems(const policy::Profile& p) {
  size_t bad = 0;
  const policy::Rule* first = nullptr;
  for (const policy::Rule& r : p.rules)
    if (!r.evidenceProblem.empty()) first = first ? first : &r, ++bad;
  if (bad)
    logWarn("%zu rule(s) with malformed evidence load as unverified (%s: %s)", bad, first->origin.c_str(),
            first->evidenceProblem.c_str());
}

std::shared_ptr<const LoadedProfile> load(const ProfileSettings& s) {
  auto out = std::make_shared<LoadedProfile>();
  out->settings = s;
  out->profile = std::make_shared<policy::Profile>();
  logTrust(s.trust);
  if (!s.enabled) {
    out->sourceDigest = "not read (DYNAMICCL_ENABLE=0)";
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
  const auto started = std::chrono::steady_clock::now();
  std::optional<std::string> digest;  // of the bytes parsed: the file is read once
  auto profile = policy::loadProfileFile(path, format, policy::kMaxProfileBytes,
                                         [&](std::string_view bytes) { digest = digestOfBytes(bytes); });
  out->sourceDigest = digest ? std::move(*digest) : digestOfFile(path);
  const double readMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (!profile) {
    out->bad = true;
    out->error = profile.error();
    logWarn("profile not used, NCCL's own choices stand%s: %s", s.strict ? " (DYNAMICCL_STRICT=1: failing init)" : "",
            profile.error().c_str());
    return out;
  }
  // Read once per process, by the first communicator's init: past the budget, the line says what it cost.
  const bool overBudget = readMs > kFirstReadBudget_ms;
  logInfo("profile %s loaded from %s: %zu rules%s%s; read in %.0f ms%s",
          profile->name.empty() ? "(unnamed)" : profile->name.c_str(), path.c_str(), profile->rules.size(),
          evidenceSummary(*profile).c_str(), learnedPolicyText(*profile).c_str(), readMs,
          overBudget ? ", over the 50 ms budget: the first communicator's init waited for it" : "");
  logEvidenceProblems(*profile);
  out->profile = std::make_shared<policy::Profile>(std::move(profile.value()));
  return out;
}

}  // namespace

ProfileSettings ProfileSettings::from(const Settings& all) {
  return ProfileSettings{all.profilePath, all.nvidiaCsvPath, all.strict, all.enabled, all.trust};
}

std::shared_ptr<const LoadedProfile> currentProfile(const Settings& all) {
  const ProfileSettings settings = ProfileSettings::from(all);
  std::lock_guard lock(gMutex);
  if (!gLoaded || !(gLoaded->settings == settings)) gLoaded = load(settings);
  return gLoaded;
}

policy::PolicyTable compileForShape(const LoadedProfile& loaded, const CommShape& shape, const Settings& settings,
                                    int ncclVersionCode) {
  HostSources host = localHostSources();
  host.overrides = settings.topo;  // the operator's word beats every probe
  const policy::PolicyInputs inputs{&host, settings.workload, settings.trust, ncclVersionCode};
  // With a learned "policy" section, Eigen scores configurations here, off the hot path.
  if (loaded.profile->network) return policy::compileWithPolicy(*loaded.profile, shape, inputs);
  const auto key = std::make_tuple(shape.nNodes, shape.nRanks, shape.minRanksPerNode, shape.maxRanksPerNode,
                                   static_cast<int>(settings.trust), ncclVersionCode);
  std::lock_guard lock(loaded.compiledMutex);
  auto it = loaded.compiledByShape.find(key);
  if (it == loaded.compiledByShape.end()) {
    auto tables = std::make_shared<const policy::PolicyTable>(policy::compileWithPolicy(*loaded.profile, shape, inputs));
    if (loaded.compiledByShape.size() >= kMaxCachedShapes) return *tables;
    it = loaded.compiledByShape.emplace(key, std::move(tables)).first;
  }
  return *it->second;
}

}  // namespace dynamiccl::plugin
