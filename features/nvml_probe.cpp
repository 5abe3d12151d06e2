// NVML through dlopen: the plugin must load on machines without the NVIDIA driver, so nothing here
// links libnvidia-ml; every failure is a value.
#include <dlfcn.h>

#include <string>

#include "features/topology_fingerprint.h"

namespace dynamiccl {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;
constexpr unsigned kMaxNvlinks = 18;  // NVML_NVLINK_MAX_LINKS

// Per-link unidirectional bandwidth by generation: NVLink3 (A100) and NVLink4 (H100) 25 GB/s,
// NVLink5 (Blackwell) 50 GB/s.
double perLinkBw_GBps(int computeCap) { return computeCap >= 100 ? 50.0 : computeCap >= 80 ? 25.0 : 20.0; }

struct Library {
  void* handle = nullptr;
  explicit Library(const char* name) : handle(dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle) dlclose(handle);
  }
  template <typename F>
  F symbol(const char* name) const {
    return reinterpret_cast<F>(dlsym(handle, name));
  }
};

}  // namespace

Expected<NvmlInfo> readNvml(const char* library) {
  Library lib(library);
  if (!lib.handle) return makeError(std::string("NVML not available (") + library + ")");
  auto init = lib.symbol<nvmlReturn_t (*)()>("nvmlInit_v2");
  auto shutdown = lib.symbol<nvmlReturn_t (*)()>("nvmlShutdown");
  auto count = lib.symbol<nvmlReturn_t (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  auto handle = lib.symbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  auto cc = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetCudaComputeCapability");
  auto linkState = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  if (!init || !shutdown || !count || !handle || !cc) return makeError("NVML lacks a needed symbol");
  if (init() != kNvmlSuccess) return makeError("nvmlInit failed");
  NvmlInfo info;
  unsigned n = 0;
  nvmlDevice_t dev = nullptr;
  int major = 0, minor = 0;
  if (count(&n) == kNvmlSuccess && n > 0 && handle(0, &dev) == kNvmlSuccess &&
      cc(dev, &major, &minor) == kNvmlSuccess) {
    info.gpuCount = static_cast<int>(n);
    info.computeCap = major * 10 + minor;
    for (unsigned link = 0; linkState && link < kMaxNvlinks; ++link) {
      int active = 0;
      if (linkState(dev, link, &active) == kNvmlSuccess && active == kNvmlFeatureEnabled) ++info.activeNvlinks;
    }
    info.nvlinkBwPerGpu_GBps = info.activeNvlinks * perLinkBw_GBps(info.computeCap);
  }
  shutdown();
  if (info.gpuCount == 0) return makeError("NVML reports no GPU");
  return info;
}

}  // namespace dynamiccl
