// NcclModel::build: ncclTopoTuneModel (2.28.9 tuning.cc:230-560) rebuilt from its formulas.
// Arithmetic deliberately keeps NCCL's float/double mix (comm->latencies/bandwidths are float,
// some refinements are computed in double) so that tables match NCCL bit for bit.
#include <algorithm>
#include <limits>

#include "offline/model/model.h"
#include "offline/model/nccl_consts.h"

namespace dynamiccl::model {

namespace {

using namespace nccl;  // NCCL's indices

// NCCL's getNthreads: an env value if valid (multiple of a warp, clamped), else the default.
int threadsFrom(int env, int min, int max, int def) {
  if (env <= 0) return def;
  if (env % nccl::kWarpSize != 0) return max;
  return std::clamp(env, min, max);
}

int compCapIndex(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

// NCCL_PAT_ENABLE (tuning.cc ncclPatEnable): auto needs one GPU per node and a host-side network.
bool patEnabled(const NcclGraphs& g) {
  if (g.minCompCap < 60) return false;  // needs CUDA atomics
  if (g.patEnable != 2) return g.patEnable != 0;
  if (g.nNodes != g.nRanks) return false;
  return !g.netDeviceOffload;
}

// Network post overhead in us (NCCL_NET_OVERHEAD is in ns): 2 us on AMD x86, 1 us elsewhere.
float netOverhead_us(const NcclGraphs& g) {
  if (g.netOverhead_ns != -2) return static_cast<float>(g.netOverhead_ns * .001);
  if (g.cpuArch == CpuArch::X86 && g.cpuVendor == CpuVendor::Amd) return 2.0f;
  return 1.0f;
}

bool collNetAlgo(int a) { return a == kCollNetDirect || a == kCollNetChain; }

// Algorithms NCCL's model considers per collective (tuning.cc:273-282).
bool modelled(int coll, int a, int p) {
  if ((coll == kBroadcast || coll == kReduce) && a != kRing) return false;
  if ((coll == kReduceScatter || coll == kAllGather) && a != kPat && a != kRing && a != kNvls &&
      a != kCollNetDirect)
    return false;
  if (coll == kAllReduce && a == kPat) return false;
  if ((a == kNvls || a == kNvlsTree) && p != kSimple) return false;
  return true;
}

}  // namespace

Expected<NcclModel> NcclModel::build(const NcclGraphs& input, const ncclTunerConstants_v5_t* constants) {
  if (auto st = input.validate(); !st) return Error{st.error()};
  NcclModel m;
  m.g_ = input;
  NcclGraphs& g = m.g_;
  // init.cc:1189-1192: no CollNet chain graph disables CollNet; no NVLS graph disables NVLS;
  // tree and ring share a channel count.
  if (g.collNetChain.nChannels == 0) g.collNetEnable = false;
  if (g.nvls.nChannels == 0) g.nvlsSupport = false;
  if (!g.nvlsSupport) g.nvlsChannels = 0;
  g.tree.nChannels = g.ring.nChannels = std::min(g.tree.nChannels, g.ring.nChannels);
  if (constants != nullptr) m.k_ = *constants;
  else fillDefaultTunerConstants(&m.k_);

  const NcclGraph* graphs[kNumAlgos];
  for (int a = 0; a < kNumAlgos; ++a) graphs[a] = &g.graphFor(static_cast<Algo>(a));

  // Max threads per (algo, proto); entries NCCL leaves unset stay 0 (e.g. PAT).
  const int simpleDefault = (g.ring.bwIntra * g.ring.nChannels <= nccl::kPciBw) ? 256 : nccl::kSimpleMaxNThreads;
  m.maxThreads_[kRing][kSimple] = threadsFrom(g.nThreads, 2 * nccl::kWarpSize, nccl::kSimpleMaxNThreads, simpleDefault);
  m.maxThreads_[kTree][kSimple] =
      threadsFrom(g.nThreads, 2 * nccl::kWarpSize, nccl::kSimpleMaxNThreads, nccl::kSimpleMaxNThreads);
  for (int a : {kCollNetDirect, kCollNetChain, kNvls, kNvlsTree}) m.maxThreads_[a][kSimple] = nccl::kMaxNThreads;
  m.maxThreads_[kRing][kLL] = m.maxThreads_[kTree][kLL] =
      threadsFrom(g.nThreads, 2 * nccl::kWarpSize, nccl::kLLMaxNThreads, nccl::kLLMaxNThreads);
  m.maxThreads_[kRing][kLL128] = m.maxThreads_[kTree][kLL128] =
      threadsFrom(g.ll128NThreads, nccl::kLL128MaxNThreads / 4, nccl::kLL128MaxNThreads, nccl::kLL128MaxNThreads);

  // Thread thresholds: the work per thread below which NCCL sheds channels (tuning.cc:541-549).
  for (int a = 0; a < kNumAlgos; ++a) {
    m.threadThresholds_[a][kLL] = nccl::kLLThreadThreshold;
    m.threadThresholds_[a][kLL128] = nccl::kLL128ThreadThreshold;
    m.threadThresholds_[a][kSimple] = nccl::kSimpleThreadThreshold;
  }
  m.threadThresholds_[kRing][kLL] *= g.nRanks;
  m.threadThresholds_[kCollNetDirect][kSimple] = 512;
  m.threadThresholds_[kCollNetChain][kSimple] = 512;

  const int nNodes = g.nNodes;
  const int nRanks = g.nRanks;
  if (nRanks <= 1) return m;  // NCCL builds nothing more; the cost fill special-cases one rank

  ncclTunerConstants_v5_t& k = m.k_;
  const int cc = compCapIndex(g.minCompCap);
  const int scale = nNodes <= 2 ? nNodes - 1 : 2;
  // LL cap: one node looks at the GPU generation, multi-node at the CPU vendor.
  const int llRow = nNodes == 1 ? cc : (g.cpuVendor == CpuVendor::Amd || g.cpuVendor == CpuVendor::Mixed) ? 1 : 0;
  const double llMaxBw = k.llMaxBws[llRow][scale];
  const double perChMaxTreeBw = k.perChMaxTreeBws[cc][scale];
  const double perChMaxRingLL128Bw = k.perChMaxRingLL128Bws[cc][scale];
  const double perChMaxTreeLL128Bw = k.perChMaxTreeLL128Bws[cc][scale];
  const double perChMaxNVLSTreeBw = k.perChMaxNVLSTreeBws[cc][scale];
  // Power CPUs: Tree/Simple over PCI gets Ring's latency to favour Tree.
  if (g.cpuArch == CpuArch::Power) k.hwLatencies[kHwPci][kTree][kSimple] = k.hwLatencies[kHwPci][kRing][kSimple];
  const float ppn = static_cast<float>(nRanks) / nNodes;
  const int ppnInt = nRanks / nNodes;  // NCCL's integer nRanks/nNodes in latency formulas

  int intraHw[kNumAlgos], hw[kNumAlgos];
  for (int a = 0; a < kNumAlgos; ++a) {
    intraHw[a] = graphs[a]->typeIntra == PathType::Nvl ? kHwNvlink : kHwPci;
    hw[a] = nNodes == 1 ? intraHw[a] : kHwNet;
  }
  const bool pat = patEnabled(g);

  for (int coll = 0; coll < kNumCollectives; ++coll) {
    const int nsteps = coll == kAllReduce ? 2 * (nRanks - 1)
                       : (coll == kReduceScatter || coll == kAllGather) ? nRanks - 1
                                                                        : nRanks;
    for (int a = 0; a < kNumAlgos; ++a) {
      const NcclGraph& gr = *graphs[a];
      for (int p = 0; p < kNumProtos; ++p) {
        if (!modelled(coll, a, p)) continue;
        if ((coll == kReduceScatter || coll == kAllGather) && a == kPat && (p != kSimple || !pat)) continue;
        float bw = (nNodes <= 2 || collNetAlgo(a)) ? gr.bwIntra : gr.bwInter;
        if (a == kNvls || a == kNvlsTree) {
          if (gr.nChannels < 2) continue;  // NVLS needs two channels
          // NVLS bus bandwidth per channel: efficiency, one channel lost to the multicast object.
          float intraBw = gr.bwIntra * nccl::kNvlsEfficiency[cc] * (gr.nChannels - 1) / gr.nChannels;
          if (coll == kAllReduce) intraBw *= 2.0f;  // AllReduce pipelines reduce and broadcast
          else intraBw *= (ppn - 1) / ppn;
          const float interBw = gr.bwInter * ((nNodes <= 2 && a == kNvlsTree) ? 2 : 1);
          bw = std::min({intraBw, interBw,
                         a == kNvlsTree ? static_cast<float>(perChMaxNVLSTreeBw) : std::numeric_limits<float>::max()});
        }
        float busBw = gr.nChannels * bw;

        // Refinements, in NCCL's order (each narrows to float as NCCL's assignment does).
        if (a == kRing && p == kLL) busBw = std::min(llMaxBw, busBw * .5);
        if (a == kRing && p == kLL128) busBw = std::min(busBw * 0.92, gr.nChannels * perChMaxRingLL128Bw);
        if (a == kTree && coll == kAllReduce) busBw = std::min(busBw * .92, gr.nChannels * perChMaxTreeBw);
        if (a == kTree && p == kLL) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
        if (a == kTree && p == kLL128)
          busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), gr.nChannels * perChMaxTreeLL128Bw);
        if (a == kTree && g.maxTreePattern == TreePattern::Tree) busBw *= .85;
        if (a == kPat) busBw *= .75;
        if (collNetAlgo(a) && p != kSimple) busBw = 0;
        if (a == kCollNetDirect && p == kSimple) {
          if (coll == kAllGather || coll == kReduceScatter) {
            busBw = ppn * std::min(gr.bwIntra, gr.bwInter * 0.9f);
          } else {
            // CollNetDirect runs at full speed only with a NIC per GPU: penalise the GPU:NIC ratio.
            float factor = ppn / (1.0 * gr.nChannels);
            factor -= (factor - 1) / 2;
            busBw /= factor;
            if (g.minCompCap >= 90) busBw *= .85;
          }
        }
        // Multi-node AllGather/ReduceScatter over NVLS or CollNetDirect need CollNet AG/RS and
        // no more local ranks than CollNet heads.
        if ((a == kNvls || a == kCollNetDirect) && p == kSimple && (coll == kAllGather || coll == kReduceScatter) &&
            nNodes > 1) {
          if (coll == kAllGather && !g.collNetAllGather) busBw = 0.0f;
          if (coll == kReduceScatter && !g.collNetReduceScatter) busBw = 0.0f;
          int nHeads = 0;
          if (g.collNetEnable) nHeads = g.collNetHeads;
          else busBw = 0.0f;
          if (busBw > 0.0f && g.ppnMaxLocalRanks() > nHeads) busBw = 0.0f;
        }

        // Bus bandwidth -> algorithm bandwidth.
        if (!(a != kRing && (coll == kAllGather || coll == kReduceScatter))) {
          float ratio = 1.0f;
          if (a == kRing || a == kNvls || a == kNvlsTree) ratio *= (1.0 * nRanks) / nsteps;
          else ratio *= .5;
          busBw *= ratio;
        }
        m.bw_[coll][a][p] = busBw;

        float& lat = m.lat_[coll][a][p];
        lat = static_cast<float>(k.baseLatencies[a][p]);
        float intraLat = static_cast<float>(k.hwLatencies[intraHw[a]][a][p]);
        // With one rank per node the network latency is fully exposed: use Tree's.
        float interLat = static_cast<float>(ppn == 1 ? k.hwLatencies[kHwNet][kTree][p] : k.hwLatencies[kHwNet][a][p]);
        interLat += gr.latencyInter;
        if (p == kSimple) interLat += gr.latencyInter;  // flush latency

        if (a == kRing) {
          float stepLat = static_cast<float>(k.hwLatencies[hw[a]][a][p]);
          if (coll == kReduce || coll == kBroadcast) {
            if (gr.sameChannels) {
              lat += stepLat;
            } else {
              if (p == kSimple) stepLat = static_cast<float>(k.hwLatencies[hw[a]][kTree][p]);
              lat += nsteps * stepLat;
            }
          } else {
            float overhead = 0.0f;  // each inter-node ring step still posts to the network
            if (nNodes > 1) {
              overhead = netOverhead_us(g);
              if (p == kSimple) overhead *= 3;
            }
            intraLat = std::max(intraLat, overhead);
            const int nInterSteps = nNodes == 1 ? 0 : coll == kAllReduce ? 2 * (nNodes - 1) : nNodes - 1;
            lat += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat;
          }
        } else if (a == kTree) {
          if (coll == kAllReduce) lat += 2 * ((ppnInt - 1) * intraLat + nccl::log2i(nNodes) * interLat);
        } else if (a == kCollNetDirect) {
          // 0.4 us arity serialisation per extra local rank.
          lat += 2 * (std::min(1, ppnInt - 1) * intraLat + (ppnInt - 1) * 0.4) + interLat;
        } else if (a == kCollNetChain) {
          lat += 2 * (ppnInt - 1) * intraLat + interLat;
        } else if (a == kNvls) {
          lat = intraLat;
          if (nNodes > 1) lat += interLat;
        } else if (a == kNvlsTree) {
          lat += intraLat + 2 * nccl::log2i(nNodes) * interLat;
        } else if (a == kPat) {
          if (coll == kAllGather || coll == kReduceScatter)
            lat += nccl::log2i(nNodes) * (interLat / 3.5) + nRanks * 2.8;  // log part + a linear part
        }
      }
    }
  }

  // Enable rules (tuning.cc:459-497): NVLS Tree off on one node; CollNet (and multi-node NVLS)
  // need CollNet; CollNetDirect needs an NVSwitch; LL128 'auto' only on suitable paths.
  for (int f = 0; f < kNumCollectives; ++f) {
    for (int a = 0; a < kNumAlgos; ++a) {
      const bool disable = (nNodes == 1 && a == kNvlsTree) ||
                           (!g.collNetEnable && (collNetAlgo(a) || (a == kNvls && nNodes > 1))) ||
                           (!g.nvSwitch && a == kCollNetDirect);
      const bool algoOn = g.algoEnable[f][a] != 0 && !disable;
      for (int p = 0; p < kNumProtos; ++p) {
        int protoOn = g.protoEnable[f][p];
        if (protoOn == 2 && p == kLL128) {
          const NcclGraph& gr = *graphs[a];
          bool on = (g.ll128C2c && g.minCompCap >= 90) ? gr.typeInter <= PathType::Pxn : gr.typeInter <= PathType::Pxb;
          on = on && gr.typeIntra <= PathType::Nvb;
          on = on && g.minCompCap == g.maxCompCap;
          on = on && g.minCompCap >= 70;  // (CUDA 11.8's sm90 2-rank exception assumed absent)
          protoOn = on ? 1 : 0;
        }
        if (protoOn == 0 || !algoOn) m.bw_[f][a][p] = 0;
      }
    }
  }
  return m;
}

}  // namespace dynamiccl::model
