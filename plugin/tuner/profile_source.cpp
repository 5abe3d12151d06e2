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
#include <thread>
#include <vector>

#include "plugin/log.h"
#include "plugin/tuner/background_work.h"

namespace dynamiccl::plugin {
namespace {

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

// FNV-style mixing over 8-byte words in four independent lanes (a multiply chain each, so the four
// overlap: 54 MB in about 4 ms here, against 13 ms for one lane), carried across a file's chunks.
struct ProfileDigest {
  static constexpr size_t kBlock = 32;  // four words: every chunk but the last is a multiple of it
  uint64_t lane[4] = {0x6479636364696765ull, 0x6c616e6531ull, 0x6c616e6532ull, 0x6c616e6533ull};
  uint64_t size = 0;
  void add(const char* bytes, size_t n) {
    size += n;
    for (size_t i = 0; i < n; i += kBlock) {
      uint64_t w[4] = {};
      std::memcpy(w, bytes + i, std::min(kBlock, n - i));
      for (int k = 0; k < 4; ++k) lane[k] = ((lane[k] ^ w[k]) * 0x100000001b3ull) ^ (lane[k] >> 29);
    }
  }
  std::string text() const {
    uint64_t h = size;
    for (uint64_t l : lane) h = ((h ^ l) * 0x100000001b3ull) ^ (h >> 29);
    char out[64];
    std::snprintf(out, sizeof out, "%llu bytes, hash %016llx", static_cast<unsigned long long>(size),
                  static_cast<unsigned long long>(h));
    return out;
  }
};

// The bytes the profile is parsed from, digested as digestOfFile does.
std::string digestOfBytes(std::string_view bytes) {
  ProfileDigest d;
  d.add(bytes.data(), bytes.size());
  return d.text();
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
  ProfileDigest d;
  char buf[1 << 16];  // a multiple of ProfileDigest::kBlock: the blocks are those of the whole file
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) d.add(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return "unreadable (read error)";
  return d.text();
}

constexpr double kFirstReadBudget_ms = 50;

std::mutex gProfileCacheMutex;
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

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// The profile parsed from the bytes read, or why it is not used; one line either way. inBackground:
// parsed off the init path, so the time it took held no init.
void parseInto(LoadedProfile& out, std::string_view bytes, const std::string& path, policy::ProfileFormat format,
               std::chrono::steady_clock::time_point started, bool inBackground) {
  auto profile = policy::parseProfileText(bytes, format, path);
  auto network = profile ? readLearnedNetwork(*profile) : Expected<NetworkPtr>(NetworkPtr());
  if (profile && !network) profile = makeError(network.error());  // a bad network makes the profile unusable
  const double ms = msSince(started);
  if (!profile) {
    out.bad = true;
    out.error = profile.error();
    logWarn("profile not used, NCCL's own choices stand%s: %s",
            out.settings.strict ? " (DYNAMICCL_STRICT=1: failing init)" : "", profile.error().c_str());
    return;
  }
  char cost[160];
  if (inBackground)
    std::snprintf(cost, sizeof cost, "parsed in %.0f ms off NCCL's init path; its rules apply from call %llu of each "
                  "communicator", ms, static_cast<unsigned long long>(out.firstCall));
  else if (out.firstCall > 0)  // DYNAMICCL_STRICT=1: parsed at init, still in force from the same call
    std::snprintf(cost, sizeof cost, "read in %.0f ms at init (DYNAMICCL_STRICT=1); its rules apply from call %llu of "
                  "each communicator", ms, static_cast<unsigned long long>(out.firstCall));
  else  // read once per process, by the first communicator's init: past the budget, the line says what it cost
    std::snprintf(cost, sizeof cost, "read in %.0f ms%s", ms,
                  ms > kFirstReadBudget_ms ? ", over the 50 ms budget: the first communicator's init waited for it" : "");
  logInfo("profile %s loaded from %s: %zu rules%s%s; %s", profile->name.empty() ? "(unnamed)" : profile->name.c_str(),
          path.c_str(), profile->rules.size(), evidenceSummary(*profile).c_str(), learnedPolicyText(network->get()).c_str(),
          cost);
  logEvidenceProblems(*profile);
  if (!profile->policySection.empty() && !buildHasLearnedNetwork())
    logInfo("profile %s: its learned policy is not used (this build has no learned network: DYNAMICCL_LEARNED=OFF); "
            "its rules stand alone", path.c_str());
  out.network = std::move(*network);
  out.profile = std::make_shared<policy::Profile>(std::move(profile.value()));
}

// Parsed: what waited for the parse runs now, in this thread.
void finishParse(LoadedProfile& out) noexcept {
  std::vector<std::function<void()>> jobs;
  {
    std::lock_guard lock(out.parseMutex);
    out.parsed.store(true, std::memory_order_release);
    jobs.swap(out.afterParse);
  }
  for (auto& job : jobs) {
    try {
      job();
    } catch (...) {  // each job says what failed; the others still run
    }
  }
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
  // A FIFO or device swapped in cannot block init, and the size checked is the size of the file read.
  auto bytes = readRegularFile(path, policy::kMaxProfileBytes);
  if (!bytes) {
    out->sourceDigest = digestOfFile(path);  // a file over the cap is still compared between ranks
    out->bad = true;
    out->error = bytes.error();
    logWarn("profile not used, NCCL's own choices stand%s: %s", s.strict ? " (DYNAMICCL_STRICT=1: failing init)" : "",
            bytes.error().c_str());
    return out;
  }
  out->sourceDigest = digestOfBytes(*bytes);  // the bytes parsed: the file is read once
  // The size is in the digest every rank agrees on, so every rank switches at the same call.
  const bool big = bytes->size() > kParsedAtInitBytes;
  out->firstCall = big ? kBackgroundProfileFirstCall : 0;
  // DYNAMICCL_STRICT=1 fails init on a bad profile, so init waits for the parse.
  if (!big || s.strict) {
    parseInto(*out, *bytes, path, format, started, false);
    return out;
  }
  out->parsed.store(false, std::memory_order_relaxed);
  logInfo("profile %s (%.1f MB) is parsed off NCCL's init path: its rules apply from call %llu of each communicator, "
          "NCCL's choices until then", path.c_str(), static_cast<double>(bytes->size()) / 1e6,
          static_cast<unsigned long long>(out->firstCall));
  // Shared, not copied: std::function copies its callable, and a copy of tens of MB costs its page faults.
  auto parse = [out, text = std::make_shared<const std::string>(std::move(*bytes)), path, format, started] {
    struct Finish {  // what waits for the parse runs however the parse ended
      LoadedProfile& out;
      ~Finish() { finishParse(out); }
    } finish{*out};
    try {
      parseInto(*out, *text, path, format, started, true);
    } catch (...) {  // out of memory: no rules (profile stays the empty one it started as)
      out->bad = true;
      try {
        logWarn("profile %s not used, NCCL's own choices stand: its parse ran out of memory", path.c_str());
      } catch (...) {
      }
    }
  };
  try {
    runInBackground(parse);
  } catch (const std::system_error&) {  // no thread to be had: parse here, as a small profile is
    parse();
  }
  return out;
}

}  // namespace

ProfileSettings ProfileSettings::from(const Settings& all) {
  return ProfileSettings{all.profilePath, all.nvidiaCsvPath, all.strict, all.enabled, all.trust};
}

std::shared_ptr<const LoadedProfile> currentProfile(const Settings& all) {
  const ProfileSettings settings = ProfileSettings::from(all);
  std::lock_guard lock(gProfileCacheMutex);
  if (!gLoaded || !(gLoaded->settings == settings)) gLoaded = load(settings);
  return gLoaded;
}

void whenParsed(const std::shared_ptr<const LoadedProfile>& loaded, std::function<void()> job) {
  {
    std::lock_guard lock(loaded->parseMutex);
    if (!loaded->parsed.load(std::memory_order_acquire)) {
      loaded->afterParse.push_back(std::move(job));
      return;
    }
  }
  job();
}

policy::PolicyTable compileForShape(const LoadedProfile& loaded, const CommShape& shape, const Settings& settings,
                                    int ncclVersionCode) {
  HostSources host = localHostSources();
  host.overrides = settings.topo;  // the operator's word beats every probe
  const CompileContext context{&host, settings.workload, settings.trust, ncclVersionCode};
  // With a learned "policy" section, Eigen scores configurations here, off the hot path.
  if (loaded.network) return compileWithNetwork(*loaded.profile, loaded.network, shape, context);
  const auto key = std::make_tuple(shape.nNodes, shape.nRanks, shape.minRanksPerNode, shape.maxRanksPerNode,
                                   static_cast<int>(settings.trust), ncclVersionCode);
  std::lock_guard lock(loaded.compiledMutex);
  auto it = loaded.compiledByShape.find(key);
  if (it == loaded.compiledByShape.end()) {
    auto tables = std::make_shared<const policy::PolicyTable>(compileWithNetwork(*loaded.profile, nullptr, shape, context));
    if (loaded.compiledByShape.size() >= kMaxCachedShapes) return *tables;
    it = loaded.compiledByShape.emplace(key, std::move(tables)).first;
  }
  return *it->second;
}

}  // namespace dynamiccl::plugin
