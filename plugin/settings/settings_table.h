// Every environment variable the plugin reads, named once: where its value lives, its range and the
// default the log names. readSettings walks this list with a reader, settingsDump with a printer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plugin/settings/settings.h"

namespace dynamiccl::plugin::settings_table {

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
struct HostCodec {
  static constexpr const char* kDefault = "the library in the process";
  static std::optional<std::string> parse(const char* v, std::optional<abi::Host>& host);
  static std::string show(const std::optional<abi::Host>& host);
};
// The input check's timeout: 1..600000 ms, or (unset) sized by the communicator (inputsCheckTimeout_ms).
struct InputsTimeoutCodec {
  static constexpr const char* kDefault = "auto (10000 ms, 20 ms a rank from 500 ranks)";
  static std::optional<std::string> parse(const char* v, int64_t& ms);
  static std::string show(int64_t ms);
};
struct DbMaxCodec {
  static constexpr const char* kDefault = "no cap";
  static std::optional<std::string> parse(const char* v, int64_t& bytes);
  static std::string show(int64_t bytes);
};
// Grouped settings (key=value lists): a text with a bad or unknown key is refused whole.
struct ProfilerCodec {
  static constexpr const char* kDefault = "records=4096,queue=65536,grace_ms=2000";
  static std::optional<std::string> parse(const char* v, ProfilerPools& out);
  static std::string show(const ProfilerPools& p);
};
struct BudgetCodec {
  static constexpr const char* kDefault = "explore=0.01,measure=0.01,record=0";
  static std::optional<std::string> parse(const char* v, Budget& out);
  static std::string show(const Budget& b);
};
struct OnlineCodec {
  static constexpr const char* kDefault = "unset (off)";
  static std::optional<std::string> parse(const char* v, OnlineSwitch& out);
  static std::string show(OnlineSwitch s);
};
struct SearchChannelsCodec : OnlineCodec {
  static constexpr const char* kDefault = "unset (on under RCCL, off under NCCL)";
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
struct EtcdClientCodec {
  static constexpr const char* kDefault = "timeout_ms=2000,ttl_s=86400,node_reads=1, no credentials, the system's CAs";
  static std::optional<std::string> parse(const char* v, EtcdClient& out);
  static std::string show(const EtcdClient& c);
};
struct TopoCodec {  // features' rule, the profile's "fingerprint" keys
  static constexpr const char* kDefault = "unset (the host probe)";
  static std::optional<std::string> parse(const char* v, TopoOverrides& out);
  static std::string show(const TopoOverrides& t);
};
struct WorkloadCodec {
  static constexpr const char* kDefault = "none";
  static std::optional<std::string> parse(const char* v, WorkloadContext& out);
  static std::string show(const WorkloadContext& w);
};
struct TestCodec {
  static constexpr const char* kDefault = "none";
  static std::optional<std::string> parse(const char* v, TestHooks& out);
  static std::string show(const TestHooks& t);
};

// The list. V provides path, flag, integer, coded<Codec> and nccl (NCCL's own variables, recorded,
// never refused); S is Settings, const for the printer.
template <typename V, typename S>
void eachVariable(V& v, S& s) {
  v.path("DYNAMICCL_PROFILE", s.profilePath, "none");
  v.path("NCCL_TUNER_CONFIG_FILE", s.nvidiaCsvPath, "none");
  v.flag("DYNAMICCL_STRICT", s.strict);
  v.flag("DYNAMICCL_ENABLE", s.enabled);
  v.template coded<TrustCodec>("DYNAMICCL_TRUST", s.trust);
  v.template coded<NcclVersionCodec>("DYNAMICCL_NCCL_VERSION", s.ncclVersionCode);
  v.template coded<HostCodec>("DYNAMICCL_HOST", s.host);
  v.path("DYNAMICCL_DB", s.dbPath, "the per-host default");
  v.template coded<DbMaxCodec>("DYNAMICCL_DB_MAX_MB", s.dbMaxBytes);
  v.flag("DYNAMICCL_RECORD", s.record);
  v.path("DYNAMICCL_OBSERVATION_LOG", s.observationLog, "none");
  v.template coded<ProfilerCodec>("DYNAMICCL_PROFILER", s.profiler);
  v.template coded<BudgetCodec>("DYNAMICCL_BUDGET", s.budget);
  v.path("DYNAMICCL_MEASUREMENT_COST", s.measurementCost, "the published figures");
  v.path("DYNAMICCL_METRICS_DIR", s.metricsDir, "none (no metrics file)");
  v.template coded<OnlineCodec>("DYNAMICCL_ONLINE", s.online);
  v.template coded<VerifyCodec>("DYNAMICCL_VERIFY", s.verify);
  v.template coded<SearchChannelsCodec>("DYNAMICCL_SEARCH_CHANNELS", s.searchChannels);
  v.nccl("NCCL_ALGO", s.ncclAlgo);
  v.nccl("NCCL_PROTO", s.ncclProto);
  v.nccl("NCCL_MIN_NCHANNELS", s.ncclMinChannels);
  v.nccl("NCCL_MAX_NCHANNELS", s.ncclMaxChannels);
  v.nccl("RCCL_OVERRIDE_ALGO", s.rcclOverrideAlgo);
  v.nccl("RCCL_OVERRIDE_PROTO", s.rcclOverrideProto);
  v.nccl("SLURM_JOB_ID", s.slurmJobId);
  v.integer("DYNAMICCL_EPOCH_CALLS", s.epochCalls, 10, 1'000'000'000);
  v.integer("DYNAMICCL_EPOCH_TIMEOUT_MS", s.epochTimeout_ms, 1, 86'400'000);
  v.path("DYNAMICCL_COORD_DIR", s.coordDir, "the node-local directory");
  v.path("DYNAMICCL_COORD_TOKEN_FILE", s.coordTokenFile, "none (records keyed by what the store holds)");
  v.template coded<EtcdCodec>("DYNAMICCL_ETCD", s.etcdEndpoints);
  v.template coded<EtcdClientCodec>("DYNAMICCL_ETCD_CLIENT", s.etcd);
  v.flag("DYNAMICCL_INPUTS_CHECK", s.inputsCheck);
  v.template coded<InputsTimeoutCodec>("DYNAMICCL_INPUTS_TIMEOUT_MS", s.inputsTimeout_ms);
  v.template coded<TopoCodec>(kTopoVariable, s.topo);
  v.template coded<WorkloadCodec>("DYNAMICCL_WORKLOAD", s.workload);
  v.template coded<TestCodec>("DYNAMICCL_TEST", s.test);
}

}  // namespace dynamiccl::plugin::settings_table
