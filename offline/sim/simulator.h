// The simulator: predicted time of one collective for a configuration on a topology, with the
// effects NCCL's model leaves out (protocol efficiency by size, per-channel bandwidth and
// saturation, chunk pipelining, NIC sharing, launch and sync overheads), plus seeded noise.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "policy/policy.h"

namespace dynamiccl::sim {

// One configuration NCCL can run: the policy's own type, so what the simulator times is what the
// plugin applies. Default algo/proto = NCCL's choice; nChannels 0 / chunkBytes 0 = NCCL's count / chunk.
using Config = policy::Decision;

// Calibrated knobs (offline/platforms/calibration/*.json). Defaults are a generic NVLink node.
struct SimParams {
  double launch_us = 6.0;          // kernel launch + host enqueue per collective
  double syncPerLevel_us = 0.3;    // cross-rank synchronisation, per log2(nRanks)
  double baseScale = 0.5;          // x NCCL's per-protocol base latency (baseLatencies)
  double intraHopScale = 1.0;      // x NCCL's intra-node hop latency (hwLatencies NVLINK/PCI)
  double interHopScale = 1.0;      // x NCCL's network hop latency (hwLatencies NET)
  double intraBwEff = 0.80;        // achievable fraction of nominal NVLink/PCIe bandwidth
  double interBwEff = 0.85;        // achievable fraction of NIC bandwidth
  double llEff = 0.9;              // LL beyond its 4-of-8-byte line payload
  double ll128Eff = 0.95;          // LL128 beyond its 120-of-128-byte payload
  double chanCapScale = 1.0;       // x per-channel bandwidth ceilings (one thread block's copy rate)
  double stepOverhead_us = 0.4;    // per pipeline step of Simple (flag/fence); LL/LL128 pay 1/4
  double treeEff = 0.9;            // tree bandwidth relative to the link bottleneck
  // ... times this per network level beyond the first: a deeper tree has more store-and-forward
  // levels and more parents feeding two children at once (Alps: trees at 64+ nodes run at ~2/3 of
  // the ring's busbw, at 2-8 nodes at nearly all of it). 1 = no such effect.
  double treeLevelEff = 1.0;
  double nvlsGain = 1.3;           // NVLS busbw relative to ring's (switch does the reduction)
  // CollNet (SHARP): the switches reduce, so a node sends and receives S once per NIC set instead
  // of ring's 2(n-1)/n S. No public data forces CollNet: these two are priors, not fits.
  double sharpEff = 0.85;          // achieved fraction of the NICs' rate under in-network reduction
  double sharpHop_us = 3.0;        // one aggregation round trip through the switch tree, per level
  double chanCost_us = 0.02;       // per channel per collective (more blocks to launch and sync)
  // Network transport (libfabric/verbs) switches from eager to rendezvous above a message size:
  // each network hop of a larger message pays a handshake (RTS/GET round trip) on top.
  double rdzvThreshold_KiB = 64.0; // wire bytes per channel per step above which sends are rendezvous
  double rdzv_us = 0.0;            // extra latency per network hop in rendezvous (0 = no such effect)
  // LL across the network: NCCL keeps LL's network buffers in host memory (net.cc maps every
  // protocol but LL to device memory under GDR), so LL lines are staged through the host and the
  // proxy; its wire rate is this fraction of the NIC's (1 = no such effect).
  double netLlEff = 1.0;
  // ... and an LL ring's network rate a further fraction of that (1 = no such effect). Alps
  // (libfabric CXI): LL rings on 2-8 nodes run at ~1-2 GB/s busbw whatever their channel count,
  // while LL trees on 16+ nodes do not slow down; FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD, a transport
  // setting, removes two thirds of it.
  double ringLlNetEff = 1.0;
  // A multi-node Simple ring step (one chunk through every rank) takes at least this long: the
  // transport completes a network message no faster, however little it carries (a handshake and
  // completion per message). Alps (CXI) shows ~44 us: ring time flat from 16 to 64 MiB on 4 nodes.
  double netStepFloor_us = 0.0;
  // Scale: beyond about farNodes nodes a job spans several network groups (dragonfly global links,
  // fat-tree spines), where hops are slower and bandwidth tapers; network hop latency is multiplied
  // and network bandwidth divided by up to farFactor, with a smooth onset in log2(nodes).
  double farNodes = 4096.0;
  double farFactor = 1.0;
  // NVLS: NCCL rates an NVLS round at 25 us of hardware latency (multimem ops through the switch
  // and the barrier among its GPUs); we add this on top of the two NVLink hops, fitted per system.
  double nvlsLat_us = 0.0;
  double nvlsChanScale = 1.0;      // x per-channel ceiling for NVLS (multimem loads/stores, not copies)
  // How sharply a channel-limited rate meets the link limit (the p of a p-norm soft minimum): high
  // is a hard corner; low is a gradual approach, as channels contend for the same links.
  double satSharpness = 4.0;
  // Noise (only in sample_us).
  double noiseSigma = 0.03;        // lognormal sigma per sample
  double congestionProb = 0.002;   // chance per sample that a congestion episode starts
  int congestionLength = 50;       // samples an episode lasts
  double congestionSlowdown = 1.6; // bandwidth term multiplier during an episode (multi-node only)
};

// Deterministic noise: the same seed gives the same sequence of multipliers.
class NoiseSource {
 public:
  explicit NoiseSource(uint64_t seed = 1) : rng_(seed) {}
  // Multiplier for the latency part and for the bandwidth part of one sample.
  struct Factors { double latency = 1.0, bandwidth = 1.0; };
  Factors next(const SimParams& p, bool multiNode);

 private:
  std::mt19937_64 rng_;
  int episodeLeft_ = 0;
};

class Simulator {
 public:
  explicit Simulator(model::Topology topo, SimParams params = {});

  // Whether the hardware can run it at all (NCCL's env could force it); e.g. NVLS needs NVSwitch.
  bool feasible(Collective coll, const Config& c) const;
  // Noiseless predicted time; nChannels/chunk 0 use defaultChannels()/model::defaultChunkBytes(). -1 if infeasible.
  double time_us(Collective coll, uint64_t nBytes, const Config& c) const;
  // One noisy sample (noise and congestion episodes drawn from `noise`).
  double sample_us(Collective coll, uint64_t nBytes, const Config& c, NoiseSource& noise) const;

  // Channels when the caller leaves nChannels 0: a generic rule (enough channels to fill the
  // links, 16 KiB per channel at least). NCCL's exact count comes from model::NcclReference.
  int defaultChannels(Algo a, Proto p, uint64_t nBytes) const;
  // Every feasible (algo, proto) x channel option (0 = default, 1, 2, 4, 8, 16, 32).
  std::vector<Config> candidateConfigs(Collective coll) const;

  const model::Topology& topology() const { return topo_; }
  const SimParams& params() const { return params_; }
  SimParams& params() { return params_; }

 private:
  struct Parts { double latency_us = 0, bandwidth_us = 0; };
  Parts parts(Collective coll, uint64_t nBytes, const Config& c) const;

  model::Topology topo_;
  SimParams params_;
  int domainGpus_ = 1;   // GPUs in one NVLink domain (node or NVL72 rack)
  int nDomains_ = 1;
  int usableNics_ = 1;   // NICs per domain the ranks can use
};

}  // namespace dynamiccl::sim
