// Whose selection rules a communicator follows: the host library (NCCL or RCCL, abi/host_rules.h)
// and its version, read at init from the process (no link against either), or DYNAMICCL_HOST and
// DYNAMICCL_NCCL_VERSION. Init only: it may call dlsym/dlopen.
#pragma once

#include <string>

#include "abi/abi.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {

enum class VersionSource : uint8_t { Setting, Libnccl, Unknown };
enum class HostSource : uint8_t { Setting, Detected, Assumed };

struct NcclRules {
  abi::PickRule rule = abi::kNewestPickRule;
  int versionCode = 0;  // major * 10000 + minor * 100 + patch; 0 when unknown
  VersionSource source = VersionSource::Unknown;
  abi::Host host = abi::Host::Nccl;  // NCCL unless RCCL is seen or named
  HostSource hostSource = HostSource::Assumed;
  const abi::HostRules& hostRules() const { return abi::rulesOf(host); }
};

// RCCL is in the process: a librccl.so* in the loader's list (also one loaded RTLD_LOCAL), or RCCL-only
// exports (mscclLoadAlgo with ncclAllToAllv) in the global scope.
bool rcclInProcess();

// ncclGetVersion from the global scope, else from an already loaded libnccl.so.2 or librccl (RTLD_NOLOAD:
// a PyTorch wheel loads it RTLD_LOCAL); 0 when none answers (static NCCL, no NCCL at all).
int detectNcclVersion();
// The version NCCL's rules are read from without logging: DYNAMICCL_NCCL_VERSION, else detected; 0 unknown.
int ncclVersionInForce(const Settings& settings);
// The host the rules are read from without logging: DYNAMICCL_HOST, else the one seen in the process.
abi::Host hostInForce(const Settings& settings);
// "2.28.9" for 22809.
std::string ncclVersionText(int versionCode);

// DYNAMICCL_HOST / DYNAMICCL_NCCL_VERSION when set, else the detected host and version, else NCCL's
// newest rules known. Logs one line when the answer differs from the last one logged (so once per
// process in a job), naming the host.
NcclRules resolveNcclRules(const Settings& settings);

}  // namespace dynamiccl::plugin
