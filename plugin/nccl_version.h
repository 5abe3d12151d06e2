// Whose selection rules a communicator follows: NCCL's version, read at init from the process's
// libnccl (no link against it), or DYNAMICCL_NCCL_VERSION. Init only: it may call dlsym/dlopen.
#pragma once

#include <string>

#include "abi/abi.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {

enum class VersionSource : uint8_t { Setting, Libnccl, Unknown };

struct NcclRules {
  abi::PickRule rule = abi::kNewestPickRule;
  int versionCode = 0;  // major * 10000 + minor * 100 + patch; 0 when unknown
  VersionSource source = VersionSource::Unknown;
};

// ncclGetVersion from the global scope, else from an already loaded libnccl.so.2 (RTLD_NOLOAD: a
// PyTorch wheel loads it RTLD_LOCAL); 0 when neither answers (static NCCL, no NCCL at all).
int detectNcclVersion();
// The version NCCL's rules are read from without logging: DYNAMICCL_NCCL_VERSION, else detected; 0 unknown.
int ncclVersionInForce(const Settings& settings);
// "2.28.9" for 22809.
std::string ncclVersionText(int versionCode);

// DYNAMICCL_NCCL_VERSION when set, else the detected version, else the newest rules known. Logs one
// line when the answer differs from the last one logged (so once per process in a job).
NcclRules resolveNcclRules(const Settings& settings);

}  // namespace dynamiccl::plugin
