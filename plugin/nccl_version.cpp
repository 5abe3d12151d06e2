#include "plugin/nccl_version.h"

#include <dlfcn.h>

#include <atomic>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

using GetVersionFn = int (*)(int*);  // ncclResult_t ncclGetVersion(int*); ncclSuccess is 0

int callGetVersion(void* symbol) {
  if (!symbol) return 0;
  int code = 0;
  if (reinterpret_cast<GetVersionFn>(symbol)(&code) != 0) return 0;
  return code >= 20000 && code <= 99999 ? code : 0;  // older NCCL encoded 2.8 as 2800: not ours to read
}

std::atomic<uint64_t> gLastLogged{~uint64_t{0}};

}  // namespace

std::string ncclVersionText(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

int ncclVersionInForce(const Settings& settings) {
  return settings.ncclVersionCode > 0 ? settings.ncclVersionCode : detectNcclVersion();
}

int detectNcclVersion() {
  if (int code = callGetVersion(dlsym(RTLD_DEFAULT, "ncclGetVersion"))) return code;
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!lib) return 0;
  const int code = callGetVersion(dlsym(lib, "ncclGetVersion"));
  dlclose(lib);  // drops only the reference RTLD_NOLOAD added
  return code;
}

NcclRules resolveNcclRules(const Settings& settings) {
  NcclRules r;
  if (settings.ncclVersionCode > 0) {
    r.versionCode = settings.ncclVersionCode;
    r.source = VersionSource::Setting;
  } else if (const int code = detectNcclVersion()) {
    r.versionCode = code;
    r.source = VersionSource::Libnccl;
  }
  if (r.versionCode > 0) r.rule = abi::pickRuleFor(r.versionCode);
  const uint64_t key = (static_cast<uint64_t>(r.versionCode) << 8) | static_cast<uint64_t>(r.source);
  if (gLastLogged.exchange(key, std::memory_order_relaxed) != key) {
    const char* rule = abi::pickRuleName(r.rule);
    if (r.source == VersionSource::Unknown)
      logInfo("NCCL version unknown (no ncclGetVersion in this process): following the newest selection rules "
              "known, NCCL %s's", rule);
    else
      logInfo("NCCL %s (%s): following NCCL %s's selection rules%s", ncclVersionText(r.versionCode).c_str(),
              r.source == VersionSource::Setting ? "DYNAMICCL_NCCL_VERSION" : "ncclGetVersion", rule,
              abi::channelsAreCap(r.rule) ? " (channel counts only lower NCCL's)" : "");
  }
  return r;
}

}  // namespace dynamiccl::plugin
