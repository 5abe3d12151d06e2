// model: NCCL's own cost model, reimplemented so that for a described communicator we produce the
// exact cost table NCCL hands the tuner and NCCL's default (algo, proto, nChannels).
// Public header of dynamiccl_model.
//
// NCCL version read: 2.28.9 (tag v2.28.9-1): src/graph/tuning.cc (ncclTopoTuneModel,
// ncclTopoGetAlgoTime), src/enqueue.cc (initCollCostTable, updateCollCostTable, topoGetAlgoInfo),
// src/init.cc (graph reduction, nvls/collnet forcing), src/graph/connect.cc (comm channel
// duplication), src/graph/search.cc (speed arrays, ncclTopoDupChannels), src/transport/nvls.cc.
// Compared with 2.30.7 (tag v2.30.7-1); the formulas for Volta/Ampere/Hopper are unchanged. 2.30 differs in:
//  - Blackwell constants: perChMaxRingLL128Bws = {40, 40, 40} (2.28.9: {73.4, 34.6, 73.4}),
//    perChMaxNVLSTreeBws N4 = 80.0 (2.28.9: 43.8).
//  - NVLS_TREE AllReduce also gets the tree correction factor on sm100+ x86 (table grows to 24 sizes).
//  - LL128 stays enabled for mixed compute capabilities when minCompCap >= 90.
//  - CollNetChain is disabled when the CollNet plugin lacks chain support (collNetChainSupport).
//  - NVLS/CollNetDirect multi-node AllGather no longer zeroes when the plugin lacks iallgather.
//  - The min traffic per channel at scheduling grows 16 KiB -> 32 KiB (not part of this model).
// We model 2.28.9 exactly (the installed version); the 2.30 items above are not modelled.
//
// Not modelled (inputs fixed to NCCL defaults): NCCL_THREAD_THRESHOLDS, CUDA 11.8's sm90 2-rank
// LL128 exception (we assume CUDA >= 12), NCCL_ALGO/NCCL_PROTO string parsing (pass the parsed
// enable matrices in NcclGraphs instead), scheduler-side channel clipping (16 KiB per channel).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "abi/abi.h"
#include "features/features.h"
#include "offline/model/graphs.h"
#include "offline/model/topology.h"
#include "policy/policy.h"

namespace dynamiccl::model {

// NCCL's cost table [algo][proto] in microseconds; -1.0 marks an unusable entry (IGNORE).
using CostTable = std::array<std::array<float, kNumProtos>, kNumAlgos>;
static_assert(sizeof(CostTable) == sizeof(float[abi::kCostSlots]), "contiguous, as abi::ncclChoice reads it");
inline constexpr float kIgnore = -1.0f;

// What NCCL would run by itself.
struct DefaultChoice {
  Algo algo = Algo::Default;    // Default when every entry is IGNORE (NCCL errors out)
  Proto proto = Proto::Default;
  int nChannels = 0;            // NCCL's nMaxChannels for the call (before the scheduler's clipping)
  float time_us = -1.0f;        // the winning entry's cost
};

// Per-call traits the tuner is not told but that change NCCL's fill (defaults: float sum).
struct CallTraits {
  bool nvlsOpSupported = true;     // ncclNvlsSupported(op, dtype) (AllGather always true)
  bool collNetOpSupported = true;  // collNetSupportMatrix[op][dtype]
  bool scaledReduceScatter = false;  // ReduceScatter with avg / PreMulSum: no PAT
  bool fp8 = false;                // fp8 datatypes: Ring costs x1024 beyond 8 ranks
};

// NCCL 2.28.9's default tuner constants (ncclTopoInitTunerConstants).
ncclTunerConstants_v5_t defaultTunerConstants();
void fillDefaultTunerConstants(ncclTunerConstants_v5_t* out);

// Selection over a filled table exactly as NCCL (abi::ncclChoice). Returns
// Algo::Default/Proto::Default when nothing is usable.
DefaultChoice selectFromTable(const CostTable& table);

class NcclModel {
 public:
  // Builds the model as ncclTopoTuneModel does after the tuner's init: constants (possibly edited
  // by a tuner) replace the defaults when given.
  static Expected<NcclModel> build(const NcclGraphs& graphs,
                                   const ncclTunerConstants_v5_t* constants = nullptr);

  // The table NCCL hands the tuner for this call (initCollCostTable + updateCollCostTable).
  CostTable costTable(Collective coll, uint64_t nBytes, int numPipeOps = 1,
                      const CallTraits& traits = {}) const;
  // NCCL's own choice for this call: min over the table, then its channel count.
  DefaultChoice defaultChoice(Collective coll, uint64_t nBytes, int numPipeOps = 1,
                              const CallTraits& traits = {}) const;
  // NCCL's per-call channel count for an (algo, proto) (topoGetAlgoInfo's thread-threshold loop).
  int defaultChannels(Algo algo, Proto proto, uint64_t nBytes) const;

  // The model's tables (comm->latencies / comm->bandwidths): base latency in us, algorithm bandwidth
  // in GB/s (0 = unavailable).
  float latency_us(Collective c, Algo a, Proto p) const { return lat_[ci(c)][ai(a)][pi(p)]; }
  float bandwidth_GBps(Collective c, Algo a, Proto p) const { return bw_[ci(c)][ai(a)][pi(p)]; }
  const NcclGraphs& graphs() const { return g_; }
  const ncclTunerConstants_v5_t& constants() const { return k_; }

  // NCCL's TUNING log table ("lat/bw" per collective x algorithm x protocol), one line per row.
  std::string dump() const;

 private:
  static int ci(Collective c) { return static_cast<int>(c); }
  static int ai(Algo a) { return static_cast<int>(a); }
  static int pi(Proto p) { return static_cast<int>(p); }
  float algoTime(int coll, int a, int p, uint64_t nBytes, int numPipeOps) const;

  NcclGraphs g_{};
  ncclTunerConstants_v5_t k_{};
  float lat_[kNumCollectives][kNumAlgos][kNumProtos] = {};
  float bw_[kNumCollectives][kNumAlgos][kNumProtos] = {};
  int maxThreads_[kNumAlgos][kNumProtos] = {};
  int64_t threadThresholds_[kNumAlgos][kNumProtos] = {};
};

// A documented approximation of NCCL's topology search and communicator init for our presets
// (DGX-A100/H100, H800, L40S PCIe, GH200 quads, GB200 NVL72). Each assumption is stated where it
// is made (approximate_graphs.cpp). Errors on shapes that cannot exist (no GPUs, no nodes).
Expected<NcclGraphs> approximateGraphs(const Topology& topo);

// A topology's hardware as a profile's "fingerprint" declares it (source: "sim preset <name>").
ClusterHardware clusterHardwareOf(const Topology& topo);
// The same facts as the plugin's DYNAMICCL_TOPO takes them (what makes its host probe see `topo`).
TopoOverrides topoOverridesOf(const Topology& topo);

// NCCL's per-step chunk for a protocol with the default NCCL_BUFFSIZE: what a configuration's chunk 0 means.
uint64_t defaultChunkBytes(Proto p);

// NCCL's view of one topology, as its users ask for it: the cost table NCCL hands the tuner, NCCL's
// default configuration, and what NCCL runs when NCCL_ALGO / NCCL_PROTO restrict it (the forced sweeps
// in shared/data).
class NcclReference {
 public:
  using Config = policy::Decision;
  static Expected<NcclReference> create(const Topology& topo);

  CostTable costTable(Collective coll, uint64_t nBytes) const;
  // NCCL's own choice with its channel count and our default chunk; algo Default if none usable.
  Config defaultConfig(Collective coll, uint64_t nBytes) const;
  // NCCL's choice when NCCL_ALGO=algo and/or NCCL_PROTO=proto (nullopt = not restricted). Naming a
  // protocol explicitly enables it even where NCCL's auto rules would not (LL128 on PCIe).
  Config restrictedConfig(Collective coll, uint64_t nBytes, std::optional<Algo> algo,
                          std::optional<Proto> proto) const;
  int channels(Algo a, Proto p, uint64_t nBytes) const { return model_->defaultChannels(a, p, nBytes); }
  // Fills nChannels/chunk left at 0 with NCCL's values; under `rule` a tuner's channel count is what
  // that release runs: it replaces NCCL's count before 2.31 and only lowers it from 2.31 (abi::channelsRun).
  Config resolve(const Config& c, uint64_t nBytes, abi::PickRule rule = abi::PickRule::Nccl2_28) const;
  // Whether a tuner targeting `rule` would propose c's channel count: from 2.31 not one above NCCL's
  // own count for c's algo/proto, or for NCCL's own choice when c keeps it (NCCL would run its own
  // count: the same configuration as 0).
  bool channelsProposable(Collective coll, const Config& c, uint64_t nBytes, abi::PickRule rule) const;

 private:
  NcclReference() = default;
  NcclGraphs graphs_;
  std::shared_ptr<const NcclModel> model_;
  // Models with NCCL_ALGO/NCCL_PROTO restrictions, built on first use (key: algo, proto; -1 = any).
  mutable std::map<std::pair<int, int>, std::shared_ptr<const NcclModel>> restricted_;
};

}  // namespace dynamiccl::model
