// Every environment variable the plugin reads, declared, parsed and validated in one place. Read at
// init of either role (never on the hot path); a bad value is reported in one line naming the
// variable, the value (truncated) and the documented default used instead. Libraries below the
// plugin (features, policy, store, coord) get these values passed in and read no DYNAMICCL_* themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "abi/abi.h"
#include "features/features.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

// Documented maxima of the profiler's preallocated pools: about 120 MB resident at both (README).
inline constexpr int64_t kMaxProfilerRecords = 65536;
inline constexpr int64_t kMaxProfilerQueue = 1 << 20;

// DYNAMICCL_ONLINE: unset, "0" or "1".
enum class OnlineSwitch : uint8_t { Unset, Off, On };
// DYNAMICCL_VERIFY: unset (auto: on wherever the profiler role is this library), "0" or "1".
enum class VerifySwitch : uint8_t { Auto, Off, On };

// Settings a user rarely sets come grouped, one variable each, as key=value lists (features' KeyValue).
// DYNAMICCL_PROFILER=records=4096,queue=65536,grace_ms=2000: the profiler's preallocated pools, its wait.
struct ProfilerPools {
  uint32_t records = 4096;               // records: in-flight record pool, 1..kMaxProfilerRecords
  uint32_t queue = 65536;                // queue: observation queue, 2..kMaxProfilerQueue
  int64_t grace_ns = 2000 * 1000000ll;   // grace_ms, 0..3600000: wait for missing stops
};
// DYNAMICCL_BUDGET=explore=0.01,measure=0.01,record=0: what the plugin may spend of the job.
// Measuring costs the job (docs/MEASUREMENT_COST.md): only a communicator's leader profiles, and only
// the calls its search needs; once settled, at most `measure` of calls (drift re-tests).
struct Budget {
  double explore = 0.01;  // explore, 0..0.5: share of collective time spent on arms not yet known better
  double measure = 0.01;  // measure, 0..1: share of calls the leader profiles once its search settled
  double record = 0;      // record, 0..1: share of calls every rank profiles and records anyway (1: all)
};
// DYNAMICCL_ETCD_CLIENT=auth_file=F,ca=F,cert=F,key=F,timeout_ms=2000,ttl_s=86400,node_reads=1: how to reach etcd.
struct EtcdClient {
  std::string authFile;       // auth_file: "user:password", mode 600
  std::string ca, cert, key;  // TLS files for https:// endpoints
  int timeout_ms = 2000;      // timeout_ms, 10..60000: each request, all endpoints together
  int64_t ttl_s = 86400;      // ttl_s, 60..31536000: records' lease
  bool nodeReads = true;      // node_reads, 0|1: one process per node and communicator polls etcd ahead, the others read its copy
  bool operator==(const EtcdClient&) const = default;
};
// DYNAMICCL_TEST=throw=getCollInfo+stopEvent,coord_delay_ms=50,coord_publish_fails_ms=800: fault
// injection, for tests only.
struct TestHooks {
  uint32_t throwMask = 0;  // throw: these entry points throw (guard.h)
  int coordDelay_ms = 0;   // coord_delay_ms, 0..60000: every shared-directory operation is this slow
  int publishFails_ms = 0; // coord_publish_fails_ms, 0..60000: a boundary's first table publish takes this long, then fails
};

struct Settings {
  // Tuner role: where the profile comes from.
  std::string profilePath;    // DYNAMICCL_PROFILE (our JSON, or NVIDIA's CSV by content)
  std::string nvidiaCsvPath;  // NCCL_TUNER_CONFIG_FILE (NCCL's; NVIDIA's example tuner format)
  bool strict = false;        // DYNAMICCL_STRICT=1: a bad profile fails communicator init
  bool enabled = true;        // DYNAMICCL_ENABLE=0: keep NCCL's choices everywhere
  policy::Trust trust = policy::Trust::Verified;  // DYNAMICCL_TRUST=verified|all: which rules change NCCL's choice
  // DYNAMICCL_NCCL_VERSION=2.28|2.30|2.31[.patch] or a code such as 23102: whose selection rules the
  // plugin follows (tests, the harness, a libnccl it cannot see); 0: read NCCL's version at init.
  int ncclVersionCode = 0;
  // DYNAMICCL_HOST=nccl|rccl: which library loaded the plugin (abi/host_rules.h); unset: looked up at init.
  std::optional<abi::Host> host;

  // Profiler role: the measurement channel and its sinks.
  std::string dbPath;               // DYNAMICCL_DB; empty: the store's per-host default
  int64_t dbMaxBytes = 0;           // DYNAMICCL_DB_MAX_MB (0 < MB < 1e9) in bytes; 0: no cap
  bool record = true;               // DYNAMICCL_RECORD=0: measure but write no store
  std::string observationLog;       // DYNAMICCL_OBSERVATION_LOG: CSV file, empty: none
  ProfilerPools profiler;           // DYNAMICCL_PROFILER
  Budget budget;                    // DYNAMICCL_BUDGET
  std::string measurementCost;      // DYNAMICCL_MEASUREMENT_COST: a calibration file; empty: the published figures
  std::string metricsDir;           // DYNAMICCL_METRICS_DIR: a Prometheus textfile directory; empty: no metrics
  std::string slurmJobId;           // SLURM_JOB_ID (the scheduler's): a label of the metrics

  // Online updates (docs/ONLINE.md).
  OnlineSwitch online = OnlineSwitch::Unset;  // DYNAMICCL_ONLINE
  VerifySwitch verify = VerifySwitch::Auto;   // DYNAMICCL_VERIFY: in-job verification of unverified rules
  // DYNAMICCL_SEARCH_CHANNELS: the in-job search goes on to channel counts; unset: on under RCCL only.
  OnlineSwitch searchChannels = OnlineSwitch::Unset;
  bool profilerIsUs = false;                  // NCCL_PROFILER_PLUGIN (NCCL's) names this library
  // NCCL's own selection knobs, recorded with each run in the store (they override the tuner); never acted on.
  std::string ncclAlgo, ncclProto;            // NCCL_ALGO, NCCL_PROTO as set; empty: unset
  // Knobs the user fixed, which the plugin then leaves alone (one INFO line): NCCL_MIN/MAX_NCHANNELS
  // (both hosts), RCCL_OVERRIDE_ALGO/PROTO (RCCL applies them after the tuner). Empty: unset.
  std::string ncclMinChannels, ncclMaxChannels, rcclOverrideAlgo, rcclOverrideProto;
  uint64_t epochCalls = 1000;                 // DYNAMICCL_EPOCH_CALLS, 10..1e9
  int64_t epochTimeout_ms = 60000;            // DYNAMICCL_EPOCH_TIMEOUT_MS, 1..86400000
  std::string coordDir;                       // DYNAMICCL_COORD_DIR
  std::string coordTokenFile;                 // DYNAMICCL_COORD_TOKEN_FILE: the job's secret, mode 600
  // etcd v3 backend (docs/ONLINE.md): endpoints, then credentials, TLS files, bounds.
  std::vector<std::string> etcdEndpoints;     // DYNAMICCL_ETCD=http(s)://host:port[,...]; empty: unset
  EtcdClient etcd;                            // DYNAMICCL_ETCD_CLIENT
  // Ranks agree on their inputs (docs/ONLINE.md): each publishes a digest at init, all compare them.
  bool inputsCheck = true;                    // DYNAMICCL_INPUTS_CHECK=0: skip (one process playing one rank)
  int64_t inputsTimeout_ms = 0;               // DYNAMICCL_INPUTS_TIMEOUT_MS, 1..600000: wait for every digest; 0: inputsCheckTimeout_ms

  // Inputs of learned rules: job configuration, the same on every rank.
  TopoOverrides topo;        // DYNAMICCL_TOPO
  WorkloadContext workload;  // DYNAMICCL_WORKLOAD

  TestHooks test;            // DYNAMICCL_TEST
};

using EnvReader = std::function<const char*(const char* name)>;
using SettingsReport = std::function<void(const std::string& line)>;

// The input check's timeout for a communicator of nRanks: DYNAMICCL_INPUTS_TIMEOUT_MS, or sized by nRanks.
int64_t inputsCheckTimeout_ms(const Settings& s, int nRanks);

// Pure: every variable through env; report gets one line per bad variable.
Settings readSettings(const EnvReader& env, const SettingsReport& report);

// One line, "NAME=value" for every DYNAMICCL_* variable (the values in force), in settings_table.h's order.
std::string settingsDump(const Settings& s);

// The process's settings: parsed from the environment at the first init of either role and again
// only when the environment changed (then each bad variable is logged once more, and the dump line).
// Init/finalize only: it locks.
std::shared_ptr<const Settings> currentSettings();

}  // namespace dynamiccl::plugin
