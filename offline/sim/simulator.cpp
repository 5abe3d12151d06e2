// The simulator's time model. time = fixed overheads + hop latencies (latency part)
//                                   + bytes / achieved bus bandwidth + pipeline costs (bandwidth part).
// Each assumption is stated on the line that makes it.
#include "offline/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dynamiccl::sim {

namespace {

constexpr int kLL = 0, kLL128 = 1, kSimple = 2;

// NCCL 2.28.9's latency constants (tuning.cc) serve as priors; SimParams scales them per system.
constexpr double kBaseRing[3] = {6.6, 14.0, 8.4};
constexpr double kBaseTree[3] = {6.8, 14.0, 8.4};
constexpr double kBasePat = 8.0;
constexpr double kNvlRing[3] = {0.6, 1.9, 3.4}, kNvlTree[3] = {0.6, 1.25, 4.0};
constexpr double kPciRing[3] = {1.0, 2.5, 5.7}, kPciTree[3] = {1.0, 1.9, 4.0};
constexpr double kNetRing[3] = {2.7, 4.0, 14.0}, kNetTree[3] = {5.0, 8.5, 14.0};

// Payload per byte on the wire: LL's 8-byte lines carry 4 data bytes, LL128's 128-byte lines 120.
constexpr double kPayload[3] = {0.5, 120.0 / 128.0, 1.0};
// One channel (one thread block) copies at most this much, GB/s, before generation scaling;
// LL is flag-polling bound, LL128 and Simple are copy bound.
constexpr double kChanCap_GBps[3] = {6.0, 20.0, 24.0};

double softMin(double a, double b, double sharpness) {
  // Saturation: the achieved rate bends towards the smaller limit instead of a hard corner.
  return std::pow(std::pow(a, -sharpness) + std::pow(b, -sharpness), -1.0 / sharpness);
}

double log2ceil(int n) { return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n))); }

// SHARP aggregation: up and down the switch tree's levels, about log_32 of the nodes (radix-64
// switches with half the ports down), each a network hop plus the switch's reduction.
double sharpRoundTrip_us(int nDom, double alphaNet_us, double sharpHop_us) {
  const double levels = std::max(1.0, std::ceil(std::log(double(nDom)) / std::log(32.0)));
  return 2 * levels * (alphaNet_us + sharpHop_us);
}

// Newer GPUs copy faster per thread block (more SMs' worth of bandwidth per block).
double generationScale(int cc) { return cc >= 100 ? 1.6 : cc >= 90 ? 1.25 : 1.0; }

}  // namespace

NoiseSource::Factors NoiseSource::next(const SimParams& p, bool multiNode) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Factors f;
  // Lognormal jitter: timings are positive and right-skewed.
  f.latency = std::exp(p.noiseSigma * normal(rng_));
  f.bandwidth = std::exp(p.noiseSigma * normal(rng_));
  if (episodeLeft_ == 0 && uniform(rng_) < p.congestionProb) episodeLeft_ = p.congestionLength;
  if (episodeLeft_ > 0) {
    --episodeLeft_;
    // Congestion comes from other jobs on the shared network: single-node runs are spared.
    if (multiNode) f.bandwidth *= p.congestionSlowdown;
  }
  return f;
}

Simulator::Simulator(model::Topology topo, SimParams params) : topo_(std::move(topo)), params_(params) {
  const int nRanks = std::max(1, topo_.nRanks());
  // A multi-node NVLink domain (NVL72) is one NVLink island: its trays talk over NVLink.
  domainGpus_ = topo_.nvlink && topo_.nvlDomainGpus > topo_.gpusPerNode ? std::min(topo_.nvlDomainGpus, nRanks)
                                                                      : std::min(topo_.gpusPerNode, nRanks);
  domainGpus_ = std::max(1, domainGpus_);
  nDomains_ = (nRanks + domainGpus_ - 1) / domainGpus_;
  // A GPU only drives NICs on its own PCIe switch: fewer ranks per node than NICs leave NICs idle.
  const int nicsPerDomain = topo_.nicsPerNode * std::max(1, domainGpus_ / std::max(1, topo_.gpusPerNode));
  usableNics_ = std::max(1, std::min(nicsPerDomain, domainGpus_));
}

bool Simulator::feasible(Collective coll, const Config& c) const {
  if (c.algo == Algo::Default || c.proto == Proto::Default) return false;
  if (c.nChannels < 0 || c.nChannels > 64) return false;
  const bool reduce = coll == Collective::AllReduce;
  const bool agrs = coll == Collective::AllGather || coll == Collective::ReduceScatter;
  const bool nvlsHw = topo_.nvlink && topo_.nvswitch && topo_.nvlsSupport && topo_.computeCap >= 90 && domainGpus_ >= 2;
  switch (c.algo) {
    case Algo::Ring: return true;
    case Algo::Tree: return reduce;  // NCCL implements Tree for AllReduce only
    // Across NVLink domains NVLS needs SHARP for the inter-node part (NCCL: NVLS + CollNet); we
    // simulate that for AllReduce only.
    case Algo::Nvls:
      return nvlsHw && c.proto == Proto::Simple && (nDomains_ == 1 ? (reduce || agrs) : topo_.collnetSupport && reduce);
    case Algo::NvlsTree: return nvlsHw && nDomains_ > 1 && reduce && c.proto == Proto::Simple;
    case Algo::Pat: return agrs && domainGpus_ == 1 && topo_.nRanks() > 1 && c.proto == Proto::Simple;
    // SHARP only helps across nodes; we simulate AllReduce (NCCL's CollNet AllGather/ReduceScatter
    // also need a plugin with those operations and one NIC per GPU).
    case Algo::CollNetDirect:
    case Algo::CollNetChain: return topo_.collnetSupport && nDomains_ > 1 && reduce && c.proto == Proto::Simple;
    default: return false;
  }
}

int Simulator::defaultChannels(Algo a, Proto, uint64_t nBytes) const {
  // Generic rule: NVLink nodes run 16 ring channels (24/32 NVLS on Blackwell), PCIe nodes 2;
  // at least 16 KiB per channel, as NCCL's scheduler enforces.
  int maxCh = topo_.nvlink ? 16 : 2;
  if (a == Algo::Nvls || a == Algo::NvlsTree) maxCh = topo_.computeCap >= 100 ? 24 : 16;
  const int bySize = static_cast<int>(std::max<uint64_t>(1, nBytes / (16 * 1024)));
  return std::clamp(bySize, 1, maxCh);
}

std::vector<Config> Simulator::candidateConfigs(Collective coll) const {
  std::vector<Config> out;
  for (Algo a : {Algo::Tree, Algo::Ring, Algo::CollNetDirect, Algo::CollNetChain, Algo::Nvls, Algo::NvlsTree, Algo::Pat})
    for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple})
      for (int ch : {0, 1, 2, 4, 8, 16, 32}) {
        const Config c{a, p, ch, 0};
        if (feasible(coll, c)) out.push_back(c);
      }
  return out;
}

Simulator::Parts Simulator::parts(Collective coll, uint64_t nBytes, const Config& c) const {
  const SimParams& k = params_;
  const int n = std::max(1, topo_.nRanks());
  const int ppn = domainGpus_;
  const int nDom = nDomains_;
  const int p = static_cast<int>(c.proto);
  const double S = static_cast<double>(std::max<uint64_t>(nBytes, 1));
  const int nCh = c.nChannels > 0 ? c.nChannels : defaultChannels(c.algo, c.proto, nBytes);
  const double chunk = static_cast<double>(c.chunkBytes > 0 ? c.chunkBytes : model::defaultChunkBytes(c.proto));

  // Hop latencies, NCCL's constants scaled per system (PCIe hops when there is no NVLink).
  const bool tree = c.algo == Algo::Tree;
  const double* intra = topo_.nvlink ? (tree ? kNvlTree : kNvlRing) : (tree ? kPciTree : kPciRing);
  const double alphaIntra = k.intraHopScale * intra[p];
  // Far-scale penalty (SimParams::farNodes): 1 on one node, up to farFactor well beyond farNodes; a
  // logistic in log2(nodes) with slope 2, i.e. half of it at farNodes.
  const double far = nDom > 1 ? 1.0 + (k.farFactor - 1.0) / (1.0 + std::pow(k.farNodes / nDom, 2.0 / std::log(2.0))) : 1.0;
  const double alphaNet = k.interHopScale * (tree ? kNetTree[p] : kNetRing[p]) * far;

  // Link limits in GB/s (bus bandwidth per rank).
  double intraLink = (topo_.nvlink ? topo_.nvlinkBwPerGpu_GBps : topo_.pcieBw_GBps) * k.intraBwEff;
  // PCIe-only GPUs beyond a pair cross the CPU interconnect (SYS), which costs about a fifth.
  if (!topo_.nvlink && ppn > 2) intraLink *= 0.8;
  const bool ar = coll == Collective::AllReduce;
  const bool rootedChain = coll == Collective::Broadcast || coll == Collective::Reduce;
  // A channel's data per step is S / (segDivisor * nCh) before chunking: a ring step carries one
  // rank's share, a chain (tree, rooted ring, CollNet chain) the whole buffer, NVLS and CollNet
  // Direct one head's share.
  const double segDivisor = c.algo == Algo::Ring ? (rootedChain ? 1.0 : n)
                          : c.algo == Algo::Tree || c.algo == Algo::CollNetChain ? 1.0
                          : c.algo == Algo::Pat ? n
                                                : ppn;
  const double seg = S / (segDivisor * nCh);
  // LL's network rate: NCCL stages it through host memory; rings lose more (ringLlNetEff).
  const double llNet = p == kLL ? k.netLlEff * (c.algo == Algo::Ring ? k.ringLlNetEff : 1.0) : 1.0;
  // Each ring/tree channel crosses a node boundary through one NIC: a domain's NICs share the
  // inter-node traffic, so NVLink:NIC imbalance shows as the NIC side capping the bus bandwidth.
  const double netLink = usableNics_ * topo_.nicBw_GBps * k.interBwEff * llNet / far;
  const double chanCap = kChanCap_GBps[p] * k.chanCapScale * generationScale(topo_.computeCap);
  double payload = kPayload[p] * (p == kLL ? k.llEff : p == kLL128 ? k.ll128Eff : 1.0);

  double latency_us = 0, busFactor = 1, link = intraLink;
  int steps = 1;          // dependent hops in one round (ring) or depth of the chain (pipelines)
  bool chain = false;     // chain pipelines (tree, broadcast, reduce) pay fill/drain
  switch (c.algo) {
    case Algo::Ring: {
      steps = ar ? 2 * (n - 1) : n - 1;
      const int nInter = nDom > 1 ? (ar ? 2 * (nDom - 1) : nDom - 1) : 0;
      latency_us = k.baseScale * kBaseRing[p] + (steps - nInter) * alphaIntra + nInter * alphaNet;
      busFactor = ar ? 2.0 * (n - 1) / n : rootedChain ? 1.0 : double(n - 1) / n;
      link = nDom > 1 ? std::min(intraLink, netLink) : intraLink;
      chain = rootedChain;
      break;
    }
    case Algo::Tree: {
      const int depthIntra = ppn - 1;
      const double depthInter = log2ceil(nDom);
      steps = std::max(1, static_cast<int>(2 * (depthIntra + depthInter)));
      latency_us = k.baseScale * kBaseTree[p] + 2 * (depthIntra * alphaIntra + depthInter * alphaNet);
      // Data goes up (reduce) and down (broadcast) the tree; links are full duplex, so each
      // direction carries the whole buffer once; treeEff absorbs the chain's imperfect overlap and
      // treeLevelEff its loss per network level beyond the first.
      busFactor = 1.0 / (k.treeEff * std::pow(k.treeLevelEff, std::max(0.0, log2ceil(nDom) - 1.0)));
      // NCCL's double binary tree across nodes: each tree carries half the buffer. With two nodes
      // each node is one tree's root and the other's leaf, so its NICs send S per direction; with
      // more, a node is interior in one tree and sends to its parent and two children: 2S.
      link = nDom > 1 ? std::min(intraLink, netLink / (nDom == 2 ? 1.0 : 2.0)) : intraLink;
      chain = true;
      break;
    }
    case Algo::Nvls:
    case Algo::NvlsTree: {
      // The switch reduces/multicasts: two NVLink hops per round instead of 2(n-1).
      steps = 2;
      const double depthInter = c.algo == Algo::NvlsTree ? log2ceil(nDom) : 0.0;
      latency_us = 2 * alphaIntra + k.nvlsLat_us + 2 * depthInter * alphaNet;
      busFactor = ar ? 2.0 * (n - 1) / n : double(n - 1) / n;
      link = intraLink * (ar ? k.nvlsGain : 1.0);
      if (nDom > 1 && c.algo == Algo::Nvls) {
        // NVLS + SHARP: the switches reduce across nodes, so a node's NICs carry S each way (in bus
        // terms, busFactor x the NICs' rate), through the switch tree's levels and back.
        latency_us += sharpRoundTrip_us(nDom, alphaNet, k.sharpHop_us);
        link = std::min(link, netLink * k.sharpEff * busFactor);
      } else if (nDom > 1) {
        link = std::min(link, netLink);
      }
      break;
    }
    case Algo::Pat: {
      // Parallel aggregated trees: log2(n) network rounds; NCCL rates its bandwidth at 3/4 of ring.
      steps = std::max(1, static_cast<int>(log2ceil(n)));
      latency_us = k.baseScale * kBasePat + steps * alphaNet;
      busFactor = double(n - 1) / n;
      link = netLink * 0.75;
      break;
    }
    case Algo::CollNetDirect:
    case Algo::CollNetChain: {
      // The switch tree reduces and multicasts instead of ring's 2(nDom-1) network hops.
      const bool direct = c.algo == Algo::CollNetDirect;
      // Direct: every GPU scatters to the node's NIC heads over NVLink (one hop each way); Chain:
      // a chain through the node's GPUs to one head, as tree's intra-node part.
      steps = direct ? 2 : std::max(1, 2 * (ppn - 1)) + 2;
      latency_us = (direct ? 2 * alphaIntra : 2 * (ppn - 1) * alphaIntra) + sharpRoundTrip_us(nDom, alphaNet, k.sharpHop_us);
      // Bandwidth, in algorithm terms: a node's NICs carry S up and S down (full duplex); inside
      // the node Direct moves 2(ppn-1)/ppn S per GPU (reduce-scatter to heads, gather back) and
      // Chain moves S each way over each chain link.
      const double sharpLink = netLink * k.sharpEff;
      const double intraAlg = direct ? intraLink / std::max(1e-9, 2.0 * (ppn - 1) / ppn) : intraLink;
      link = ppn > 1 ? std::min(intraAlg, sharpLink) : sharpLink;
      busFactor = 1.0;
      chain = !direct;
      break;
    }
    default:
      return {-1, 0};
  }
  if (n == 1) return {k.launch_us, 0};

  const bool nvls = c.algo == Algo::Nvls || c.algo == Algo::NvlsTree;
  const double busBw_GBps =
      softMin(nCh * chanCap * (nvls ? k.nvlsChanScale : 1.0) * payload, link * payload, k.satSharpness);
  const double bw_us = busFactor * S / (busBw_GBps * 1e3);
  // Pipelining: a channel's data per step is cut into chunks; each extra chunk costs a step's
  // synchronisation (flag + fence for Simple, cheaper polling for LL/LL128).
  const double chunks = std::max(1.0, std::ceil(seg / chunk));
  const double stepCost_us = k.stepOverhead_us * (p == kSimple ? 1.0 : 0.25);
  const double extraSteps = chain ? chunks - 1 : steps * (chunks - 1);
  double pipeline_us = extraSteps * stepCost_us;
  // Chains fill and drain: the first chunk crosses every level before the last level is busy, each
  // level at its own link's per-channel rate (NVLink/PCIe levels inside a node, NIC levels between).
  if (chain) {
    const double first = std::min(chunk, seg);
    const int netLevels = (c.algo == Algo::Tree && nDom > 1) ? static_cast<int>(2 * log2ceil(nDom))
                        : c.algo == Algo::CollNetChain                ? 2
                                                                       : 0;
    const int intraLevels = std::max(0, steps - 1 - netLevels);
    const double intraBus_GBps = nDom > 1 ? softMin(nCh * chanCap * payload, intraLink * payload, k.satSharpness)
                                          : busBw_GBps;
    // A network level moves the first chunk at the NICs' per-channel rate: the tree's steady-state
    // halving (an interior node feeds its parent and two children) does not apply to one chunk.
    const double netBus_GBps = nDom > 1 ? softMin(nCh * chanCap * payload, netLink * payload, k.satSharpness) : busBw_GBps;
    pipeline_us += intraLevels * first / (intraBus_GBps / nCh * 1e3) + netLevels * first / (netBus_GBps / nCh * 1e3);
  }

  // Rendezvous: a network send larger than the transport's eager limit waits for a handshake on
  // every network hop of the round (ring: 2(nDom-1) or nDom-1 crossings; tree: up and down its
  // depth). The message is one channel's step on the wire (LL/LL128 lines included); a smooth
  // step in log2(size) keeps the fit differentiable around the threshold.
  if (nDom > 1 && k.rdzv_us > 0) {
    const double wire = std::min(seg, chunk) / kPayload[p];
    const double netHops = c.algo == Algo::Tree ? 2 * log2ceil(nDom)
                         : c.algo == Algo::Ring ? (ar ? 2.0 * (nDom - 1) : double(nDom - 1))
                                                : 2 * log2ceil(nDom);
    const double x = std::log2(wire / (k.rdzvThreshold_KiB * 1024.0));
    latency_us += netHops * k.rdzv_us / (1.0 + std::exp(-4.0 * x));
  }

  // Step floor (SimParams::netStepFloor_us): every chunk of every ring step crosses the slowest
  // hop, a network send, which cannot complete faster than the floor.
  double bandwidth_us = bw_us + pipeline_us;
  if (nDom > 1 && c.algo == Algo::Ring && p == kSimple && k.netStepFloor_us > 0)
    bandwidth_us = std::max(bandwidth_us, steps * chunks * k.netStepFloor_us);

  const double fixed_us = k.launch_us + k.syncPerLevel_us * log2ceil(n) + k.chanCost_us * nCh;
  return {fixed_us + latency_us, bandwidth_us};
}

double Simulator::time_us(Collective coll, uint64_t nBytes, const Config& c) const {
  if (!feasible(coll, c)) return -1.0;
  const Parts t = parts(coll, nBytes, c);
  return t.latency_us < 0 ? -1.0 : t.latency_us + t.bandwidth_us;
}

double Simulator::sample_us(Collective coll, uint64_t nBytes, const Config& c, NoiseSource& noise) const {
  if (!feasible(coll, c)) return -1.0;
  const Parts t = parts(coll, nBytes, c);
  if (t.latency_us < 0) return -1.0;
  const NoiseSource::Factors f = noise.next(params_, nDomains_ > 1);
  return t.latency_us * f.latency + t.bandwidth_us * f.bandwidth;
}

}  // namespace dynamiccl::sim
