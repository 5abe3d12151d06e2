// Opening the profiler role of a plugin library and emitting events the way NCCL 2.23..2.31 do.
#include <dlfcn.h>

#include <cstring>

#include "offline/harness/harness.h"

namespace dynamiccl::harness {
namespace {

// v1 carries numbers: ncclFunc_t and ncclDataType_t indices of NCCL's names (p2p follows the collectives).
uint8_t funcIndex(const char* func) {
  if (!func) return 255;
  for (int i = 0; i < kNumCollectives; ++i)
    if (func == collectiveNcclName(static_cast<Collective>(i))) return static_cast<uint8_t>(i);
  static const char* kP2pNames[] = {"SendRecv", "Send", "Recv"};
  for (uint8_t i = 0; i < 3; ++i)
    if (std::strcmp(func, kP2pNames[i]) == 0) return static_cast<uint8_t>(kNumCollectives + i);
  return 255;
}
uint8_t typeIndex(const char* type) {
  static const char* kNames[] = {"ncclInt8",  "ncclUint8",   "ncclInt32",   "ncclUint32",
                                 "ncclInt64", "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                 "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  for (uint8_t i = 0; i < 12; ++i)
    if (type && std::strcmp(type, kNames[i]) == 0) return i;
  return 255;
}
uint8_t algoIndex(const char* a) {
  auto v = a ? parseAlgo(a) : std::nullopt;
  return v && *v != Algo::Default ? static_cast<uint8_t>(*v) : 255;
}
uint8_t protoIndex(const char* p) {
  auto v = p ? parseProto(p) : std::nullopt;
  return v && *v != Proto::Default ? static_cast<uint8_t>(*v) : 255;
}

template <typename Coll>
void fillNamed(Coll& out, const ProfilerColl& in) {
  out.seqNumber = in.seq;
  out.func = in.func;
  out.count = in.count;
  out.datatype = in.datatype;
  out.algo = in.algo;
  out.proto = in.proto;
  if constexpr (requires { out.nChannels; }) out.nChannels = static_cast<uint8_t>(in.nChannels);
  else out.nMaxChannels = static_cast<uint8_t>(in.nChannels);
  if constexpr (requires { out.commHash; }) out.commHash = in.commHash;
  if constexpr (requires { out.isSymColl; }) {
    out.kernelVariant = in.kernelVariant;
    out.isSymColl = in.isSymColl;
    out.userTag = in.userTag;
  }
}

template <typename T>
constexpr bool kHasPTimer = std::is_same_v<T, ncclProfiler_v4_t> || std::is_same_v<T, ncclProfiler_v5_t> ||
                            std::is_same_v<T, ncclProfiler_v6_t> || std::is_same_v<T, ncclProfiler_v7_t>;

// Calls fn(table) with the library's table cast to its version's type.
template <typename F>
auto withTable(int version, const void* table, F&& fn) {
  switch (version) {
    case 7: return fn(static_cast<const ncclProfiler_v7_t*>(table));
    case 6: return fn(static_cast<const ncclProfiler_v6_t*>(table));
    case 5: return fn(static_cast<const ncclProfiler_v5_t*>(table));
    case 4: return fn(static_cast<const ncclProfiler_v4_t*>(table));
    case 3: return fn(static_cast<const ncclProfiler_v3_t*>(table));
    case 2: return fn(static_cast<const ncclProfiler_v2_t*>(table));
    default: return fn(static_cast<const ncclProfiler_v1_t*>(table));
  }
}

}  // namespace

Expected<std::shared_ptr<ProfilerLibrary>> ProfilerLibrary::open(const std::string& path, int maxVersion) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return makeError("could not open profiler library " + path + ": " + dlerror());
  std::shared_ptr<ProfilerLibrary> lib(new ProfilerLibrary());
  lib->handle_ = handle;
  for (int v = maxVersion; v >= 1 && !lib->table_; --v) {
    lib->table_ = dlsym(handle, ("ncclProfiler_v" + std::to_string(v)).c_str());
    if (lib->table_) lib->version_ = v;
  }
  if (!lib->table_) return makeError("no ncclProfiler_v1..v" + std::to_string(maxVersion) + " in " + path);
  return lib;
}

ProfilerLibrary::~ProfilerLibrary() {
  if (handle_) dlclose(handle_);
}

std::string ProfilerLibrary::name() const {
  return withTable(version_, table_, [](auto* t) { return std::string(t->name ? t->name : ""); });
}

ncclResult_t ProfilerLibrary::init(const ProfilerCommSpec& spec, int* mask, void** context) const {
  return withTable(version_, table_, [&](auto* t) -> ncclResult_t {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(t)>>;
    if constexpr (std::is_same_v<T, ncclProfiler_v5_t> || std::is_same_v<T, ncclProfiler_v6_t> ||
                  std::is_same_v<T, ncclProfiler_v7_t>)
      return t->init(context, spec.commId, mask, "harness", spec.nNodes, spec.nRanks, spec.rank, LogCapture::logger());
    else if constexpr (std::is_same_v<T, ncclProfiler_v4_t>)
      return t->init(context, mask, "harness", spec.commId, spec.nNodes, spec.nRanks, spec.rank, LogCapture::logger());
    else
      return t->init(context, mask);
  });
}

ncclResult_t ProfilerLibrary::startColl(void* context, const ProfilerColl& c, void** handle) const {
  return withTable(version_, table_, [&](auto* t) -> ncclResult_t {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(t)>>;
    if constexpr (std::is_same_v<T, ncclProfiler_v1_t>) {
      ncclProfilerEventDescr_v1_t d{};
      d.type = ncclProfileColl;
      d.rank = c.rank;
      d.coll.seqNumber = c.seq;
      d.coll.commHash = c.commHash;
      d.coll.func = funcIndex(c.func);
      d.coll.count = c.count;
      d.coll.datatype = typeIndex(c.datatype);
      d.coll.algo = algoIndex(c.algo);
      d.coll.proto = protoIndex(c.proto);
      d.coll.nMaxChannels = static_cast<uint8_t>(c.nChannels);
      return t->startEvent(context, handle, &d);
    } else {
      using Descr = std::conditional_t<std::is_same_v<T, ncclProfiler_v2_t>, ncclProfilerEventDescr_v2_t,
                    std::conditional_t<std::is_same_v<T, ncclProfiler_v3_t>, ncclProfilerEventDescr_v3_t,
                    std::conditional_t<std::is_same_v<T, ncclProfiler_v4_t>, ncclProfilerEventDescr_v4_t,
                    std::conditional_t<std::is_same_v<T, ncclProfiler_v7_t>, ncclProfilerEventDescr_v7_t,
                                       ncclProfilerEventDescr_v5_t>>>>;
      Descr d{};
      d.type = ncclProfileColl;
      d.rank = c.rank;
      fillNamed(d.coll, c);
      return t->startEvent(context, handle, &d);
    }
  });
}

ncclResult_t ProfilerLibrary::startKernelCh(void* context, void* parent, int channelId, uint64_t pTimer,
                                            void** handle) const {
  if (handle) *handle = nullptr;
  return withTable(version_, table_, [&](auto* t) -> ncclResult_t {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(t)>>;
    if constexpr (std::is_same_v<T, ncclProfiler_v3_t>) {
      ncclProfilerEventDescr_v3_t d{};
      d.type = ncclProfileKernelCh;
      d.parentObj = parent;
      d.kernelCh.channelId = static_cast<uint8_t>(channelId);
      return t->startEvent(context, handle, &d);
    } else if constexpr (kHasPTimer<T>) {
      std::conditional_t<std::is_same_v<T, ncclProfiler_v4_t>, ncclProfilerEventDescr_v4_t,
                         std::conditional_t<std::is_same_v<T, ncclProfiler_v7_t>, ncclProfilerEventDescr_v7_t,
                                            ncclProfilerEventDescr_v5_t>> d{};
      d.type = ncclProfileKernelCh;
      d.parentObj = parent;
      d.kernelCh.channelId = static_cast<uint8_t>(channelId);
      d.kernelCh.pTimer = pTimer;
      return t->startEvent(context, handle, &d);
    } else {
      return ncclSuccess;  // v1/v2: NCCL has no KernelCh event for these
    }
  });
}

ncclResult_t ProfilerLibrary::kernelChStop(void* handle, uint64_t pTimer) const {
  return withTable(version_, table_, [&](auto* t) -> ncclResult_t {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(t)>>;
    if constexpr (kHasPTimer<T>) {
      ncclProfilerEventStateArgs_v4_t a{};
      a.kernelCh.pTimer = pTimer;
      return t->recordEventState(handle, ncclProfilerKernelChStop, &a);
    } else {
      ncclProfilerEventStateArgs_v1_t a{};
      return t->recordEventState(handle, ncclProfilerKernelChStop, &a);
    }
  });
}

ncclResult_t ProfilerLibrary::kernelPhase(void* context, void* parent, int channelId, int phaseId, uint64_t start_ns,
                                          uint64_t stop_ns) const {
  static const char* kPhaseNames[] = {"initial_sync", "compute", "final_sync"};
  return withTable(version_, table_, [&](auto* t) -> ncclResult_t {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(t)>>;
    if constexpr (std::is_same_v<T, ncclProfiler_v7_t>) {
      ncclProfilerEventDescr_v7_t d{};
      d.type = ncclProfileKernelPhase;
      d.parentObj = parent;
      d.kernelPhase.channelId = static_cast<uint8_t>(channelId);
      d.kernelPhase.phaseId = static_cast<uint8_t>(phaseId);
      d.kernelPhase.phaseName = kPhaseNames[static_cast<unsigned>(phaseId) % 3];
      d.kernelPhase.pTimer = start_ns;
      void* h = nullptr;
      if (ncclResult_t r = t->startEvent(context, &h, &d); r != ncclSuccess || !h) return r;
      ncclProfilerEventStateArgs_v7_t a{};
      a.kernelCh.pTimer = stop_ns;  // NCCL reuses the KernelCh member for the phase's stop
      if (ncclResult_t r = t->recordEventState(h, ncclProfilerKernelPhaseStop, &a); r != ncclSuccess) return r;
      return t->stopEvent(h);
    } else {
      return ncclSuccess;  // NCCL drops KernelPhase events for v6 and older profilers
    }
  });
}

ncclResult_t ProfilerLibrary::stop(void* handle) const {
  return withTable(version_, table_, [&](auto* t) { return t->stopEvent(handle); });
}

ncclResult_t ProfilerLibrary::startRaw(void* context, void** handle, void* descr) const {
  // Same C calling convention for every descriptor pointer type: call with the raw pointer.
  return withTable(version_, table_, [&](auto* t) {
    return reinterpret_cast<ncclResult_t (*)(void*, void**, void*)>(t->startEvent)(context, handle, descr);
  });
}

ncclResult_t ProfilerLibrary::recordStateRaw(void* handle, int state, void* args) const {
  return withTable(version_, table_, [&](auto* t) {
    return reinterpret_cast<ncclResult_t (*)(void*, int, void*)>(t->recordEventState)(handle, state, args);
  });
}

ncclResult_t ProfilerLibrary::finalize(void* context) const {
  return withTable(version_, table_, [&](auto* t) { return t->finalize(context); });
}

}  // namespace dynamiccl::harness
