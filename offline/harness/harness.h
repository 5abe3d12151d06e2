// harness: loads a tuner plugin library exactly as NCCL does and drives it like NCCL does.
// Used by the tests, `dynamiccl show` and `dynamiccl replay`, so every judgement of a decision
// goes through the real .so and its real C ABI.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "abi/abi.h"
#include "features/features.h"

namespace dynamiccl::harness {

// NCCL's contiguous float[7][3] cost table, in microseconds; -1 marks IGNORE.
using CostTable = std::array<std::array<float, kNumProtos>, kNumAlgos>;
static_assert(sizeof(CostTable) == sizeof(float[kNumAlgos][kNumProtos]), "must alias NCCL's float[7][3]");
CostTable allIgnored();
// A plausible table where every entry is available (for tests that don't care about the model).
CostTable allAvailable(float cost_us = 10.0f);
// Every entry available and (algo, proto) the cheapest: a table on which NCCL's own choice is that.
CostTable ncclPicks(int algo, int proto);

struct Choice {
  int algo = -1;  // -1: NCCL found nothing eligible
  int proto = -1;
  int nChannels = 0;  // what the tuner wrote; 0 = NCCL keeps its own count
  bool operator==(const Choice&) const = default;
};

// NCCL's selection after the tuner returned, under the rule of the release emulated
// (abi::ncclChoice). `before`: the table as NCCL filled it, whose entries >= 0 are 2.31's only
// candidates (nullptr: those of `table`).
Choice selectLikeNccl(const CostTable& table, abi::PickRule rule, const CostTable* before = nullptr);

// What one call ran: the choice plus NCCL's channel handling of the release emulated.
struct Outcome {
  Choice choice;
  bool wroteNegative = false;   // the tuner left a negative cost in an entry NCCL had filled
  bool revivedIgnored = false;  // the tuner wrote a cost >= 0 into an entry NCCL had left IGNORE
  int channelsRun = 0;          // abi::channelsRun: what NCCL runs (0: NCCL's own count is not modelled)
  bool channelsCapped = false;  // the tuner asked for more channels than NCCL's own count and got fewer (2.31)
  bool forced = false;          // the tuner wrote into the table: NCCL runs the tuner's pick, not its own
};

// Captures lines logged through the ncclDebugLogger_t the harness hands to the plugin.
class LogCapture {
 public:
  static ncclDebugLogger_t logger();
  static std::vector<std::string> lines();
  static size_t count(ncclDebugLogLevel level);
  static void clear();
};

struct CommSpec {
  uint64_t commId = 0x1234abcd;
  int nRanks = 8;
  int nNodes = 1;
  int minRanksPerNode = 0;  // 0: derived as nRanks / nNodes
  int maxRanksPerNode = 0;
  // In/out at init, as the release emulated hands them over: a v7 library gets five compute-capability
  // rows, a v5/v6 library four (2.32.6 converts v7 -> v5 for it and back). Give either; nullptr: zeros.
  ncclTunerConstants_v5_t* constants = nullptr;
  ncclTunerConstants_v7_t* constantsV7 = nullptr;
};

class TunerLibrary;

// One communicator's view of the plugin: init on construction, finalize/destroy on destruction.
class TunerComm {
 public:
  ~TunerComm();
  TunerComm(const TunerComm&) = delete;
  TunerComm& operator=(const TunerComm&) = delete;

  // Calls getCollInfo with NCCL's arguments. For v2 it emulates NCCL's shim: derives nvlsSupport
  // and collNetSupport from the table, then zeroes the chosen entry if it is not IGNORE.
  // regBuff is dropped for v2/v3, which do not take it.
  ncclResult_t getCollInfo(int coll, size_t nBytes, int numPipeOps, int regBuff, CostTable& table,
                           int* nChannels);
  // The v3+ entry point with raw arguments, for tests of malformed input (odd shapes, null table).
  ncclResult_t getCollInfoRaw(int coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
                              int regBuff, int* nChannels);
  // getCollInfo on a copy of the table, then NCCL's selection: what NCCL would run.
  Choice decide(int coll, size_t nBytes, const CostTable& table, int numPipeOps = 1, int regBuff = 0);
  // decide() with the whole outcome under the library's emulated release; ncclChannels: NCCL's own
  // size-based channel count for this call (0: not modelled).
  Outcome run(int coll, size_t nBytes, const CostTable& table, int ncclChannels, int numPipeOps = 1, int regBuff = 0);
  bool hasChunkSize() const;
  // v6 only; returns ncclSuccess and leaves *chunkSize alone when the plugin has no getChunkSize.
  ncclResult_t getChunkSize(int coll, size_t nBytes, int algo, int proto, int nChannels, size_t* chunkSize);
  void* context() const { return context_; }

 private:
  friend class TunerLibrary;
  TunerComm(std::shared_ptr<const TunerLibrary> lib, void* context) : lib_(std::move(lib)), context_(context) {}
  std::shared_ptr<const TunerLibrary> lib_;
  void* context_ = nullptr;
};

struct OpenOptions {
  int maxVersion = 7;           // probe newest first from here down to v2 (abi::tunerProbeFrom: 2.32.6 from 7, 2.28.9 from 5)
  std::string searchDir;        // where a bare library name is looked up (stands in for LD_LIBRARY_PATH)
  // The NCCL release emulated (major * 10000 + minor * 100 + patch): what the ncclGetVersion this
  // process exports answers while the plugin's init runs, and whose selection rule decide() applies.
  // 0: ncclGetVersion answers an error (a process without a visible libnccl); 2.31 rules apply.
  int ncclVersion = 22809;      // the installed NCCL
};

// The OpenOptions::ncclVersion for a release's rule (2.28.9, 2.30.7, 2.31.2).
int emulatedVersionOf(abi::PickRule rule);
// OpenOptions that load a library as that NCCL release does (its version, probed from its newest tuner).
OpenOptions asRelease(int ncclVersion);

class TunerLibrary : public std::enable_shared_from_this<TunerLibrary> {
 public:
  // NCCL's resolution: the value as given (dlopen RTLD_NOW|RTLD_LOCAL); if that fails and the value
  // has no '/' and is not lib*.so, then libnccl-tuner-<value>.so. Then the newest symbol first.
  static Expected<std::shared_ptr<TunerLibrary>> open(const std::string& nameOrPath, const OpenOptions& options = {});
  ~TunerLibrary();

  int version() const { return version_; }
  int ncclVersion() const { return ncclVersion_; }
  abi::PickRule pickRule() const { return ncclVersion_ > 0 ? abi::pickRuleFor(ncclVersion_) : abi::kNewestPickRule; }
  std::string name() const;
  std::string path() const { return path_; }

  // init for one communicator; an error value carries NCCL's result code in its message.
  Expected<std::unique_ptr<TunerComm>> init(const CommSpec& spec) const;
  ncclResult_t lastInitResult() const { return lastInitResult_; }

 private:
  friend class TunerComm;
  TunerLibrary() = default;
  void* handle_ = nullptr;
  int version_ = 0;
  int ncclVersion_ = 22809;
  std::string path_;
  // The export found, one alternative per ABI version (index = version - 2).
  using Table = std::variant<const ncclTuner_v2_t*, const ncclTuner_v3_t*, const ncclTuner_v4_t*,
                             const ncclTuner_v5_t*, const ncclTuner_v6_t*, const ncclTuner_v7_t*>;
  Table table_;
  mutable std::atomic<ncclResult_t> lastInitResult_{ncclSuccess};  // init may run on several threads
};

// DYNAMICCL_PLUGIN_PATH: the plugin library the tools and tests drive instead of the one built
// alongside; nullopt when unset or empty.
std::optional<std::string> pluginPathFromEnv();
// Path of the plugin built in this tree (DYNAMICCL_PLUGIN_DIR/libnccl-tuner-dynamiccl.so) or the
// value of DYNAMICCL_PLUGIN_PATH when set.
std::string builtPluginPath(const char* pluginDir);

// Sets an environment variable for the scope of this object (tests of env-driven behaviour).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const char* value);  // value nullptr: unset
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

// ---- profiler role: loads ncclProfiler_vN like NCCL (newest first) and emits events like NCCL ----

struct ProfilerCommSpec {
  uint64_t commId = 0x1234abcd;  // given to init from v4; to Coll descriptors as commHash in v1/v2
  int nRanks = 8;
  int nNodes = 1;
  int rank = 0;
};

// One Coll start as NCCL describes it (2.28.9 profiler.cc); v1 gets the indices of these names.
struct ProfilerColl {
  uint64_t seq = 0;
  const char* func = collectiveNcclName(Collective::AllReduce).data();  // NCCL's spelling, a literal
  size_t count = 1024;
  const char* datatype = "ncclFloat32";
  const char* algo = "RING";
  const char* proto = "SIMPLE";
  int nChannels = 2;
  int rank = 0;
  uint64_t commHash = 0;  // v1/v2 descriptors only
  // v7 only (NCCL 2.31): a symmetric kernel names its variant (and puts the variant's suffix in algo, "" in proto).
  const char* kernelVariant = nullptr;
  bool isSymColl = false;
  uint64_t userTag = 0;
};

class ProfilerLibrary {
 public:
  // Path as NCCL_PROFILER_PLUGIN would name it; probes ncclProfiler_v<maxVersion> down to v1
  // (NCCL 2.28.9: 5, 2.29/2.30: 6, 2.31: 7).
  static Expected<std::shared_ptr<ProfilerLibrary>> open(const std::string& path, int maxVersion = 6);
  ~ProfilerLibrary();
  int version() const { return version_; }
  std::string name() const;

  // eActivationMask: the process-wide int NCCL passes to every init.
  ncclResult_t init(const ProfilerCommSpec& spec, int* eActivationMask, void** context) const;
  ncclResult_t startColl(void* context, const ProfilerColl& coll, void** handle) const;
  // v3 has no pTimer (ignored); v1/v2 have no KernelCh events (returns success, *handle = nullptr).
  ncclResult_t startKernelCh(void* context, void* parentColl, int channelId, uint64_t pTimer_ns, void** handle) const;
  ncclResult_t kernelChStop(void* handle, uint64_t pTimer_ns) const;  // recordEventState(KernelChStop)
  // v7: one KernelPhase child of a KernelCh as NCCL 2.31 emits it (start, KernelPhaseStop, stop if a
  // handle came back); earlier versions: nothing (NCCL drops the event for them).
  ncclResult_t kernelPhase(void* context, void* parentChannel, int channelId, int phaseId, uint64_t start_ns,
                           uint64_t stop_ns) const;
  ncclResult_t stop(void* handle) const;
  // startEvent with a raw descriptor pointer (may be null or garbage) for malformed-input tests.
  ncclResult_t startRaw(void* context, void** handle, void* descr) const;
  ncclResult_t recordStateRaw(void* handle, int state, void* args) const;
  ncclResult_t finalize(void* context) const;

 private:
  ProfilerLibrary() = default;
  void* handle_ = nullptr;
  int version_ = 0;
  const void* table_ = nullptr;  // ncclProfiler_v<version_>_t
};

}  // namespace dynamiccl::harness
