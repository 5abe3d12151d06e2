// The simulator's basic physics, presets, determinism of noise, and replay's lookup logic (against
// a fake decision function, no plugin needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "offline/sim/sim.h"

using namespace dynamiccl;
using namespace dynamiccl::sim;
using namespace dynamiccl::measurements;

// The numbers every preset had when they were C++ (before offline/platforms/<name>.json held them):
// name, compute capability, GPUs per node, NVLink, NVSwitch, NVLink GB/s, PCIe GB/s, NICs, NIC GB/s,
// NVLS, NVLink domain, NIC via CPU, CollNet.
struct PinnedPreset {
  const char* name;
  int cc, gpn;
  bool nvlink, nvswitch;
  double nvl, pcie;
  int nics;
  double nicBw;
  bool nvls;
  int domain;
  bool nicViaCpu, collnet;
};
constexpr PinnedPreset kPinnedPresets[] = {
    {"dgx-a100", 80, 8, true, true, 300.0, 25.0, 8, 25.0, false, 0, false, false},
    {"dgx-h100", 90, 8, true, true, 450.0, 50.0, 8, 50.0, true, 0, false, false},
    {"dgx-h100-sharp", 90, 8, true, true, 450.0, 50.0, 8, 50.0, true, 0, false, true},
    {"h800", 90, 8, true, true, 175.0, 50.0, 4, 25.0, true, 0, false, false},
    {"l40s-pcie-2", 89, 2, false, false, 0.0, 25.0, 2, 12.5, false, 0, false, false},
    {"l40s-pcie-4", 89, 4, false, false, 0.0, 25.0, 2, 12.5, false, 0, false, false},
    {"gh200-slingshot", 90, 4, true, false, 450.0, 64.0, 4, 25.0, false, 0, true, false},
    {"gb200-nvl72", 100, 4, true, true, 900.0, 64.0, 4, 50.0, true, 72, false, false},
    {"gb300-nvl72", 103, 4, true, true, 900.0, 64.0, 4, 100.0, true, 72, false, false},
    {"dgx-b200", 100, 8, true, true, 900.0, 64.0, 8, 50.0, true, 0, false, false},
    {"gcp-a3mega", 90, 8, true, true, 450.0, 50.0, 8, 25.0, true, 0, false, false},
};

TEST(SimPresets, EveryPresetBuildsAndKeepsItsNumbers) {
  for (const PinnedPreset& p : kPinnedPresets) {
    auto t = preset(p.name, 2);
    ASSERT_TRUE(t.ok()) << p.name << ": " << t.error();
    model::Topology want;
    want.name = p.name;
    want.nNodes = 2;
    want.computeCap = p.cc;
    want.gpusPerNode = p.gpn;
    want.nvlink = p.nvlink;
    want.nvswitch = p.nvswitch;
    want.nvlinkBwPerGpu_GBps = p.nvl;
    want.pcieBw_GBps = p.pcie;
    want.nicsPerNode = p.nics;
    want.nicBw_GBps = p.nicBw;
    want.nvlsSupport = p.nvls;
    want.nvlDomainGpus = p.domain;
    want.nicViaCpu = p.nicViaCpu;
    want.collnetSupport = p.collnet;
    EXPECT_EQ(topologyToJson(t.value()), topologyToJson(want)) << p.name;
  }
  for (const std::string& name : presetNames()) {
    auto t = preset(name, 2);
    ASSERT_TRUE(t.ok()) << name;
    auto back = topologyFromJson(topologyToJson(t.value()));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(topologyToJson(back.value()), topologyToJson(t.value()));
    EXPECT_TRUE(model::NcclReference::create(t.value()).ok()) << name;
  }
  EXPECT_GE(presetNames().size(), std::size(kPinnedPresets));
  EXPECT_FALSE(preset("nope").ok());
  EXPECT_FALSE(topologyFromJson("{\"gpusPerNode\": 0}").ok());
  EXPECT_FALSE(topologyFromJson("{\"bogus\": 1}").ok());
}

TEST(SimPhysics, ProtocolsCrossOverAndBandwidthSaturates) {
  const Simulator sim(preset("dgx-h100", 1).value());
  const auto t = [&](Proto p, uint64_t b, int ch = 16) {
    return sim.time_us(Collective::AllReduce, b, Config{Algo::Ring, p, ch, 0});
  };
  EXPECT_LT(t(Proto::LL, 1024), t(Proto::Simple, 1024));            // LL wins small messages
  EXPECT_LT(t(Proto::Simple, 1ull << 30), t(Proto::LL, 1ull << 30));  // Simple wins large ones
  EXPECT_LT(t(Proto::Simple, 1ull << 30, 16), t(Proto::Simple, 1ull << 30, 2));  // channels add bandwidth
  // Saturation: past the link limit more channels buy (almost) nothing.
  EXPECT_NEAR(t(Proto::Simple, 1ull << 30, 32) / t(Proto::Simple, 1ull << 30, 64), 1.0, 0.05);
  EXPECT_LT(sim.time_us(Collective::AllReduce, 64, Config{Algo::Ring, Proto::LL, 1, 0}), 60.0);
}

TEST(SimPhysics, NicImbalanceCapsH800AndFeasibilityRules) {
  const uint64_t big = 1ull << 31;
  const Simulator h100(preset("dgx-h100", 4).value()), h800(preset("h800", 4).value());
  const Config ring{Algo::Ring, Proto::Simple, 16, 0};
  EXPECT_GT(h800.time_us(Collective::AllReduce, big, ring), 2 * h100.time_us(Collective::AllReduce, big, ring));
  const Simulator l40s(preset("l40s-pcie-4", 1).value());
  EXPECT_FALSE(l40s.feasible(Collective::AllReduce, Config{Algo::Nvls, Proto::Simple, 0, 0}));
  EXPECT_FALSE(h100.feasible(Collective::AllGather, Config{Algo::Tree, Proto::Simple, 0, 0}));
  EXPECT_TRUE(h100.feasible(Collective::AllReduce, Config{Algo::NvlsTree, Proto::Simple, 0, 0}));
  EXPECT_FALSE(h100.feasible(Collective::AllReduce, Config{Algo::NvlsTree, Proto::LL, 0, 0}));
  EXPECT_LT(h100.time_us(Collective::AllReduce, 8, Config{Algo::CollNetDirect, Proto::Simple, 0, 0}), 0);
}

TEST(SimNoise, SeededAndDeterministic) {
  const Simulator sim(preset("dgx-h100", 2).value());
  const Config c{Algo::Ring, Proto::Simple, 16, 0};
  NoiseSource a(42), b(42), other(43);
  double sa = 0, sb = 0, so = 0;
  for (int i = 0; i < 100; ++i) {
    sa += sim.sample_us(Collective::AllReduce, 1 << 24, c, a);
    sb += sim.sample_us(Collective::AllReduce, 1 << 24, c, b);
    so += sim.sample_us(Collective::AllReduce, 1 << 24, c, other);
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, so);
  EXPECT_NEAR(sa / 100, sim.time_us(Collective::AllReduce, 1 << 24, c), 0.1 * sa / 100);
}

TEST(SimNccl, DefaultConfigIsUsableAndInTheTable) {
  auto ref = model::NcclReference::create(preset("dgx-h100", 2).value());
  ASSERT_TRUE(ref.ok());
  for (uint64_t b = 8; b <= (1ull << 30); b *= 16) {
    const Config d = ref->defaultConfig(Collective::AllReduce, b);
    ASSERT_NE(d.algo, Algo::Default);
    EXPECT_GE(ref->costTable(Collective::AllReduce, b)[int(d.algo)][int(d.proto)], 0.0f);
    EXPECT_GT(d.nChannels, 0);
  }
  // NCCL_PROTO=LL128 explicitly enables LL128 even on PCIe, where NCCL's auto rule would not.
  auto pcie = model::NcclReference::create(preset("l40s-pcie-4", 1).value());
  ASSERT_TRUE(pcie.ok());
  EXPECT_LT(pcie->costTable(Collective::AllReduce, 1 << 20)[int(Algo::Ring)][int(Proto::LL128)], 0.0f);
  EXPECT_EQ(pcie->restrictedConfig(Collective::AllReduce, 1 << 20, std::nullopt, Proto::LL128).proto, Proto::LL128);
}

TEST(SimNccl, From2_31AChannelCountOnlyLowersNcclsOwn) {
  auto ref = model::NcclReference::create(preset("dgx-h100", 1).value());
  ASSERT_TRUE(ref.ok());
  const uint64_t b = 1 << 20;
  const int own = ref->channels(Algo::Ring, Proto::Simple, b);
  ASSERT_GT(own, 1);
  const Config up{Algo::Ring, Proto::Simple, own + 8, 0}, down{Algo::Ring, Proto::Simple, 1, 0};
  EXPECT_EQ(ref->resolve(up, b).nChannels, own + 8);  // 2.28 and 2.30: the tuner's count replaces NCCL's
  EXPECT_EQ(ref->resolve(up, b, dynamiccl::abi::PickRule::Nccl2_30).nChannels, own + 8);
  EXPECT_EQ(ref->resolve(up, b, dynamiccl::abi::PickRule::Nccl2_31).nChannels, own);
  EXPECT_EQ(ref->resolve(down, b, dynamiccl::abi::PickRule::Nccl2_31).nChannels, 1);
  EXPECT_EQ(ref->resolve(Config{Algo::Ring, Proto::Simple, 0, 0}, b, dynamiccl::abi::PickRule::Nccl2_31).nChannels, own);
  EXPECT_TRUE(ref->channelsProposable(Collective::AllReduce, up, b, dynamiccl::abi::PickRule::Nccl2_28));
  EXPECT_FALSE(ref->channelsProposable(Collective::AllReduce, up, b, dynamiccl::abi::PickRule::Nccl2_31));
  EXPECT_TRUE(ref->channelsProposable(Collective::AllReduce, down, b, dynamiccl::abi::PickRule::Nccl2_31));
  const int ownDefault = ref->defaultConfig(Collective::AllReduce, b).nChannels;
  Config keep;
  keep.nChannels = ownDefault + 1;
  EXPECT_FALSE(ref->channelsProposable(Collective::AllReduce, keep, b, dynamiccl::abi::PickRule::Nccl2_31));
  keep.nChannels = ownDefault;
  EXPECT_TRUE(ref->channelsProposable(Collective::AllReduce, keep, b, dynamiccl::abi::PickRule::Nccl2_31));
}

TEST(SimReplay, LookupLogicWithAFakeDecision) {
  const std::string csv = std::filesystem::temp_directory_path() / "dynamiccl_sim_replay_test.csv";
  std::ofstream(csv) << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
                        "L40S x4,allreduce,4,1,1048576,default,default,,,100,0,d\n"
                        "L40S x4,allreduce,4,1,1048576,RING,default,,,110,0,f\n"
                        "L40S x4,allreduce,4,1,1048576,TREE,default,,,300,0,f\n"
                        "L40S x4,allreduce,4,1,1048576,default,LL,,,200,0,f\n"
                        "L40S x4,alltoall,4,1,1048576,default,default,,,50,0,not tunable\n";
  auto rows = loadMeasurements(csv);
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->rows.size(), 4u);
  EXPECT_EQ(rows->skipped.begin()->second, 1);
  auto data = buildReplayData(rows->rows);
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->points.size(), 1u);
  const ReplayPoint& p = data->points[0];
  EXPECT_EQ(p.best_us(), 100);
  // Keeping NCCL's default: ratio 1 to the default and to the best.
  auto keep = replay(data.value(), [](const ReplayPoint& q, const model::CostTable&) { return q.ncclDefault; });
  EXPECT_EQ(keep.judged, 1);
  EXPECT_DOUBLE_EQ(keep.geomeanVsDefault, 1.0);
  // Picking Tree (resolved through the model like the forced row): 3x the default.
  const Config tree = p.shape->nccl->restrictedConfig(Collective::AllReduce, 1 << 20, Algo::Tree, std::nullopt);
  auto pickTree = replay(data.value(), [&](const ReplayPoint&, const model::CostTable&) { return tree; });
  EXPECT_EQ(pickTree.judged, 1);
  EXPECT_NEAR(pickTree.worstVsDefault, 3.0, 1e-9);
  // A configuration nobody measured is reported, not judged.
  auto unmeasured = replay(data.value(), [](const ReplayPoint&, const model::CostTable&) {
    return Config{Algo::Ring, Proto::LL128, 0, 0};
  });
  EXPECT_EQ(unmeasured.judged, 0);
  EXPECT_EQ(unmeasured.unjudged.size(), 1u);
  // Profiles: NCCL's default per bucket round-trips to a decision for the measured size.
  const auto rules = bucketRules(data.value(), ncclDefaultChooser());
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].minBytes, 1u << 20);
  EXPECT_NE(profileJson("t", rules).find("\"dynamiccl-profile\""), std::string::npos);
  std::filesystem::remove(csv);
}

TEST(SimEnvironment, MeasuredAndSimulatedServeLatencies) {
  const Simulator sim(preset("dgx-a100", 1).value());
  SimulatedEnvironment env(sim, 7);
  EXPECT_TRUE(env.latency_us(Collective::AllReduce, 1 << 20, Config{Algo::Ring, Proto::LL, 8, 0}).has_value());
  EXPECT_FALSE(env.latency_us(Collective::AllReduce, 1 << 20, Config{Algo::Nvls, Proto::Simple, 8, 0}).has_value());
}

TEST(SimMeasurements, NcclReleaseFromTheNoteReachesTheTopology) {
  EXPECT_EQ(ncclVersionFromNote("job.txt; NCCL 2.23.4 + aws-ofi-nccl 1.13.0; out-of-place"), 22304);
  EXPECT_EQ(ncclVersionFromNote("NCCL default via XLA; NCCL 2.28.9"), 22809);
  EXPECT_EQ(ncclVersionFromNote("NCCL default via XLA"), 0);
  EXPECT_EQ(ncclVersionFromNote(""), 0);
  auto t = topologyForSystem("GH200 x4 per node (Alps)", 8, 2, 22304);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->nicViaCpu);
  EXPECT_EQ(t->ncclVersion, 22304);
  // Unknown release: the model's own (2.28.9).
  EXPECT_EQ(topologyForSystem("GH200 x4 per node (Alps)", 8, 2)->ncclVersion, 22809);
  // Before 2.27 the Grace NIC path is PHB: NCCL would not run LL128 across nodes.
  auto old = model::NcclReference::create(t.value());
  ASSERT_TRUE(old.ok());
  for (uint64_t b = 8; b <= (1ull << 32); b *= 2) EXPECT_NE(old->defaultConfig(Collective::AllReduce, b).proto, Proto::LL128) << b;
}

TEST(SimPhysics, NetworkLlScaleAndNvlsKnobsActWhereTheySay) {
  const Config ll{Algo::Ring, Proto::LL, 8, 0}, simple{Algo::Ring, Proto::Simple, 8, 0};
  const uint64_t mid = 1 << 20;
  SimParams slowLl;
  slowLl.netLlEff = 0.05;
  const auto gh = [](int nodes) { return topologyForSystem("GH200 x4", 4 * nodes, nodes).value(); };
  // LL over the network slows down; LL inside a node and Simple across nodes do not.
  EXPECT_GT(Simulator(gh(2), slowLl).time_us(Collective::AllReduce, mid, ll),
            2 * Simulator(gh(2)).time_us(Collective::AllReduce, mid, ll));
  EXPECT_DOUBLE_EQ(Simulator(gh(1), slowLl).time_us(Collective::AllReduce, mid, ll),
                   Simulator(gh(1)).time_us(Collective::AllReduce, mid, ll));
  EXPECT_DOUBLE_EQ(Simulator(gh(2), slowLl).time_us(Collective::AllReduce, mid, simple),
                   Simulator(gh(2)).time_us(Collective::AllReduce, mid, simple));
  // Far scale: next to nothing well below farNodes, most of farFactor well above it.
  SimParams far;
  far.farNodes = 64;
  far.farFactor = 2.0;
  const uint64_t big = 1ull << 30;
  EXPECT_NEAR(Simulator(gh(4), far).time_us(Collective::AllReduce, big, simple) /
                  Simulator(gh(4)).time_us(Collective::AllReduce, big, simple), 1.0, 0.02);
  const double at512 = Simulator(gh(512), far).time_us(Collective::AllReduce, big, simple) /
                       Simulator(gh(512)).time_us(Collective::AllReduce, big, simple);
  EXPECT_GT(at512, 1.6);  // the network-bound part doubles; launch and NVLink parts do not
  EXPECT_LE(at512, 2.0);
  // NVLS latency is NVLS's alone.
  SimParams nvls;
  nvls.nvlsLat_us = 20;
  const auto h100 = preset("dgx-h100", 1).value();
  const Config nv{Algo::Nvls, Proto::Simple, 16, 0};
  EXPECT_NEAR(Simulator(h100, nvls).time_us(Collective::AllReduce, 1024, nv) - Simulator(h100).time_us(Collective::AllReduce, 1024, nv),
              20.0, 1e-9);
  EXPECT_DOUBLE_EQ(Simulator(h100, nvls).time_us(Collective::AllReduce, 1024, simple),
                   Simulator(h100).time_us(Collective::AllReduce, 1024, simple));
}

TEST(SimPhysics, CollNetNeedsSharpAndNodesAndHalvesNetworkTraffic) {
  const Config direct{Algo::CollNetDirect, Proto::Simple, 16, 0}, chainCfg{Algo::CollNetChain, Proto::Simple, 16, 0};
  const Config ring{Algo::Ring, Proto::Simple, 16, 0};
  const Simulator plain(preset("dgx-h100", 16).value()), sharp(preset("dgx-h100-sharp", 16).value());
  const Simulator oneNode(preset("dgx-h100-sharp", 1).value());
  EXPECT_FALSE(plain.feasible(Collective::AllReduce, direct));
  EXPECT_FALSE(oneNode.feasible(Collective::AllReduce, direct));
  EXPECT_TRUE(sharp.feasible(Collective::AllReduce, direct));
  EXPECT_TRUE(sharp.feasible(Collective::AllReduce, chainCfg));
  EXPECT_FALSE(sharp.feasible(Collective::AllReduce, Config{Algo::CollNetDirect, Proto::LL, 16, 0}));
  EXPECT_FALSE(sharp.feasible(Collective::AllGather, direct));
  // NVLS across nodes needs SHARP for the inter-node part (NCCL's NVLS + CollNet).
  const Config nvls{Algo::Nvls, Proto::Simple, 16, 0};
  EXPECT_TRUE(sharp.feasible(Collective::AllReduce, nvls));
  EXPECT_FALSE(plain.feasible(Collective::AllReduce, nvls));
  // Large messages: ring moves ~2S per node through the NICs, SHARP S; but Direct's scatter and
  // gather move 1.75S per GPU over NVLink, which on DGX-H100 (360 vs 340 GB/s achieved) becomes
  // the bound: SHARP wins, by less than the NIC traffic alone would say.
  const uint64_t big = 1ull << 31;
  const double ratio = sharp.time_us(Collective::AllReduce, big, direct) / sharp.time_us(Collective::AllReduce, big, ring);
  EXPECT_LT(ratio, 0.85);
  EXPECT_GT(ratio, 0.5);
  bool hasCollNet = false;
  for (const Config& c : sharp.candidateConfigs(Collective::AllReduce)) hasCollNet |= c.algo == Algo::CollNetDirect;
  EXPECT_TRUE(hasCollNet);
  // NCCL's model sees SHARP too: CollNet has a cost-table entry on the SHARP preset only.
  auto ref = model::NcclReference::create(preset("dgx-h100-sharp", 16).value());
  ASSERT_TRUE(ref.ok());
  EXPECT_GE(ref->costTable(Collective::AllReduce, big)[int(Algo::CollNetDirect)][int(Proto::Simple)], 0.0f);
  EXPECT_LT(model::NcclReference::create(preset("dgx-h100", 16).value())
                ->costTable(Collective::AllReduce, big)[int(Algo::CollNetDirect)][int(Proto::Simple)], 0.0f);
}

TEST(SimPhysics, NetStepFloorBindsOnlyMultiNodeSimpleRings) {
  SimParams floor;
  floor.netStepFloor_us = 40.0;
  const auto gh = [](int nodes) { return topologyForSystem("GH200 x4", 4 * nodes, nodes).value(); };
  const Config ring{Algo::Ring, Proto::Simple, 8, 0}, tree{Algo::Tree, Proto::Simple, 8, 0}, ll{Algo::Ring, Proto::LL, 8, 0};
  const Simulator four(gh(4), floor), plain(gh(4));
  // 4 nodes x 4 GPUs: 30 ring steps; up to 64 MiB a channel's step is one chunk, so the round
  // takes 30 x 40 us whatever the size (Alps's plateau), and the bandwidth term takes over above.
  const double at16M = four.time_us(Collective::AllReduce, 16u << 20, ring);
  EXPECT_GT(at16M, 30 * 40.0);
  EXPECT_NEAR(four.time_us(Collective::AllReduce, 32u << 20, ring), at16M, 1e-9);
  EXPECT_GT(at16M, 1.5 * plain.time_us(Collective::AllReduce, 16u << 20, ring));
  // Trees, LL rings, and rings inside one node do not pay it.
  EXPECT_DOUBLE_EQ(four.time_us(Collective::AllReduce, 16u << 20, tree), plain.time_us(Collective::AllReduce, 16u << 20, tree));
  EXPECT_DOUBLE_EQ(four.time_us(Collective::AllReduce, 1u << 20, ll), plain.time_us(Collective::AllReduce, 1u << 20, ll));
  EXPECT_DOUBLE_EQ(Simulator(gh(1), floor).time_us(Collective::AllReduce, 16u << 20, ring),
                   Simulator(gh(1)).time_us(Collective::AllReduce, 16u << 20, ring));
}

TEST(SimPhysics, RingLlAcrossNodesAndDeepTreesSlowWhereTheySay) {
  const auto gh = [](int nodes) { return topologyForSystem("GH200 x4", 4 * nodes, nodes).value(); };
  const Config ringLl{Algo::Ring, Proto::LL, 8, 0}, treeLl{Algo::Tree, Proto::LL, 8, 0};
  const Config ringSimple{Algo::Ring, Proto::Simple, 8, 0}, treeSimple{Algo::Tree, Proto::Simple, 8, 0};
  SimParams slowRing;
  slowRing.ringLlNetEff = 0.1;
  // An LL ring across nodes slows down (Alps: ~1 GB/s busbw from 64 KiB to 1 MiB on 2-8 nodes)...
  EXPECT_GT(Simulator(gh(2), slowRing).time_us(Collective::AllReduce, 1 << 20, ringLl),
            3 * Simulator(gh(2)).time_us(Collective::AllReduce, 1 << 20, ringLl));
  // ... an LL tree, a Simple ring and an LL ring inside one node do not.
  EXPECT_DOUBLE_EQ(Simulator(gh(16), slowRing).time_us(Collective::AllReduce, 1 << 18, treeLl),
                   Simulator(gh(16)).time_us(Collective::AllReduce, 1 << 18, treeLl));
  EXPECT_DOUBLE_EQ(Simulator(gh(2), slowRing).time_us(Collective::AllReduce, 1 << 20, ringSimple),
                   Simulator(gh(2)).time_us(Collective::AllReduce, 1 << 20, ringSimple));
  EXPECT_DOUBLE_EQ(Simulator(gh(1), slowRing).time_us(Collective::AllReduce, 1 << 20, ringLl),
                   Simulator(gh(1)).time_us(Collective::AllReduce, 1 << 20, ringLl));
  // Tree efficiency per network level beyond the first: none on 2 nodes, compounding with depth.
  SimParams deep;
  deep.treeLevelEff = 0.9;
  const uint64_t big = 1ull << 30;
  EXPECT_DOUBLE_EQ(Simulator(gh(2), deep).time_us(Collective::AllReduce, big, treeSimple),
                   Simulator(gh(2)).time_us(Collective::AllReduce, big, treeSimple));
  const double r8 = Simulator(gh(8), deep).time_us(Collective::AllReduce, big, treeSimple) /
                    Simulator(gh(8)).time_us(Collective::AllReduce, big, treeSimple);
  const double r64 = Simulator(gh(64), deep).time_us(Collective::AllReduce, big, treeSimple) /
                     Simulator(gh(64)).time_us(Collective::AllReduce, big, treeSimple);
  EXPECT_GT(r8, 1.1);
  EXPECT_GT(r64, r8 + 0.1);
  EXPECT_DOUBLE_EQ(Simulator(gh(8), deep).time_us(Collective::AllReduce, big, ringSimple),
                   Simulator(gh(8)).time_us(Collective::AllReduce, big, ringSimple));
}

TEST(SimMeasurements, WhatNcclRanIsReadFromTheTuningWordsANoteQuotes) {
  const auto ran = ncclChoiceFromNote("g4_auto.log; NCCL 2.29.2; out-of-place; TUNING log: Algo NVLS proto SIMPLE channels 16");
  ASSERT_TRUE(ran);
  EXPECT_EQ(ran->first, Algo::Nvls);
  EXPECT_EQ(ran->second, Proto::Simple);
  EXPECT_FALSE(ncclChoiceFromNote("auto (author: Ring at 2/4 GPUs, TUNING log at 4 GPUs)"));  // no choice quoted
  EXPECT_FALSE(ncclChoiceFromNote("TUNING log: Algo WARP proto SIMPLE"));                       // not an algorithm of NCCL's
  EXPECT_FALSE(ncclChoiceFromNote(""));
}

namespace {

struct Arms {
  Config pick;                  // the model's pick of NCCL's choice
  std::vector<Config> allowed;  // every configuration the model's table allows, the pick first
};
Arms armsAt(const std::string& system, uint64_t bytes) {
  auto topo = topologyForSystem(system, 4, 1);
  auto ref = model::NcclReference::create(topo.value());
  Arms out;
  out.pick = ref->defaultConfig(Collective::AllReduce, bytes);
  out.allowed.push_back(out.pick);
  const model::CostTable t = ref->costTable(Collective::AllReduce, bytes);
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q)
      if (t[a][q] >= 0 && !(Algo(a) == out.pick.algo && Proto(q) == out.pick.proto))
        out.allowed.push_back(Config{Algo(a), Proto(q), 0, 0});
  return out;
}

std::string rowsOf(const std::string& system, uint64_t bytes, const std::string& algo, const std::string& proto,
                   double us, const std::string& note) {
  std::string out;
  for (double jitter : {0.998, 1.0, 1.002})  // three runs, 0.2% apart
    out += system + ",allreduce,4,1," + std::to_string(bytes) + "," + algo + "," + proto + ",,," +
           std::to_string(us * jitter) + ",0," + note + "\n";
  return out;
}
std::string forcedRows(const std::string& system, uint64_t bytes, const Config& c, double us) {
  return rowsOf(system, bytes, std::string(algoNcclName(c.algo)), std::string(protoNcclName(c.proto)), us, "forced");
}

}  // namespace

// What NCCL's default rows ran is settled by measurements, never by the model alone: the TUNING line
// they quote; else the model's pick while its own forced runs cannot be told from them; forced runs that
// differ beyond noise refute the pick, which becomes an arm a tuner can test, and NCCL's choice is the
// forced configuration the default rows match, else one no row forced. The table a tuner sees ranks it first.
TEST(SimReplay, TheDefaultRowsRanWhatTheMeasurementsSayNotWhatTheModelGuesses) {
  const std::string sys = "L40S x4";
  const std::string csv = (std::filesystem::temp_directory_path() / "dynamiccl-settle.csv").string();
  std::string body(kInterchangeHeader);
  body += "\n";
  const uint64_t stated = 1 << 20, confirmed = 2 << 20, matched = 4 << 20, unforced = 8 << 20, refuted = 16 << 20;
  std::map<uint64_t, Arms> arms;
  for (uint64_t b : {stated, confirmed, matched, unforced, refuted}) {
    arms[b] = armsAt(sys, b);
    ASSERT_GE(arms[b].allowed.size(), 3u) << "the platform's table allows several configurations";
  }
  const Config other = arms[stated].allowed[1];
  body += rowsOf(sys, stated, "default", "default", 100, "TUNING log: Algo " + std::string(algoNcclName(other.algo)) +
                 " proto " + std::string(protoNcclName(other.proto)));
  body += forcedRows(sys, stated, arms[stated].pick, 80) + forcedRows(sys, stated, other, 100);
  body += rowsOf(sys, confirmed, "default", "default", 200, "auto") + forcedRows(sys, confirmed, arms[confirmed].pick, 200.4) +
          forcedRows(sys, confirmed, arms[confirmed].allowed[1], 260);
  body += rowsOf(sys, matched, "default", "default", 400, "auto") + forcedRows(sys, matched, arms[matched].pick, 300) +
          forcedRows(sys, matched, arms[matched].allowed[1], 401) + forcedRows(sys, matched, arms[matched].allowed[2], 500);
  body += rowsOf(sys, unforced, "default", "default", 800, "auto") + forcedRows(sys, unforced, arms[unforced].pick, 600) +
          forcedRows(sys, unforced, arms[unforced].allowed[1], 1000);
  body += rowsOf(sys, refuted, "default", "default", 1600, "auto");
  for (size_t i = 0; i < arms[refuted].allowed.size(); ++i)
    body += forcedRows(sys, refuted, arms[refuted].allowed[i], i == 0 ? 1200 : 2400);
  std::ofstream(csv) << body;
  auto rows = loadMeasurements(csv);
  ASSERT_TRUE(rows.ok()) << rows.error();
  auto data = buildReplayData(rows->rows);
  ASSERT_TRUE(data.ok()) << data.error();
  ASSERT_EQ(data->points.size(), 5u);
  std::map<uint64_t, const ReplayPoint*> at;
  for (const ReplayPoint& p : data->points) at[p.bytes] = &p;
  auto same = [](const Config& a, const Config& b) { return a.algo == b.algo && a.proto == b.proto; };
  auto firstInTable = [](const ReplayPoint& p) {
    const model::CostTable t = p.costTable();
    int ba = -1, bq = -1;
    for (int a = 0; a < kNumAlgos; ++a)
      for (int q = 0; q < kNumProtos; ++q)
        if (t[a][q] >= 0 && (ba < 0 || t[a][q] < t[ba][bq])) ba = a, bq = q;
    return Config{Algo(ba), Proto(bq), 0, 0};
  };
  EXPECT_EQ(at[stated]->defaultSettledBy, DefaultSettledBy::Stated);
  EXPECT_TRUE(same(at[stated]->ncclDefault, other)) << "the TUNING line, though the model picks otherwise";
  EXPECT_EQ(at[confirmed]->defaultSettledBy, DefaultSettledBy::Confirmed);
  EXPECT_TRUE(same(at[confirmed]->ncclDefault, arms[confirmed].pick));
  EXPECT_EQ(at[matched]->defaultSettledBy, DefaultSettledBy::Matched);
  EXPECT_TRUE(same(at[matched]->ncclDefault, arms[matched].allowed[1])) << "the forced runs the default rows match";
  EXPECT_EQ(at[unforced]->defaultSettledBy, DefaultSettledBy::Unforced);
  EXPECT_FALSE(at[unforced]->forced_us.count({at[unforced]->ncclDefault.algo, at[unforced]->ncclDefault.proto}));
  EXPECT_EQ(at[refuted]->defaultSettledBy, DefaultSettledBy::Refuted);
  EXPECT_TRUE(same(at[refuted]->ncclDefault, arms[refuted].pick)) << "nothing else fits: the pick stays";
  for (const auto& [bytes, p] : at) {
    EXPECT_TRUE(same(firstInTable(*p), p->ncclDefault)) << bytes << ": the table leads to what the default rows ran";
    EXPECT_EQ(forcedTwinIsDefault(p->defaultSettledBy), p->defaultSettledBy == DefaultSettledBy::Stated ||
                                                            p->defaultSettledBy == DefaultSettledBy::Confirmed ||
                                                            p->defaultSettledBy == DefaultSettledBy::Matched);
  }
  // Judged as a tuner would see it: leaving NCCL alone is the default rows; forcing the refuted pick, its forced runs.
  const auto summary = replay(data.value(), [](const ReplayPoint& p, const model::CostTable&) { return p.ncclDefault; });
  EXPECT_EQ(summary.judged, 5);
  EXPECT_DOUBLE_EQ(summary.geomeanVsDefault, 1.0);
  std::filesystem::remove(csv);
}

// A system no platform describes is read with the stand-in's model, said once, and never skipped.
TEST(SimReplay, HardwareNoPlatformDescribesIsReadWithTheStandIn) {
  const std::string csv = (std::filesystem::temp_directory_path() / "dynamiccl-standin.csv").string();
  std::ofstream(csv) << kInterchangeHeader << "\n"
                     << "Rubin R100 x8 (tomorrow),allreduce,8,1,1048576,default,default,,,50,0,d\n"
                     << "Rubin R100 x8 (tomorrow),allreduce,8,1,1048576,RING,SIMPLE,,,40,0,f\n";
  auto rows = loadMeasurements(csv);
  ASSERT_TRUE(rows.ok()) << rows.error();
  auto data = buildReplayData(rows->rows);
  ASSERT_TRUE(data.ok()) << data.error();
  ASSERT_EQ(data->points.size(), 1u);
  EXPECT_TRUE(data->skipped.empty());
  EXPECT_EQ(data->points[0].shape->standIn, kStandInPlatform);
  ASSERT_EQ(data->notes.size(), 1u);
  EXPECT_NE(data->notes[0].find("no platform describes 'Rubin R100 x8 (tomorrow)'"), std::string::npos) << data->notes[0];
  // Named hardware is never a stand-in.
  auto named = buildReplayData(rows->rows, "", "dgx-b200");
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(named->points[0].shape->standIn.empty());
  std::filesystem::remove(csv);
}
