#include "plugin/nccl_version.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

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

// The version a library already in the process answers (RTLD_NOLOAD never loads one).
int versionOfLoaded(const char* soname) {
  void* lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!lib) return 0;
  const int code = callGetVersion(dlsym(lib, "ncclGetVersion"));
  dlclose(lib);  // drops only the reference RTLD_NOLOAD added
  return code;
}

// The path of a loaded librccl (RTLD_LOCAL too), from the loader's own list: no file is searched or
// opened (dlopen by a bare name with RTLD_NOLOAD still walks the library path: about 1 ms an init).
std::string loadedRccl() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const char* name = info->dlpi_name ? info->dlpi_name : "";
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, "librccl.so", 10) != 0) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &path);
  return path;
}

}  // namespace

std::string ncclVersionText(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

int ncclVersionInForce(const Settings& settings) {
  return settings.ncclVersionCode > 0 ? settings.ncclVersionCode : detectNcclVersion();
}

abi::Host hostInForce(const Settings& settings) {
  return settings.host ? *settings.host : rcclInProcess() ? abi::Host::Rccl : abi::Host::Nccl;
}

int detectNcclVersion() {
  if (int code = callGetVersion(dlsym(RTLD_DEFAULT, "ncclGetVersion"))) return code;
  if (int code = versionOfLoaded("libnccl.so.2")) return code;
  const std::string rccl = loadedRccl();
  return rccl.empty() ? 0 : versionOfLoaded(rccl.c_str());
}

bool rcclInProcess() {
  if (!loadedRccl().empty()) return true;
  // Either export alone exists elsewhere (Microsoft's MSCCL, Meta's NCCLX); together only RCCL has them.
  return dlsym(RTLD_DEFAULT, "mscclLoadAlgo") && dlsym(RTLD_DEFAULT, "ncclAllToAllv");
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
  if (settings.host) {
    r.host = *settings.host;
    r.hostSource = HostSource::Setting;
  } else if (rcclInProcess()) {
    r.host = abi::Host::Rccl;
    r.hostSource = HostSource::Detected;
  }
  if (r.versionCode > 0) r.rule = abi::pickRuleFor(r.host, r.versionCode);
  const uint64_t key = (static_cast<uint64_t>(r.versionCode) << 16) | (static_cast<uint64_t>(r.host) << 8) |
                       (static_cast<uint64_t>(r.hostSource) << 4) | static_cast<uint64_t>(r.source);
  if (gLastLogged.exchange(key, std::memory_order_relaxed) != key) {
    const char* rule = abi::pickRuleName(r.rule);
    if (r.host == abi::Host::Rccl)
      logInfo("host RCCL (%s), version %s (%s): selection as NCCL %s's, the chosen cell the table's only 0.0, "
              "channel counts as totals, no chunk sizes (RCCL never asks), collectives other than 0-4 left alone",
              r.hostSource == HostSource::Setting ? "DYNAMICCL_HOST" : "seen in the process",
              r.versionCode > 0 ? ncclVersionText(r.versionCode).c_str() : "unknown",
              r.source == VersionSource::Setting ? "DYNAMICCL_NCCL_VERSION"
              : r.source == VersionSource::Libnccl ? "ncclGetVersion" : "none answered", rule);
    else if (r.source == VersionSource::Unknown)
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
