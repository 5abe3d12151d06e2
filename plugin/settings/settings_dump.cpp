// The settings in force as one line, for the log and for tests of which default stood.
#include <cstdio>
#include <sstream>

#include "plugin/guard.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {
namespace {

class Dump {
 public:
  template <typename T>
  void put(const char* name, const T& v) {
    out_ << (first_ ? "" : " ") << name << '=' << v;
    first_ = false;
  }
  void text(const char* name, const std::string& v) { put(name, v.empty() ? std::string("(unset)") : v); }
  // Paths are logged where they are used (profile loaded from ..., store unavailable ...), not here.
  void path(const char* name, const std::string& v) { put(name, v.empty() ? "(unset)" : "(set)"); }
  void real(const char* name, double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    put(name, buf);
  }
  template <typename T>
  void optional(const char* name, const std::optional<T>& v) {
    if (!v) return put(name, "(unset)");
    if constexpr (std::is_floating_point_v<T>) real(name, *v);
    else put(name, *v);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  bool first_ = true;
};

std::string workloadText(const WorkloadContext& w) {
  if (w.empty()) return "";
  std::ostringstream o;
  if (w.intensity) o << "intensity=" << *w.intensity;
  if (w.batch) o << (w.intensity ? "," : "") << "batch=" << *w.batch;
  return o.str();
}

std::string throwText(uint32_t mask) {
  std::string out;
  for (unsigned i = 0; i < static_cast<unsigned>(Entry::kCount); ++i)
    if (mask & (1u << i)) out += (out.empty() ? "" : ",") + std::string(entryName(static_cast<Entry>(i)));
  return out;
}

}  // namespace

std::string settingsDump(const Settings& s) {
  Dump d;
  d.path("DYNAMICCL_PROFILE", s.profilePath);
  d.path("NCCL_TUNER_CONFIG_FILE", s.nvidiaCsvPath);
  d.put("DYNAMICCL_STRICT", int(s.strict));
  d.put("DYNAMICCL_ENABLE", int(s.enabled));
  d.put("DYNAMICCL_TRUST", std::string(s.trust == policy::Trust::All ? "all" : "verified"));
  if (s.ncclVersionCode > 0)
    d.put("DYNAMICCL_NCCL_VERSION", std::to_string(s.ncclVersionCode / 10000) + "." +
                                        std::to_string(s.ncclVersionCode / 100 % 100) + "." +
                                        std::to_string(s.ncclVersionCode % 100));
  else d.put("DYNAMICCL_NCCL_VERSION", "(unset)");
  d.path("DYNAMICCL_DB", s.dbPath);
  if (s.dbMaxBytes > 0) d.real("DYNAMICCL_DB_MAX_MB", static_cast<double>(s.dbMaxBytes) / (1024 * 1024));
  else d.put("DYNAMICCL_DB_MAX_MB", "(unset)");
  d.put("DYNAMICCL_RECORD", int(s.record));
  d.path("DYNAMICCL_OBSERVATION_LOG", s.observationLog);
  d.put("DYNAMICCL_PROFILER_RECORDS", s.profilerRecords);
  d.put("DYNAMICCL_PROFILER_QUEUE", s.profilerQueue);
  d.put("DYNAMICCL_PROFILER_GRACE_MS", s.profilerGrace_ns / 1000000);
  d.real("DYNAMICCL_MEASURE_SHARE", s.measureShare);
  d.real("DYNAMICCL_RECORD_SHARE", s.recordShare);
  d.path("DYNAMICCL_MEASUREMENT_COST", s.measurementCost);
  d.put("DYNAMICCL_ONLINE", s.online == OnlineSwitch::On ? "1" : s.online == OnlineSwitch::Off ? "0" : "(unset)");
  d.put("DYNAMICCL_VERIFY", s.verify == VerifySwitch::On ? "1" : s.verify == VerifySwitch::Off ? "0" : "auto");
  d.put("DYNAMICCL_EPOCH_CALLS", s.epochCalls);
  d.real("DYNAMICCL_EXPLORE_BUDGET", s.exploreBudget);
  d.put("DYNAMICCL_EPOCH_TIMEOUT_MS", s.epochTimeout_ms);
  d.path("DYNAMICCL_COORD_DIR", s.coordDir);
  d.put("DYNAMICCL_COORD_DELAY_MS", s.coordDelay_ms);
  std::string etcd;
  for (const std::string& e : s.etcdEndpoints) etcd += (etcd.empty() ? "" : ",") + e;
  d.text("DYNAMICCL_ETCD", etcd);
  d.path("DYNAMICCL_ETCD_AUTH_FILE", s.etcdAuthFile);
  d.path("DYNAMICCL_ETCD_CA", s.etcdCa);
  d.path("DYNAMICCL_ETCD_CERT", s.etcdCert);
  d.path("DYNAMICCL_ETCD_KEY", s.etcdKey);
  d.put("DYNAMICCL_ETCD_TIMEOUT_MS", s.etcdTimeout_ms);
  d.put("DYNAMICCL_ETCD_TTL_S", s.etcdTtl_s);
  d.put("DYNAMICCL_INPUTS_CHECK", int(s.inputsCheck));
  d.put("DYNAMICCL_INPUTS_TIMEOUT_MS", s.inputsTimeout_ms);
  d.optional("DYNAMICCL_TOPO_GPU_CC", s.topo.computeCap);
  d.optional("DYNAMICCL_TOPO_NVLINK_GBPS", s.topo.nvlinkBw_GBps);
  d.optional("DYNAMICCL_TOPO_NICS", s.topo.nics);
  d.optional("DYNAMICCL_TOPO_NIC_GBPS", s.topo.nicSpeed_GBps);
  d.optional("DYNAMICCL_TOPO_RANKS_PER_NODE", s.topo.ranksPerNode);
  d.text("DYNAMICCL_WORKLOAD", workloadText(s.workload));
  d.text("DYNAMICCL_TEST_THROW", throwText(s.testThrowMask));
  return d.str();
}

}  // namespace dynamiccl::plugin
