// Opening a tuner library and driving its ABI versions the way NCCL 2.28/2.30/2.31/2.32 do.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "offline/harness/harness.h"

namespace {
std::atomic<int> gEmulatedNcclVersion{22809};
}  // namespace

// NCCL's public ncclGetVersion, exported by every program linking the harness (CMake adds
// --export-dynamic-symbol) so that a plugin's dlsym(RTLD_DEFAULT) finds the release emulated.
extern "C" __attribute__((visibility("default"), used)) int ncclGetVersion(int* version) {
  const int v = gEmulatedNcclVersion.load(std::memory_order_relaxed);
  if (!version || v <= 0) return 4;  // ncclInvalidArgument
  *version = v;
  return 0;
}

namespace dynamiccl::harness {

int emulatedVersionOf(abi::PickRule rule) {
  return rule == abi::PickRule::Nccl2_28 ? 22809 : rule == abi::PickRule::Nccl2_30 ? 23007 : 23102;
}

OpenOptions asRelease(int ncclVersion) {
  OpenOptions o;
  o.ncclVersion = ncclVersion;
  o.maxVersion = abi::tunerProbeFrom(ncclVersion);
  return o;
}

namespace {

// 2.32.6's v7 -> v5 conversion for an older plugin and back: the rows up to Blackwell.
template <class To, class From>
void copyCommonRows(To& to, const From& from) {
  std::memcpy(to.baseLatencies, from.baseLatencies, sizeof to.baseLatencies);
  std::memcpy(to.hwLatencies, from.hwLatencies, sizeof to.hwLatencies);
  constexpr size_t kRows = DYNAMICCL_NCCL_NUM_COMPCAPS_V5 * sizeof(double[3]);
  std::memcpy(to.llMaxBws, from.llMaxBws, kRows);
  std::memcpy(to.perChMaxRingLL128Bws, from.perChMaxRingLL128Bws, kRows);
  std::memcpy(to.perChMaxTreeLL128Bws, from.perChMaxTreeLL128Bws, kRows);
  std::memcpy(to.perChMaxTreeBws, from.perChMaxTreeBws, kRows);
  std::memcpy(to.perChMaxNVLSTreeBws, from.perChMaxNVLSTreeBws, kRows);
}

// NCCL retries libnccl-tuner-<value>.so only for a bare name that is not already lib*.so.
bool looksLikeLibraryFile(const std::string& v) {
  return v.rfind("lib", 0) == 0 && v.size() > 3 && v.compare(v.size() - 3, 3, ".so") == 0;
}

// The table behind a symbol of ABI version v (2..7), as the variant's alternative v - 2.
template <class Table, size_t... I>
Table tableOf(int v, void* symbol, std::index_sequence<I...>) {
  Table t;
  ((v == static_cast<int>(I) + 2 ? (t = static_cast<std::variant_alternative_t<I, Table>>(symbol), true) : false) || ...);
  return t;
}

// What tells the versions apart: v5+ take NCCL's constants and finalize; v2 returns a pair, not a table.
template <class T>
constexpr bool kTakesConstants = requires(T t) { t->finalize; };
template <class T>
constexpr bool kIsV2 = std::is_same_v<T, const ncclTuner_v2_t*>;
template <class T>
constexpr bool kIsV3 = std::is_same_v<T, const ncclTuner_v3_t*>;

void* dlopenIn(const std::string& name, const std::string& searchDir) {
  if (name.find('/') == std::string::npos && !searchDir.empty()) {
    if (void* h = dlopen((searchDir + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

Expected<std::shared_ptr<TunerLibrary>> TunerLibrary::open(const std::string& nameOrPath,
                                                           const OpenOptions& options) {
  // This process plays one rank of communicators whose other ranks do not exist: the plugin's check
  // that every rank has the same inputs would wait for them. Forked ranks set it to 1 themselves.
  setenv("DYNAMICCL_INPUTS_CHECK", "0", 0);
  std::string tried = nameOrPath;
  void* handle = dlopenIn(nameOrPath, options.searchDir);
  std::string path = nameOrPath;
  if (!handle && nameOrPath.find('/') == std::string::npos && !looksLikeLibraryFile(nameOrPath)) {
    path = "libnccl-tuner-" + nameOrPath + ".so";
    tried += ", " + path;
    handle = dlopenIn(path, options.searchDir);
  }
  if (!handle) return makeError("could not open tuner library (tried " + tried + "): " + dlerror());

  std::shared_ptr<TunerLibrary> lib(new TunerLibrary());
  lib->handle_ = handle;
  lib->path_ = path;
  lib->ncclVersion_ = options.ncclVersion;
  for (int v = options.maxVersion; v >= 2 && lib->version_ == 0; --v) {
    const std::string sym = "ncclTunerPlugin_v" + std::to_string(v);
    void* p = dlsym(handle, sym.c_str());
    if (!p) continue;
    lib->version_ = v;
    lib->table_ = tableOf<Table>(v, p, std::make_index_sequence<std::variant_size_v<Table>>{});
  }
  if (lib->version_ == 0) return makeError("no ncclTunerPlugin_v2..v" + std::to_string(options.maxVersion) + " in " + path);
  return lib;
}

TunerLibrary::~TunerLibrary() {
  if (handle_) dlclose(handle_);
}

std::string TunerLibrary::name() const {
  const char* n = std::visit([](auto t) { return t->name; }, table_);
  return n ? n : "";
}

namespace {

// v5+: NCCL's NVLink domains and constants in, the constants as the plugin left them out (v7's fifth
// row kept as NCCL wrote it for an older plugin, which never sees it).
template <class T>
ncclResult_t initWithConstants(T t, const CommSpec& spec, void** ctx) {
  const size_t nRanks = static_cast<size_t>(spec.nRanks), nNodes = static_cast<size_t>(spec.nNodes);
  ncclNvlDomainInfo_v5_t nvl{};
  const int perNode = spec.nNodes > 0 ? spec.nRanks / spec.nNodes : spec.nRanks;
  nvl.nNvlDomains = spec.nNodes;
  nvl.minRanksPerNvlDomain = spec.minRanksPerNode ? spec.minRanksPerNode : perNode;
  nvl.maxRanksPerNvlDomain = spec.maxRanksPerNode ? spec.maxRanksPerNode : perNode;
  ncclTunerConstants_v7_t v7{};
  if (spec.constantsV7) v7 = *spec.constantsV7;
  else if (spec.constants) copyCommonRows(v7, *spec.constants);
  ncclResult_t rc;
  if constexpr (std::is_same_v<T, const ncclTuner_v7_t*>) {
    rc = t->init(ctx, spec.commId, nRanks, nNodes, LogCapture::logger(), &nvl, &v7);
  } else {
    ncclTunerConstants_v5_t v5{};
    if (spec.constants && !spec.constantsV7) v5 = *spec.constants;
    else copyCommonRows(v5, v7);
    rc = t->init(ctx, spec.commId, nRanks, nNodes, LogCapture::logger(), &nvl, &v5);
    copyCommonRows(v7, v5);
  }
  if (spec.constantsV7) *spec.constantsV7 = v7;
  if (spec.constants) copyCommonRows(*spec.constants, v7);
  return rc;
}

}  // namespace

Expected<std::unique_ptr<TunerComm>> TunerLibrary::init(const CommSpec& spec) const {
  void* ctx = nullptr;
  ncclResult_t rc = ncclSuccess;
  gEmulatedNcclVersion.store(ncclVersion_, std::memory_order_relaxed);  // what the plugin's init may read
  const size_t nRanks = static_cast<size_t>(spec.nRanks), nNodes = static_cast<size_t>(spec.nNodes);
  std::visit(
      [&](auto t) {
        using T = decltype(t);
        if constexpr (kTakesConstants<T>) rc = initWithConstants(t, spec, &ctx);
        else rc = t->init(nRanks, nNodes, LogCapture::logger(), &ctx);
      },
      table_);
  lastInitResult_ = rc;
  if (rc != ncclSuccess) return makeError("tuner init returned " + std::to_string(rc));
  return std::unique_ptr<TunerComm>(new TunerComm(shared_from_this(), ctx));
}

TunerComm::~TunerComm() {
  std::visit(
      [&](auto t) {
        if constexpr (kTakesConstants<decltype(t)>) t->finalize(context_);
        else t->destroy(context_);
      },
      lib_->table_);
}

ncclResult_t TunerComm::getCollInfo(int coll, size_t nBytes, int numPipeOps, int regBuff, CostTable& table,
                                    int* nChannels) {
  // std::array<std::array<float,3>,7> is laid out as NCCL's contiguous float[7][3].
  const auto* v2 = std::get_if<const ncclTuner_v2_t*>(&lib_->table_);
  if (!v2)
    return getCollInfoRaw(coll, nBytes, numPipeOps, abi::asNcclArgument(reinterpret_cast<float (*)[kNumProtos]>(table.data())),
                          kNumAlgos, kNumProtos, regBuff, nChannels);
  const auto fn = static_cast<ncclFunc_t>(coll);
  // v2 shim (2.28.9 tuner_v2.cc): support flags from the table, then force the returned pair.
  const float ignore = DYNAMICCL_NCCL_ALGO_PROTO_IGNORE;
  const int nvlsSupport = table[int(Algo::Nvls)][int(Proto::Simple)] != ignore ||
                          table[int(Algo::NvlsTree)][int(Proto::Simple)] != ignore;
  const int collNetSupport = table[int(Algo::CollNetChain)][int(Proto::Simple)] != ignore;
  int algo = -1, proto = -1;
  const ncclResult_t rc = (*v2)->getCollInfo(context_, fn, nBytes, collNetSupport, nvlsSupport, numPipeOps, &algo,
                                             &proto, nChannels);
  if (rc != ncclSuccess) return rc;
  if (algo >= 0 && algo < kNumAlgos && proto >= 0 && proto < kNumProtos && table[algo][proto] != ignore)
    table[algo][proto] = 0.0f;
  return ncclSuccess;
}

ncclResult_t TunerComm::getCollInfoRaw(int coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                                       int numProto, int regBuff, int* nChannels) {
  return std::visit(
      [&](auto t) -> ncclResult_t {
        using T = decltype(t);
        // Cast at the call: a test passes collectives NCCL never would, and UBSan refuses to load an
        // out-of-range enum kept in a variable.
        const auto fn = [&] { return static_cast<ncclFunc_t>(coll); };
        if constexpr (kIsV2<T>) return ncclInvalidUsage;  // v2 takes no table
        else if constexpr (kIsV3<T>) return t->getCollInfo(context_, fn(), nBytes, numPipeOps, table, numAlgo, numProto, nChannels);
        else return t->getCollInfo(context_, fn(), nBytes, numPipeOps, table, numAlgo, numProto, regBuff, nChannels);
      },
      lib_->table_);
}

Choice TunerComm::decide(int coll, size_t nBytes, const CostTable& table, int numPipeOps, int regBuff) {
  CostTable copy = table;
  int nChannels = 0;
  getCollInfo(coll, nBytes, numPipeOps, regBuff, copy, &nChannels);
  Choice c = selectLikeNccl(copy, lib_->pickRule(), &table);
  c.nChannels = nChannels;
  return c;
}

Outcome TunerComm::run(int coll, size_t nBytes, const CostTable& table, int ncclChannels, int numPipeOps,
                       int regBuff) {
  CostTable copy = table;
  int nChannels = 0;
  getCollInfo(coll, nBytes, numPipeOps, regBuff, copy, &nChannels);
  const abi::PickRule rule = lib_->pickRule();
  Outcome o;
  o.choice = selectLikeNccl(copy, rule, &table);
  o.choice.nChannels = nChannels;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      const bool filled = table[a][p] >= 0.0f;
      o.wroteNegative |= filled && copy[a][p] < 0.0f;
      o.revivedIgnored |= !filled && copy[a][p] >= 0.0f;
      o.forced |= copy[a][p] != table[a][p];
    }
  if (ncclChannels > 0) {
    o.channelsRun = abi::channelsRun(rule, nChannels, ncclChannels);
    o.channelsCapped = nChannels > 0 && o.channelsRun < nChannels;
  }
  return o;
}

bool TunerComm::hasChunkSize() const {
  return std::visit(
      [](auto t) {
        if constexpr (requires { t->getChunkSize; }) return t->getChunkSize != nullptr;
        else return false;
      },
      lib_->table_);
}

ncclResult_t TunerComm::getChunkSize(int coll, size_t nBytes, int algo, int proto, int nChannels, size_t* chunkSize) {
  if (!hasChunkSize()) return ncclSuccess;
  return std::visit(
      [&](auto t) -> ncclResult_t {
        if constexpr (requires { t->getChunkSize; })
          return t->getChunkSize(context_, static_cast<ncclFunc_t>(coll), nBytes, algo, proto, nChannels, chunkSize);
        else return ncclSuccess;
      },
      lib_->table_);
}

std::optional<std::string> pluginPathFromEnv() {
  if (const char* p = std::getenv("DYNAMICCL_PLUGIN_PATH"); p && *p) return p;
  return std::nullopt;
}

std::string builtPluginPath(const char* pluginDir) {
  if (auto p = pluginPathFromEnv()) return *p;
  return std::string(pluginDir) + "/libnccl-tuner-dynamiccl.so";
}

}  // namespace dynamiccl::harness
