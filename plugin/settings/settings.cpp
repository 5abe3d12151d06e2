// Parsing and validating the plugin's environment: one reader per kind of value, walking the one list
// of variables (settings_table.h); a bad value is reported once and the documented default stands.
#include "plugin/settings/settings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/abi.h"
#include "plugin/guard.h"
#include "plugin/settings/settings_table.h"
#include "store/store.h"

namespace dynamiccl::plugin {
namespace {

constexpr size_t kMaxPathChars = 4096;  // PATH_MAX: anything longer cannot name a file
constexpr size_t kShownChars = 64;      // of a bad value in the log line

std::string shown(std::string_view v) {
  if (v.size() <= kShownChars) return "\"" + std::string(v) + "\"";
  return "\"" + std::string(v.substr(0, kShownChars)) + "...\" (" + std::to_string(v.size()) + " chars)";
}

class Reader {
 public:
  Reader(const EnvReader& env, const SettingsReport& report) : env_(env), report_(report) {}

  // The raw value; nullptr when unset. Set but empty counts as bad: reported, then treated as unset.
  const char* raw(const char* name, const char* usedInstead) {
    const char* v = env_(name);
    if (v && !*v) {
      bad(name, v, "it is empty", usedInstead);
      return nullptr;
    }
    return v;
  }

  void bad(const char* name, std::string_view value, const std::string& why, const char* usedInstead) {
    report_(std::string(name) + "=" + shown(value) + " ignored (" + why + "); using " + usedInstead);
  }

  template <typename T>
  void integer(const char* name, T& out, long long lo, long long hi) {
    const std::string def = std::to_string(out);
    const char* v = raw(name, def.c_str());
    if (!v) return;
    const std::optional<int64_t> x = wholeInteger(v, lo, hi);
    if (!x) return bad(name, v, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi), def.c_str());
    out = static_cast<T>(*x);
  }

  // "0" or "1".
  void flag(const char* name, bool& out) {
    const char* def = out ? "1" : "0";
    const char* v = raw(name, def);
    if (!v) return;
    if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0) return bad(name, v, "expected 0 or 1", def);
    out = v[0] == '1';
  }

  void path(const char* name, std::string& out, const char* def) {
    const char* v = raw(name, def);
    if (!v) return;
    const size_t n = std::strlen(v);
    if (n >= kMaxPathChars) return bad(name, v, "longer than a path can be", def);
    out.assign(v, n);
  }

  template <typename Codec, typename T>
  void coded(const char* name, T& out) {
    const char* v = raw(name, Codec::kDefault);
    if (!v) return;
    if (std::strlen(v) >= kMaxPathChars) return bad(name, v, "too long", Codec::kDefault);
    if (std::optional<std::string> why = Codec::parse(v, out)) bad(name, v, *why, Codec::kDefault);
  }

  // NCCL's own variables: recorded as set, never refused.
  void nccl(const char* name, std::string& out) {
    if (const char* v = env_(name); v && std::strlen(v) < kMaxPathChars) out = v;
  }

 private:
  const EnvReader& env_;
  const SettingsReport& report_;
};

}  // namespace

namespace settings_table {

std::optional<std::string> TrustCodec::parse(const char* v, policy::Trust& out) {
  auto t = policy::parseTrust(v);
  if (!t) return "expected verified or all";
  out = *t;
  return std::nullopt;
}

std::optional<std::string> NcclVersionCodec::parse(const char* v, int& code) {
  auto c = abi::parseNcclVersion(v);
  if (!c) return "expected a version such as 2.31 or 2.28.9";
  code = *c;
  return std::nullopt;
}

std::optional<std::string> HostCodec::parse(const char* v, std::optional<abi::Host>& host) {
  auto h = abi::parseHost(v);
  if (!h) return "expected nccl or rccl";
  host = *h;
  return std::nullopt;
}

std::optional<std::string> InputsTimeoutCodec::parse(const char* v, int64_t& ms) {
  const std::optional<int64_t> x = wholeInteger(v, 1, 600'000);
  if (!x) return "expected an integer in 1..600000";
  ms = *x;
  return std::nullopt;
}

std::optional<std::string> DbMaxCodec::parse(const char* v, int64_t& bytes) {
  auto cap = store::maxBytesFromMegabytes(v);  // the store's rule, the tools' too
  if (!cap) return "expected a number of MB in (0, 1e9)";
  bytes = *cap;
  return std::nullopt;
}

std::optional<std::string> OnlineCodec::parse(const char* v, OnlineSwitch& out) {
  if (std::strcmp(v, "0") == 0) out = OnlineSwitch::Off;
  else if (std::strcmp(v, "1") == 0) out = OnlineSwitch::On;
  else return "expected 0 or 1";
  return std::nullopt;
}

std::optional<std::string> VerifyCodec::parse(const char* v, VerifySwitch& out) {
  if (std::strcmp(v, "0") == 0) out = VerifySwitch::Off;
  else if (std::strcmp(v, "1") == 0) out = VerifySwitch::On;
  else if (std::strcmp(v, "auto") == 0) out = VerifySwitch::Auto;
  else return "expected 0, 1 or auto";
  return std::nullopt;
}

std::optional<std::string> EtcdCodec::parse(const char* v, std::vector<std::string>& out) {
  std::vector<std::string> endpoints;
  std::string_view rest(v);
  bool ok = true;
  while (ok && !rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view one = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!one.empty() && one.back() == '/') one.remove_suffix(1);
    const size_t scheme = one.rfind("https://", 0) == 0 ? 8 : one.rfind("http://", 0) == 0 ? 7 : 0;
    ok = scheme > 0 && one.size() > scheme && one.find_first_of(" \t\"\\") == std::string_view::npos;
    if (ok) endpoints.emplace_back(one);
  }
  if (!ok || endpoints.empty()) return "expected http(s)://host:port[,http(s)://host:port...]";
  out = std::move(endpoints);
  return std::nullopt;
}

std::optional<std::string> WorkloadCodec::parse(const char* v, WorkloadContext& out) {
  auto wl = parseWorkloadContext(v);
  if (!wl) return wl.error();
  out = *wl;
  return std::nullopt;
}

}  // namespace settings_table

int64_t inputsCheckTimeout_ms(const Settings& s, int nRanks) {
  // Measured: 1,024 ranks' check through one etcd on a 2-core machine hosting it and every rank took
  // 2.7-11 s (the store serves the joins in turn), 256 ranks 0.6-2.1 s: twice that, from 500 ranks.
  constexpr int64_t kFloor_ms = 10'000, kPerRank_ms = 20;
  return s.inputsTimeout_ms > 0 ? s.inputsTimeout_ms : std::max<int64_t>(kFloor_ms, kPerRank_ms * nRanks);
}

Settings readSettings(const EnvReader& env, const SettingsReport& report) {
  Settings s;
  Reader r(env, report);
  settings_table::eachVariable(r, s);
  const char* profiler = env("NCCL_PROFILER_PLUGIN");
  s.profilerIsUs = profiler && std::strstr(profiler, "dynamiccl");
  return s;
}

}  // namespace dynamiccl::plugin
