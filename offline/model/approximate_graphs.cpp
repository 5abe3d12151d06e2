// approximateGraphs: a model of NCCL 2.28.9's topology search (graph/search.cc ncclTopoCompute)
// and communicator init (init.cc, connect.cc, transport/nvls.cc) good enough for our presets.
// NCCL searches real link graphs; we reduce a node to per-GPU NVLink/PCIe bandwidth and NIC
// bandwidth and count how many channels of each candidate speed those links carry. Every
// assumption is marked ASSUMPTION where it is made. Exact reproduction needs NCCL's GRAPH log.
#include <algorithm>
#include <cmath>
#include <functional>
#include <span>

#include "offline/model/model.h"
#include "offline/model/nccl_consts.h"

namespace dynamiccl::model {

namespace {

// search.cc per-channel speed candidates (GB/s), by compute capability and intra/inter search.
constexpr float kSpeedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr float kSpeedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                 7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr float kSm90SpeedIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr float kSm90SpeedInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                     15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr float kSm100SpeedIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr float kSm100SpeedInter[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                      17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

std::span<const float> speeds(int cc, bool inter) {
  if (cc >= 100) return inter ? std::span<const float>(kSm100SpeedInter) : std::span<const float>(kSm100SpeedIntra);
  if (cc >= 90) return inter ? std::span<const float>(kSm90SpeedInter) : std::span<const float>(kSm90SpeedIntra);
  return inter ? std::span<const float>(kSpeedInter) : std::span<const float>(kSpeedIntra);
}

// NCCL's per-link NVLink bandwidth (topo.h SMxx_NVLINK_BW), GB/s.
double ncclNvlinkLinkBw(int cc) {
  if (cc >= 100) return 40.1;
  if (cc >= 90) return 20.6;
  if (cc == 86 || cc == 87 || cc == 89) return 12.0;
  if (cc >= 70) return 20.0;
  return 18.0;
}

// ASSUMPTION: NCCL counts NVLink links; we derive the count from the GPU's unidirectional NVLink
// bandwidth and the generation's real per-link rate (NVLink5 50 GB/s, NVLink2-4 25 GB/s).
int nvlinkLinks(const Topology& t) {
  const double perLink = t.computeCap >= 100 ? 50.0 : 25.0;
  return std::max(1, static_cast<int>(std::lround(t.nvlinkBwPerGpu_GBps / perLink)));
}

struct Found {
  int nChannels = 0;
  float bw = 0.0f;
};

// ncclTopoCompute's pass 1 (from the fastest feasible speed down, keeping the best
// nChannels*bw; stop when optimal or the next speed is under half the best) and ncclTopoDupChannels.
// ASSUMPTION: capacity(s) (how many channels of speed s the links carry) stands in for NCCL's
// path-by-path search; sameChannels/crossNic/type escalation are not modelled.
Found searchPass1(std::span<const float> sp, float maxBw, float totalBw, int minChannels, int maxChannels,
                  const std::function<int(float)>& capacity) {
  size_t i = 0;
  while ((sp[i] > maxBw || sp[i] * minChannels > totalBw) && i + 1 < sp.size()) ++i;
  Found best;
  for (; i < sp.size(); ++i) {
    const float s = sp[i];
    if (best.nChannels > 0 && s / best.bw <= .49f) break;
    const int n = std::min(capacity(s), maxChannels);
    if (n >= std::max(1, minChannels) && n * s > best.nChannels * best.bw) best = {n, s};
    if (best.nChannels == maxChannels || best.nChannels * best.bw >= totalBw) break;
  }
  if (best.nChannels == 0) best = {1, 0.1f};  // NCCL's "simple order" fallback
  return best;
}

// ncclTopoDupChannels: fast channels are split in two, except sm>80 medium-speed many-channel graphs.
Found dupChannels(Found f, int cc, int maxChannels) {
  if (f.bw < 25.0f) return f;
  if (cc > 80 && f.bw < 50.0f && f.nChannels > 4) return f;
  const int dup = std::min(f.nChannels * 2, maxChannels);
  const int div = (dup + f.nChannels - 1) / f.nChannels;
  return {dup, f.bw / div};
}

// Pass 2 for rings: raise the speed while the links still carry the same channel count.
Found raiseRingSpeed(Found f, std::span<const float> sp, const std::function<int(float)>& capacity) {
  size_t i = 0;
  while (i + 1 < sp.size() && sp[i] > f.bw) ++i;
  while (i > 0 && capacity(sp[i - 1]) >= f.nChannels) f.bw = sp[--i];
  return f;
}

}  // namespace

Expected<NcclGraphs> approximateGraphs(const Topology& t) {
  if (t.nNodes < 1 || t.gpusPerNode < 1) return makeError("approximateGraphs: need nNodes >= 1 and gpusPerNode >= 1");
  if (t.nvlink && t.nvlinkBwPerGpu_GBps <= 0) return makeError("approximateGraphs: NVLink bandwidth must be > 0");
  if (!t.nvlink && t.pcieBw_GBps <= 0) return makeError("approximateGraphs: PCIe bandwidth must be > 0");
  const int cc = t.computeCap;
  const int nRanks = t.nRanks();

  // ASSUMPTION: a multi-node NVLink domain (GB200 NVL72, MNNVL) is one NCCL "node": NCCL fuses
  // the clique's topology, so nNodes counts NVLink domains and NICs add up across the domain.
  int ng = t.gpusPerNode;
  int nicsPerNode = t.nicsPerNode;
  if (t.nvlink && t.nvlDomainGpus > t.gpusPerNode) {
    ng = std::min(t.nvlDomainGpus, nRanks);
    nicsPerNode = t.nicsPerNode * (ng / t.gpusPerNode);
  }
  const int nNodes = (nRanks + ng - 1) / ng;
  const bool inter = nNodes > 1;

  NcclGraphs g;
  g.nRanks = nRanks;
  g.nNodes = nNodes;
  g.localRanks = g.maxLocalRanks = std::min(ng, nRanks);
  g.minCompCap = g.maxCompCap = cc;
  // ASSUMPTION: x86 unless AMD; Grace (Arm) behaves like Intel in both CPU-dependent rules
  // (LL cap row 0, 1 us net overhead), so the arch does not need to be known.
  g.cpuVendor = t.amdCpu ? CpuVendor::Amd : CpuVendor::Intel;
  g.cpuArch = CpuArch::X86;
  g.nvSwitch = t.nvlink && t.nvswitch;
  // ASSUMPTION: the balanced tree is found whenever a node has two GPUs (NCCL turns it into a
  // plain tree for one GPU per node, search.cc:1041).
  g.maxTreePattern = ng == 1 ? TreePattern::Tree : TreePattern::Balanced;

  // Per-GPU bandwidth inside the node, in NCCL's units.
  const double gpuTotalBw = t.nvlink ? nvlinkLinks(t) * ncclNvlinkLinkBw(cc) : t.pcieBw_GBps;
  // ASSUMPTION: without an NVSwitch the NVLinks form an even full mesh (GH200 quads: 6 links per pair).
  const double pairBw = (t.nvlink && !t.nvswitch && ng > 1) ? gpuTotalBw / (ng - 1) : gpuTotalBw;
  // ASSUMPTION: the GPU-NIC PCIe path is never slower than the NIC on NVLink systems (DGX/HGX put
  // one NIC per GPU on its switch); on PCIe-only systems it is limited by the GPU's PCIe link.
  const double nicBw = t.ncclNicBw();
  const double nicPathBw = t.nvlink ? nicBw : std::min(nicBw, t.pcieBw_GBps);

  // Path types. ASSUMPTION: PCIe-only GPUs meet at the host bridge (PHB) for two GPUs and across
  // sockets (SYS) for more (as the L40S nodes in shared/data); NICs sit on the GPU's PCIe switch
  // (PIX) on NVLink systems and behind the host bridge (PHB) otherwise. With one node NCCL keeps its
  // initial PIX. A Grace NIC (GH200) is reached over C2C: NCCL 2.27+ calls that P2C (LL128 stays on),
  // earlier releases had no C2C path type and saw PHB (LL128 off across nodes: tuning.cc's typeInter rule).
  const PathType typeIntra = ng == 1 ? PathType::Loc : t.nvlink ? PathType::Nvl : ng <= 2 ? PathType::Phb : PathType::Sys;
  const PathType nicPath = t.nicViaCpu ? (t.ncclVersion >= 22700 ? PathType::P2c : PathType::Phb)
                                       : t.nvlink ? PathType::Pix : PathType::Phb;
  const PathType typeInter = !inter ? PathType::Pix : nicPath;

  // Ring search.
  const int maxRingChannels = nccl::kMaxChannels / 2;
  std::function<int(float)> ringCapacity;
  float maxBw = 0.0f, totalBw = 0.0f;
  if (!inter) {
    ringCapacity = [&](float s) { return s > pairBw ? 0 : static_cast<int>(gpuTotalBw / s + 1e-9); };
    maxBw = static_cast<float>(ng == 1 ? 5000.0 : pairBw);  // LOC_BW for a lone GPU
    totalBw = static_cast<float>(ng == 1 ? 5000.0 : gpuTotalBw);
  } else {
    // Each ring channel enters and leaves the node through one NIC and crosses every GPU's links.
    ringCapacity = [&](float s) {
      if (s > nicPathBw) return 0;
      const int byNic = nicsPerNode * static_cast<int>(nicBw / s + 1e-9);
      const int byGpu = ng > 1 ? static_cast<int>(gpuTotalBw / s + 1e-9) : byNic;
      return std::min(byNic, byGpu);
    };
    maxBw = static_cast<float>(nicPathBw);
    totalBw = static_cast<float>(ng > 1 ? gpuTotalBw : nicsPerNode * nicBw);
  }
  const auto ringSpeeds = speeds(cc, inter);
  Found ring = searchPass1(ringSpeeds, maxBw, totalBw, 1, maxRingChannels, ringCapacity);
  ring = dupChannels(ring, cc, maxRingChannels);
  ring = raiseRingSpeed(ring, ringSpeeds, ringCapacity);
  g.ring = {ring.nChannels, ring.bw, ring.bw, typeIntra, typeInter, 0.0f, true};
  // ASSUMPTION: net latencyInter = 0 (IB and most net plugins report none) and sameChannels = 1.

  // Tree search: NCCL forces the ring's channel count; on one node the chains run at ring speed.
  // ASSUMPTION: across nodes the tree keeps the ring's NIC speed and pass 2 raises bwIntra up to
  // (not reaching) twice bwInter while NVLink carries it (search.cc "increase bwIntra for trees").
  g.tree = g.ring;
  if (inter && ng > 1) {
    const auto intraSpeeds = speeds(cc, true);
    const double treeTotal = gpuTotalBw * ng / (ng - 1);
    for (float s : intraSpeeds) {
      if (s <= g.tree.bwIntra) break;
      if (g.tree.bwIntra < 2 * g.tree.bwInter && s < 2 * g.tree.bwInter && s <= pairBw && g.tree.nChannels * s <= treeTotal) {
        g.tree.bwIntra = s;
        break;
      }
    }
  }

  // NVLS: NVSwitch multicast on Hopper+ with at least two GPUs (nvls.cc, search.cc:1036).
  const bool nvls = t.nvlsSupport && t.nvlink && t.nvswitch && cc >= 90 && ng >= 2;
  if (nvls) {
    // One channel per GPU; each GPU's link carries every channel once and its own head's twice.
    // ASSUMPTION: across nodes every head has a NIC (one NIC per GPU).
    const int n = std::min(ng, nccl::kMaxNvlsArity);
    const double linkLimit = gpuTotalBw / (n + 1);
    const double nicLimit = inter ? nicBw : 1e30;
    const auto sp = speeds(cc, inter);
    float intraS = sp.back();
    for (float c : sp) {
      if (c <= linkLimit && c <= nicLimit) { intraS = c; break; }
    }
    // Pass 2 raises bwInter alone while below twice bwIntra; one node has no NIC to limit it.
    float interS = intraS;
    for (float c : sp) {
      if (c <= nicLimit && c < 2 * intraS) { interS = std::max(intraS, c); break; }
    }
    g.nvls = {n, intraS, interS, PathType::Nvl, PathType::Pix, 0.0f, false};
    g.nvlsSupport = true;
    // transport/nvls.cc: 16 channels on sm90; Blackwell 24 inside one NVLink domain, 32 across.
    g.nvlsChannels = cc >= 100 ? (inter ? 32 : 24) : 16;
  }

  // CollNet (SHARP). ASSUMPTION: only across nodes, at most 8 local GPUs, the chain graph mirrors
  // the tree, direct uses one head per NIC, and the plugin offers no AllGather/ReduceScatter.
  if (t.collnetSupport && inter && ng <= nccl::kMaxDirectArity + 1) {
    g.collNetEnable = true;
    g.collNetChain = g.tree;
    const int heads = std::max(1, std::min({ng, nccl::kMaxDirectArity + 1, std::max(1, nicsPerNode)}));
    g.collNetDirect = {heads, g.tree.bwIntra, g.tree.bwInter, typeIntra, typeInter, 0.0f, true};
    g.collNetHeads = heads;
  }

  // comm->nChannels (connect.cc): search channels doubled; +50% for CollNet chains with PPN > 1;
  // doubled again on Hopper+ multi-node when ring channels are fast and few.
  int nCh = std::min(nccl::kMaxChannels, std::min(g.ring.nChannels, g.tree.nChannels) * 2);
  if (g.collNetEnable && g.collNetChain.bwIntra > g.collNetChain.bwInter && nRanks > nNodes)
    nCh = std::min(nccl::kMaxChannels, nCh + nCh / 2);
  if (cc >= 90 && inter && g.ring.bwIntra > 45.0f && nCh < 16) nCh = 2 * nCh;
  g.nChannels = nCh;
  return g;
}

}  // namespace dynamiccl::model
