// NcclGraphs: what NCCL's topology search and communicator init produced, i.e. every input that
// ncclTopoTuneModel and the enqueue-time cost fill read. Given these, model.h reproduces NCCL exactly.
#pragma once

#include <cstdint>

#include "features/features.h"

namespace dynamiccl::model {

// NCCL's path types (graph/topo.h PATH_*); the order matters: a smaller value is a closer path.
enum class PathType : int8_t {
  Loc = 0, Nvl = 1, Nvb = 2, C2c = 3, Pix = 4, Pxb = 5, P2c = 6, Pxn = 7, Phb = 8, Sys = 9, Net = 10
};

// NCCL's tree search patterns (graph.h NCCL_TOPO_PATTERN_*) that can win the tree search.
enum class TreePattern : int8_t { Balanced = 1, Split = 2, Tree = 3 };

enum class CpuVendor : int8_t { Intel, Amd, Zhaoxin, Mixed };  // Mixed: ranks disagree
enum class CpuArch : int8_t { X86, Power, Arm };

// One search pattern's result after NCCL's cross-rank reduction (min of nChannels/bw, max of types).
struct NcclGraph {
  int nChannels = 0;      // search channels (after the search's own duplication), not comm channels
  float bwIntra = 0.0f;   // GB/s per channel inside a node
  float bwInter = 0.0f;   // GB/s per channel across nodes
  PathType typeIntra = PathType::Nvl;
  PathType typeInter = PathType::Pix;
  float latencyInter = 0.0f;  // us, the net plugin's reported latency (0 for IB/most plugins)
  bool sameChannels = true;
};

// Everything NCCL's model reads from the communicator. Defaults describe NCCL's defaults
// (no NCCL_* environment overrides).
struct NcclGraphs {
  // The five searches; NCCL maps algorithms onto them (see graphFor()).
  NcclGraph tree, ring, collNetDirect, collNetChain, nvls;

  int nRanks = 0;
  int nNodes = 0;
  int localRanks = 0;     // ranks on this rank's node (comm->localRanks); 0 = nRanks / nNodes
  int maxLocalRanks = 0;  // most ranks on any node; 0 = nRanks / nNodes
  int nChannels = 0;      // comm->nChannels: ring/tree channels after connect-time duplication
  int nvlsChannels = 0;   // comm->nvlsChannels (16 on sm90; 24/32 on sm100); 0 without NVLS
  int minCompCap = 90;
  int maxCompCap = 90;
  CpuVendor cpuVendor = CpuVendor::Intel;
  CpuArch cpuArch = CpuArch::X86;
  TreePattern maxTreePattern = TreePattern::Balanced;  // max over ranks of the tree search pattern

  bool nvlsSupport = false;    // comm->nvlsSupport (NVSwitch multicast); forced off if nvls.nChannels == 0
  bool collNetEnable = false;  // comm->config.collnetEnable; forced off if collNetChain.nChannels == 0
  int collNetHeads = 0;        // comm->collNetHeadsNum (= collnetDirect nHeads)
  bool collNetAllGather = false;      // the CollNet plugin implements iallgather
  bool collNetReduceScatter = false;  // the CollNet plugin implements ireducescatter
  bool nvSwitch = false;       // the node has an NVSwitch (nvsCount > 0); CollNetDirect needs it
  bool netDeviceOffload = false;  // network device offload (not host): PAT is off

  // NCCL environment knobs the model reads (NCCL defaults shown).
  int patEnable = 2;            // NCCL_PAT_ENABLE: 0 off, 1 on, 2 auto
  int64_t netOverhead_ns = -2;  // NCCL_NET_OVERHEAD; -2 = CPU-dependent default
  int nThreads = -2;            // NCCL_NTHREADS
  int ll128NThreads = -2;       // NCCL_LL128_NTHREADS
  bool ll128C2c = true;         // NCCL_LL128_C2C
  // NCCL_PROTO / NCCL_ALGO as parsed enable matrices: [coll][proto] (LL128: 2 = auto), [coll][algo].
  int protoEnable[kNumCollectives][kNumProtos] = {{1, 2, 1}, {1, 2, 1}, {1, 2, 1}, {1, 2, 1}, {1, 2, 1}};
  int algoEnable[kNumCollectives][kNumAlgos] = {{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1},
                                                {1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1},
                                                {1, 1, 1, 1, 1, 1, 1}};

  // The graph NCCL's model uses for an algorithm (init.cc: PAT uses the tree graph, NVLS_TREE the NVLS one).
  const NcclGraph& graphFor(Algo a) const;
  int ppnLocalRanks() const { return localRanks > 0 ? localRanks : (nNodes > 0 ? nRanks / nNodes : 0); }
  int ppnMaxLocalRanks() const { return maxLocalRanks > 0 ? maxLocalRanks : ppnLocalRanks(); }
  // Rejects shapes NCCL could not have produced (nRanks < 1, nNodes not dividing sensibly, ...).
  Status validate() const;
};

}  // namespace dynamiccl::model
