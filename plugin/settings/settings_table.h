// Every environment variable the plugin reads, named once: where its value lives, its range and the
// default the log names. readSettings walks this list with a reader, settingsDump with a printer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "plugin/settings/settings.h"

namespace dynamiccl::plugin::settings_table {

// A real as the reader's messages and the settings line both show it.
inline std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A value with its own syntax: parse returns why a text is refused, or nothing when it took it.
struct TrustCodec {
  static constexpr const char* kDefault = "verified";
  static std::optional<std::string> parse(const char* v, policy::Trust& out);
  static std::string show(policy::Trust t);
};
struct NcclVersionCodec {
  static constexpr const char* kDefault = "NCCL's own version";
  static std::optional<std::string> parse(const char* v, int& code);
  static std::string show(int code);
};
struct DbMaxCodec {
  static constexpr const char* kDefault = "no cap";
  static std::optional<std::string> parse(const char* v, int64_t& bytes);
  static std::string show(int64_t bytes);
};
struct GraceCodec {  // milliseconds in the environment, nanoseconds in Settings
  static constexpr const char* kDefault = "2000";
  static std::optional<std::string> parse(const char* v, int64_t& ns);
  static std::string show(int64_t ns);
};
struct OnlineCodec {
  static constexpr const char* kDefault = "unset (off)";
  static std::optional<std::string> parse(const char* v, OnlineSwitch& out);
  static std::string show(OnlineSwitch s);
};
struct VerifyCodec {
  static constexpr const char* kDefault = "auto";
  static std::optional<std::string> parse(const char* v, VerifySwitch& out);
  static std::string show(VerifySwitch s);
};
struct EtcdCodec {  // comma-separated http:// or https:// endpoints, each with a host
  static constexpr const char* kDefault = "unset (no etcd)";
  static std::optional<std::string> parse(const char* v, std::vector<std::string>& out);
  static std::string show(const std::vector<std::string>& endpoints);
};
struct WorkloadCodec {
  static constexpr const char* kDefault = "none";
  static std::optional<std::string> parse(const char* v, WorkloadContext& out);
  static std::string show(const WorkloadContext& w);
};
struct TestThrowCodec {
  static constexpr const char* kDefault = "none";
  static std::optional<std::string> parse(const char* v, uint32_t& mask);
  static std::string show(uint32_t mask);
};

// The list. V provides path, flag, integer, real, coded<Codec>, topo and nccl (NCCL's own variables,
// recorded, never refused); S is Settings, const for the printer.
template <typename V, typename S>
void eachVariable(V& v, S& s) {
  v.path("DYNAMICCL_PROFILE", s.profilePath, "none");
  v.path("NCCL_TUNER_CONFIG_FILE", s.nvidiaCsvPath, "none");
  v.flag("DYNAMICCL_STRICT", s.strict);
  v.flag("DYNAMICCL_ENABLE", s.enabled);
  v.template coded<TrustCodec>("DYNAMICCL_TRUST", s.trust);
  v.template coded<NcclVersionCodec>("DYNAMICCL_NCCL_VERSION", s.ncclVersionCode);
  v.path("DYNAMICCL_DB", s.dbPath, "the per-host default");
  v.template coded<DbMaxCodec>("DYNAMICCL_DB_MAX_MB", s.dbMaxBytes);
  v.flag("DYNAMICCL_RECORD", s.record);
  v.path("DYNAMICCL_OBSERVATION_LOG", s.observationLog, "none");
  v.integer("DYNAMICCL_PROFILER_RECORDS", s.profilerRecords, 1, kMaxProfilerRecords);
  v.integer("DYNAMICCL_PROFILER_QUEUE", s.profilerQueue, 2, kMaxProfilerQueue);
  v.template coded<GraceCodec>("DYNAMICCL_PROFILER_GRACE_MS", s.profilerGrace_ns);
  v.real("DYNAMICCL_MEASURE_SHARE", s.measureShare, 0, 1, "0.01");
  v.real("DYNAMICCL_RECORD_SHARE", s.recordShare, 0, 1, "0");
  v.path("DYNAMICCL_MEASUREMENT_COST", s.measurementCost, "the published figures");
  v.template coded<OnlineCodec>("DYNAMICCL_ONLINE", s.online);
  v.template coded<VerifyCodec>("DYNAMICCL_VERIFY", s.verify);
  v.nccl("NCCL_ALGO", s.ncclAlgo);
  v.nccl("NCCL_PROTO", s.ncclProto);
  v.integer("DYNAMICCL_EPOCH_CALLS", s.epochCalls, 10, 1'000'000'000);
  v.real("DYNAMICCL_EXPLORE_BUDGET", s.exploreBudget, 0, 0.5, "0.01");
  v.integer("DYNAMICCL_EPOCH_TIMEOUT_MS", s.epochTimeout_ms, 1, 86'400'000);
  v.path("DYNAMICCL_COORD_DIR", s.coordDir, "the node-local directory");
  v.integer("DYNAMICCL_COORD_DELAY_MS", s.coordDelay_ms, 0, 60'000);
  v.path("DYNAMICCL_COORD_TOKEN_FILE", s.coordTokenFile, "none (records keyed by what the store holds)");
  v.template coded<EtcdCodec>("DYNAMICCL_ETCD", s.etcdEndpoints);
  v.path("DYNAMICCL_ETCD_AUTH_FILE", s.etcdAuthFile, "none (no authentication)");
  v.path("DYNAMICCL_ETCD_CA", s.etcdCa, "the system's CAs");
  v.path("DYNAMICCL_ETCD_CERT", s.etcdCert, "none");
  v.path("DYNAMICCL_ETCD_KEY", s.etcdKey, "none");
  v.integer("DYNAMICCL_ETCD_TIMEOUT_MS", s.etcdTimeout_ms, 10, 60'000);
  v.integer("DYNAMICCL_ETCD_TTL_S", s.etcdTtl_s, 60, 31'536'000);
  v.flag("DYNAMICCL_INPUTS_CHECK", s.inputsCheck);
  v.integer("DYNAMICCL_INPUTS_TIMEOUT_MS", s.inputsTimeout_ms, 1, 600'000);
  // The range and integrality rules are features' readTopoOverrides; the texts say them.
  v.topo("DYNAMICCL_TOPO_GPU_CC", s.topo, &TopoOverrides::computeCap, "expected an integer in 1..1e6");
  v.topo("DYNAMICCL_TOPO_NVLINK_GBPS", s.topo, &TopoOverrides::nvlinkBw_GBps, "expected a number in 0..1e6");
  v.topo("DYNAMICCL_TOPO_NICS", s.topo, &TopoOverrides::nics, "expected an integer in 1..1e6");
  v.topo("DYNAMICCL_TOPO_NIC_GBPS", s.topo, &TopoOverrides::nicSpeed_GBps, "expected a number in (0, 1e6]");
  v.topo("DYNAMICCL_TOPO_RANKS_PER_NODE", s.topo, &TopoOverrides::ranksPerNode, "expected an integer in 1..1e6");
  v.template coded<WorkloadCodec>("DYNAMICCL_WORKLOAD", s.workload);
  v.template coded<TestThrowCodec>("DYNAMICCL_TEST_THROW", s.testThrowMask);
}

}  // namespace dynamiccl::plugin::settings_table
