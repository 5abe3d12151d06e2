// Parsing and validating the plugin's environment: one reader per kind of value, one line per
// variable below; a bad value is reported once and the documented default stands.
#include "plugin/settings/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/abi.h"
#include "plugin/guard.h"
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
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi)
      return bad(name, v, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi), def.c_str());
    out = static_cast<T>(x);
  }

  // lo < x < hi when open, lo <= x <= hi otherwise.
  void real(const char* name, double& out, double lo, double hi, bool open, const char* what, const char* def) {
    const char* v = raw(name, def);
    if (!v) return;
    errno = 0;
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    const bool inRange = open ? (x > lo && x < hi) : (x >= lo && x <= hi);
    if (errno != 0 || end == v || *end != '\0' || !std::isfinite(x) || !inRange) return bad(name, v, what, def);
    out = x;
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

 private:
  const EnvReader& env_;
  const SettingsReport& report_;
};

// DYNAMICCL_ETCD: comma-separated http:// or https:// endpoints, each with a host.
void readEtcd(Reader& r, Settings& s) {
  if (const char* v = r.raw("DYNAMICCL_ETCD", "unset (no etcd)")) {
    std::vector<std::string> endpoints;
    std::string_view rest(v);
    bool ok = rest.size() < kMaxPathChars;
    while (ok && !rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      while (!one.empty() && one.back() == '/') one.remove_suffix(1);
      const size_t scheme = one.rfind("https://", 0) == 0 ? 8 : one.rfind("http://", 0) == 0 ? 7 : 0;
      ok = scheme > 0 && one.size() > scheme && one.find_first_of(" \t\"\\") == std::string_view::npos;
      if (ok) endpoints.emplace_back(one);
    }
    if (ok && !endpoints.empty()) s.etcdEndpoints = std::move(endpoints);
    else r.bad("DYNAMICCL_ETCD", v, "expected http(s)://host:port[,http(s)://host:port...]", "unset (no etcd)");
  }
  r.path("DYNAMICCL_ETCD_AUTH_FILE", s.etcdAuthFile, "none (no authentication)");
  r.path("DYNAMICCL_ETCD_CA", s.etcdCa, "the system's CAs");
  r.path("DYNAMICCL_ETCD_CERT", s.etcdCert, "none");
  r.path("DYNAMICCL_ETCD_KEY", s.etcdKey, "none");
  r.integer("DYNAMICCL_ETCD_TIMEOUT_MS", s.etcdTimeout_ms, 10, 60'000);
  r.integer("DYNAMICCL_ETCD_TTL_S", s.etcdTtl_s, 60, 31'536'000);
}

void readOnline(Reader& r, const EnvReader& env, Settings& s) {
  if (const char* v = r.raw("DYNAMICCL_ONLINE", "unset (off)")) {
    if (std::strcmp(v, "0") == 0) s.online = OnlineSwitch::Off;
    else if (std::strcmp(v, "1") == 0) s.online = OnlineSwitch::On;
    else r.bad("DYNAMICCL_ONLINE", v, "expected 0 or 1", "unset (off)");
  }
  if (const char* v = r.raw("DYNAMICCL_VERIFY", "auto")) {
    if (std::strcmp(v, "0") == 0) s.verify = VerifySwitch::Off;
    else if (std::strcmp(v, "1") == 0) s.verify = VerifySwitch::On;
    else if (std::strcmp(v, "auto") != 0) r.bad("DYNAMICCL_VERIFY", v, "expected 0, 1 or auto", "auto");
  }
  const char* profiler = env("NCCL_PROFILER_PLUGIN");
  s.profilerIsUs = profiler && std::strstr(profiler, "dynamiccl");
  for (auto [name, out] : {std::pair{"NCCL_ALGO", &s.ncclAlgo}, std::pair{"NCCL_PROTO", &s.ncclProto}})
    if (const char* v = env(name); v && std::strlen(v) < kMaxPathChars) *out = v;
  r.integer("DYNAMICCL_EPOCH_CALLS", s.epochCalls, 10, 1'000'000'000);
  r.real("DYNAMICCL_EXPLORE_BUDGET", s.exploreBudget, 0, 0.5, false, "expected a number in 0..0.5", "0.01");
  r.integer("DYNAMICCL_EPOCH_TIMEOUT_MS", s.epochTimeout_ms, 1, 86'400'000);
  r.path("DYNAMICCL_COORD_DIR", s.coordDir, "the node-local directory");
  r.integer("DYNAMICCL_COORD_DELAY_MS", s.coordDelay_ms, 0, 60'000);
  readEtcd(r, s);
  r.flag("DYNAMICCL_INPUTS_CHECK", s.inputsCheck);
  r.integer("DYNAMICCL_INPUTS_TIMEOUT_MS", s.inputsTimeout_ms, 1, 600'000);
}

// DYNAMICCL_TOPO_*: the rule (range, integral) is features' readTopoOverrides, fed one variable at a time.
void readTopo(Reader& r, Settings& s) {
  static constexpr const char* kNames[] = {"DYNAMICCL_TOPO_GPU_CC", "DYNAMICCL_TOPO_NVLINK_GBPS", "DYNAMICCL_TOPO_NICS",
                                           "DYNAMICCL_TOPO_NIC_GBPS", "DYNAMICCL_TOPO_RANKS_PER_NODE"};
  for (const char* name : kNames) {
    const char* v = r.raw(name, "unset (the host probe)");
    if (!v) continue;
    const TopoOverrides one = readTopoOverrides([&](const char* n) { return std::strcmp(n, name) == 0 ? v : nullptr; });
    if (!one.ignored.empty()) {
      r.bad(name, v, std::strcmp(name, "DYNAMICCL_TOPO_NVLINK_GBPS") == 0 ? "expected a number in 0..1e6"
                     : std::strstr(name, "GBPS")                          ? "expected a number in (0, 1e6]"
                                                                          : "expected an integer in 1..1e6",
            "unset (the host probe)");
      continue;
    }
    if (one.computeCap) s.topo.computeCap = one.computeCap;
    if (one.nvlinkBw_GBps) s.topo.nvlinkBw_GBps = one.nvlinkBw_GBps;
    if (one.nics) s.topo.nics = one.nics;
    if (one.nicSpeed_GBps) s.topo.nicSpeed_GBps = one.nicSpeed_GBps;
    if (one.ranksPerNode) s.topo.ranksPerNode = one.ranksPerNode;
  }
}

void readTestThrow(Reader& r, Settings& s) {
  const char* v = r.raw("DYNAMICCL_TEST_THROW", "none");
  if (!v) return;
  uint32_t mask = 0;
  std::string_view rest(v);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::optional<Entry> e = entryFromName(item);
    if (!e) return r.bad("DYNAMICCL_TEST_THROW", v, "expected entry point names such as getCollInfo", "none");
    mask |= 1u << static_cast<unsigned>(*e);
  }
  s.testThrowMask = mask;
}

}  // namespace

Settings readSettings(const EnvReader& env, const SettingsReport& report) {
  Settings s;
  Reader r(env, report);
  r.path("DYNAMICCL_PROFILE", s.profilePath, "none");
  r.path("NCCL_TUNER_CONFIG_FILE", s.nvidiaCsvPath, "none");
  r.flag("DYNAMICCL_STRICT", s.strict);
  r.flag("DYNAMICCL_ENABLE", s.enabled);
  if (const char* v = r.raw("DYNAMICCL_TRUST", "verified")) {
    if (auto t = policy::parseTrust(v); t && std::strlen(v) < kMaxPathChars) s.trust = *t;
    else r.bad("DYNAMICCL_TRUST", v, "expected verified or all", "verified");
  }
  if (const char* v = r.raw("DYNAMICCL_NCCL_VERSION", "NCCL's own version")) {
    if (auto code = abi::parseNcclVersion(v)) s.ncclVersionCode = *code;
    else r.bad("DYNAMICCL_NCCL_VERSION", v, "expected a version such as 2.31 or 2.28.9", "NCCL's own version");
  }

  r.path("DYNAMICCL_DB", s.dbPath, "the per-host default");
  if (const char* v = r.raw("DYNAMICCL_DB_MAX_MB", "no cap")) {  // the store's rule, the tools' too
    if (auto cap = store::maxBytesFromMegabytes(v)) s.dbMaxBytes = *cap;
    else r.bad("DYNAMICCL_DB_MAX_MB", v, "expected a number of MB in (0, 1e9)", "no cap");
  }
  r.flag("DYNAMICCL_RECORD", s.record);
  r.path("DYNAMICCL_OBSERVATION_LOG", s.observationLog, "none");
  r.integer("DYNAMICCL_PROFILER_RECORDS", s.profilerRecords, 1, kMaxProfilerRecords);
  r.integer("DYNAMICCL_PROFILER_QUEUE", s.profilerQueue, 2, kMaxProfilerQueue);
  int64_t grace_ms = s.profilerGrace_ns / 1'000'000;
  r.integer("DYNAMICCL_PROFILER_GRACE_MS", grace_ms, 0, 3'600'000);
  s.profilerGrace_ns = grace_ms * 1'000'000;
  r.real("DYNAMICCL_MEASURE_SHARE", s.measureShare, 0, 1, false, "expected a number in 0..1", "0.01");
  r.real("DYNAMICCL_RECORD_SHARE", s.recordShare, 0, 1, false, "expected a number in 0..1", "0");
  r.path("DYNAMICCL_MEASUREMENT_COST", s.measurementCost, "the published figures");

  readOnline(r, env, s);
  readTopo(r, s);
  if (const char* v = r.raw("DYNAMICCL_WORKLOAD", "none")) {
    if (std::strlen(v) >= kMaxPathChars) {
      r.bad("DYNAMICCL_WORKLOAD", v, "too long", "none");
    } else if (auto wl = parseWorkloadContext(v); !wl) {
      r.bad("DYNAMICCL_WORKLOAD", v, wl.error(), "none");
    } else {
      s.workload = *wl;
    }
  }
  readTestThrow(r, s);
  return s;
}

}  // namespace dynamiccl::plugin
