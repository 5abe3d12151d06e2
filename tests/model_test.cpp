// Tests of model/: NCCL 2.28.9's cost model reimplemented (tables, availability, choice, channels).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "offline/model/model.h"

namespace dynamiccl::model {
namespace {

constexpr int T = 0, R = 1, CND = 2, CNC = 3, NV = 4, NVT = 5, PAT = 6;
constexpr int LL = 0, LL128 = 1, S = 2;

// DGX-H100-like graphs as NCCL's GRAPH log would report them (8 GPUs/node, NVSwitch, 8 NICs).
NcclGraphs dgxH100(int nNodes) {
  NcclGraphs g;
  g.nRanks = 8 * nNodes;
  g.nNodes = nNodes;
  g.minCompCap = g.maxCompCap = 90;
  if (nNodes == 1) g.ring = {12, 30.0f, 30.0f, PathType::Nvl, PathType::Pix, 0.0f, true};
  else g.ring = {8, 45.0f, 45.0f, PathType::Nvl, PathType::Pix, 0.0f, true};
  g.tree = g.ring;
  // NVLS: 8 heads at 40 GB/s (9 x 40 <= 18 x 20.6); pass 2 raises bwInter (NICs cap it across nodes).
  g.nvls = {8, 40.0f, nNodes == 1 ? 60.0f : 48.0f, PathType::Nvl, PathType::Pix, 0.0f, false};
  g.nvlsSupport = true;
  g.nvlsChannels = 16;
  g.nvSwitch = true;
  g.nChannels = nNodes == 1 ? 24 : 16;
  return g;
}

NcclModel build(const NcclGraphs& g, const ncclTunerConstants_v5_t* k = nullptr) {
  auto m = NcclModel::build(g, k);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
  return std::move(m).value();
}

TEST(ModelConstants, DefaultsMatchNccl2289) {
  const ncclTunerConstants_v5_t k = defaultTunerConstants();
  EXPECT_DOUBLE_EQ(k.baseLatencies[R][S], 8.4);
  EXPECT_DOUBLE_EQ(k.baseLatencies[PAT][LL], 8.0);
  EXPECT_DOUBLE_EQ(k.hwLatencies[0][R][LL128], 1.9);   // NVLink
  EXPECT_DOUBLE_EQ(k.hwLatencies[1][R][S], 5.7);       // PCI
  EXPECT_DOUBLE_EQ(k.hwLatencies[2][NVT][S], 20.9);    // Net
  EXPECT_DOUBLE_EQ(k.llMaxBws[2][0], 141.0);
  EXPECT_DOUBLE_EQ(k.llMaxBws[0][1], 39.0);
  EXPECT_DOUBLE_EQ(k.perChMaxRingLL128Bws[3][1], 34.6);
  EXPECT_DOUBLE_EQ(k.perChMaxTreeLL128Bws[2][2], 29.0);
  EXPECT_DOUBLE_EQ(k.perChMaxTreeBws[2][1], 41.4);
  EXPECT_DOUBLE_EQ(k.perChMaxNVLSTreeBws[2][0], 0.0);
  EXPECT_DOUBLE_EQ(k.perChMaxNVLSTreeBws[3][2], 43.8);
}

TEST(ModelConstants, RoundTripThroughBuild) {
  ncclTunerConstants_v5_t k{};
  fillDefaultTunerConstants(&k);
  const NcclModel withDefaults = build(dgxH100(1), &k);
  const NcclModel implicit = build(dgxH100(1));
  for (int c = 0; c < kNumCollectives; ++c)
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        const auto cc = Collective(c);
        EXPECT_EQ(withDefaults.latency_us(cc, Algo(a), Proto(p)), implicit.latency_us(cc, Algo(a), Proto(p)));
        EXPECT_EQ(withDefaults.bandwidth_GBps(cc, Algo(a), Proto(p)), implicit.bandwidth_GBps(cc, Algo(a), Proto(p)));
      }
  EXPECT_EQ(0, std::memcmp(&withDefaults.constants(), &k, sizeof k));
}

TEST(ModelConstants, TunerEditsTakeEffect) {
  ncclTunerConstants_v5_t k = defaultTunerConstants();
  k.baseLatencies[R][LL] += 10.0;
  k.llMaxBws[2][0] = 50.0;  // Hopper single-node LL cap
  const NcclModel base = build(dgxH100(1));
  const NcclModel edited = build(dgxH100(1), &k);
  EXPECT_NEAR(edited.latency_us(Collective::AllReduce, Algo::Ring, Proto::LL) -
                  base.latency_us(Collective::AllReduce, Algo::Ring, Proto::LL), 10.0, 1e-4);
  EXPECT_NEAR(edited.bandwidth_GBps(Collective::AllReduce, Algo::Ring, Proto::LL), 50.0 * 8 / 14, 1e-3);
  EXPECT_EQ(edited.latency_us(Collective::AllReduce, Algo::Ring, Proto::Simple),
            base.latency_us(Collective::AllReduce, Algo::Ring, Proto::Simple));
}

// By hand, 1-node DGX-H100 graphs, AllReduce Ring LL, 1024 B, one op:
//   busBw = nChannels * bwIntra = 12 * 30 = 360; Ring/LL: min(llMaxBw[Hopper][1 node] = 141, 360 * .5) = 141
//   algBw = 141 * nRanks / nsteps = 141 * 8 / 14 = 80.5714 GB/s
//   lat   = base 6.6 + nsteps 14 * NVLink Ring LL 0.6 = 15.0 us
//   time  = 15.0 + 1024 / (1000 * 80.5714) = 15.0 + 0.012709 = 15.012709 us
TEST(ModelTable, HandComputedRingLLEntry) {
  const NcclModel m = build(dgxH100(1));
  EXPECT_NEAR(m.bandwidth_GBps(Collective::AllReduce, Algo::Ring, Proto::LL), 80.5714, 1e-3);
  EXPECT_NEAR(m.latency_us(Collective::AllReduce, Algo::Ring, Proto::LL), 15.0, 1e-5);
  EXPECT_NEAR(m.costTable(Collective::AllReduce, 1024)[R][LL], 15.012709, 1e-4);
}

TEST(ModelChoice, LLForTinySimpleForLarge) {
  for (int nodes : {1, 2, 4}) {
    const NcclModel m = build(dgxH100(nodes));
    const DefaultChoice tiny = m.defaultChoice(Collective::AllReduce, 8);
    EXPECT_EQ(tiny.proto, Proto::LL) << nodes << " nodes";
    const DefaultChoice large = m.defaultChoice(Collective::AllReduce, uint64_t{1} << 30);
    EXPECT_EQ(large.proto, Proto::Simple) << nodes << " nodes";
    EXPECT_EQ(m.defaultChoice(Collective::AllGather, uint64_t{1} << 30).proto, Proto::Simple);
  }
  // One node with NVLS: large AllReduce goes to NVLS.
  EXPECT_EQ(build(dgxH100(1)).defaultChoice(Collective::AllReduce, uint64_t{1} << 30).algo, Algo::Nvls);
}

TEST(ModelAvailability, LL128NeedsNvlinkClassIntraPath) {
  NcclGraphs g = dgxH100(1);
  EXPECT_GE(build(g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], 0.0f);
  g.ring.typeIntra = g.tree.typeIntra = PathType::Phb;  // PCIe only
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], kIgnore);
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[T][LL128], kIgnore);
}

TEST(ModelAvailability, LL128NeedsUniformCompCap) {
  NcclGraphs g = dgxH100(1);
  g.minCompCap = 80;
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], kIgnore);
}

TEST(ModelAvailability, LL128NetworkPathLimit) {
  NcclGraphs g = dgxH100(2);
  g.ring.typeInter = PathType::Pxn;  // allowed on Hopper with NCCL_LL128_C2C=1
  EXPECT_GE(build(g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], 0.0f);
  g.ring.typeInter = PathType::Phb;
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], kIgnore);
  g = dgxH100(2);
  g.minCompCap = g.maxCompCap = 80;  // Ampere: only up to PXB
  g.ring.typeInter = PathType::Pxn;
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], kIgnore);
}

TEST(ModelAvailability, NvlsNeedsSupportAndSimpleOnly) {
  NcclGraphs g = dgxH100(1);
  const CostTable on = build(g).costTable(Collective::AllReduce, 1 << 20);
  EXPECT_GE(on[NV][S], 0.0f);
  EXPECT_EQ(on[NV][LL], kIgnore);
  EXPECT_EQ(on[NV][LL128], kIgnore);
  g.nvlsSupport = false;
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[NV][S], kIgnore);
  // An op/datatype NVLS cannot reduce.
  CallTraits noNvlsOp;
  noNvlsOp.nvlsOpSupported = false;
  EXPECT_EQ(build(dgxH100(1)).costTable(Collective::AllReduce, 1 << 20, 1, noNvlsOp)[NV][S], kIgnore);
}

TEST(ModelAvailability, MultiNodeNvlsNeedsCollNet) {
  NcclGraphs g = dgxH100(2);
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[NV][S], kIgnore);
  g.collNetEnable = true;
  g.collNetChain = g.tree;
  g.collNetDirect = {8, 45.0f, 45.0f, PathType::Nvl, PathType::Pix, 0.0f, true};
  g.collNetHeads = 8;
  EXPECT_GE(build(g).costTable(Collective::AllReduce, 1 << 20)[NV][S], 0.0f);
}

TEST(ModelAvailability, NvlsTreeOffOnOneNode) {
  EXPECT_EQ(build(dgxH100(1)).costTable(Collective::AllReduce, 1 << 20)[NVT][S], kIgnore);
  EXPECT_GE(build(dgxH100(2)).costTable(Collective::AllReduce, 1 << 20)[NVT][S], 0.0f);
}

TEST(ModelAvailability, CollNetNeedsCollNet) {
  NcclGraphs g = dgxH100(2);
  const CostTable off = build(g).costTable(Collective::AllReduce, 1 << 20);
  EXPECT_EQ(off[CND][S], kIgnore);
  EXPECT_EQ(off[CNC][S], kIgnore);
  g.collNetEnable = true;
  g.collNetChain = g.tree;
  g.collNetDirect = {8, 45.0f, 45.0f, PathType::Nvl, PathType::Pix, 0.0f, true};
  g.collNetHeads = 8;
  const CostTable on = build(g).costTable(Collective::AllReduce, 1 << 20);
  EXPECT_GE(on[CND][S], 0.0f);
  EXPECT_GE(on[CNC][S], 0.0f);
  EXPECT_EQ(on[CND][LL], kIgnore);  // CollNet is Simple only
  g.nvSwitch = false;               // CollNetDirect needs an NVSwitch
  EXPECT_EQ(build(g).costTable(Collective::AllReduce, 1 << 20)[CND][S], kIgnore);
}

TEST(ModelAvailability, PatOnlyAllGatherReduceScatterSimpleOneGpuPerNode) {
  NcclGraphs g;
  g.nRanks = g.nNodes = 4;
  g.minCompCap = g.maxCompCap = 90;
  g.ring = {4, 24.0f, 24.0f, PathType::Loc, PathType::Pix, 0.0f, true};
  g.tree = g.ring;
  g.maxTreePattern = TreePattern::Tree;
  g.nChannels = 8;
  const NcclModel m = build(g);
  EXPECT_GE(m.costTable(Collective::AllGather, 1 << 20)[PAT][S], 0.0f);
  EXPECT_GE(m.costTable(Collective::ReduceScatter, 1 << 20)[PAT][S], 0.0f);
  EXPECT_EQ(m.costTable(Collective::AllGather, 1 << 20)[PAT][LL], kIgnore);
  EXPECT_EQ(m.costTable(Collective::AllReduce, 1 << 20)[PAT][S], kIgnore);
  EXPECT_EQ(m.costTable(Collective::Broadcast, 1 << 20)[PAT][S], kIgnore);
  CallTraits avg;
  avg.scaledReduceScatter = true;
  EXPECT_EQ(m.costTable(Collective::ReduceScatter, 1 << 20, 1, avg)[PAT][S], kIgnore);
  // Two GPUs per node: no PAT.
  EXPECT_EQ(build(dgxH100(2)).costTable(Collective::AllGather, 1 << 20)[PAT][S], kIgnore);
}

TEST(ModelAvailability, BroadcastAndReduceAreRingOnly) {
  const NcclModel m = build(dgxH100(2));
  for (Collective c : {Collective::Broadcast, Collective::Reduce}) {
    const CostTable t = m.costTable(c, 1 << 20);
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        if (a == R) EXPECT_GE(t[a][p], 0.0f);
        else EXPECT_EQ(t[a][p], kIgnore) << a << "/" << p;
      }
  }
}

TEST(ModelAvailability, TreeOnlyForAllReduce) {
  const NcclModel m = build(dgxH100(2));
  EXPECT_GE(m.costTable(Collective::AllReduce, 1 << 20)[T][S], 0.0f);
  EXPECT_EQ(m.costTable(Collective::AllGather, 1 << 20)[T][S], kIgnore);
  EXPECT_EQ(m.costTable(Collective::ReduceScatter, 1 << 20)[T][LL], kIgnore);
}

TEST(ModelTime, TreeCorrectionFactorApplies) {
  const NcclModel m = build(dgxH100(1));
  const float lat = m.latency_us(Collective::AllReduce, Algo::Tree, Proto::LL);
  const float bw = m.bandwidth_GBps(Collective::AllReduce, Algo::Tree, Proto::LL);
  // 1024 B: log2(1024 / 64) = 4 -> LL factor 0.9. 2^24 B: index 18 -> 0.9; 2^30 B: beyond the table.
  EXPECT_NEAR(m.costTable(Collective::AllReduce, 1024)[T][LL], lat + 1024 / (1000 * bw * 0.9f), 1e-4);
  const uint64_t big = uint64_t{1} << 30;
  EXPECT_NEAR(m.costTable(Collective::AllReduce, big)[T][LL], lat + float(big) / (1000 * bw), 1e-2);
  // Simple at 2^17 B: index 11 -> 0.5 (bandwidth halved).
  const float latS = m.latency_us(Collective::AllReduce, Algo::Tree, Proto::Simple);
  const float bwS = m.bandwidth_GBps(Collective::AllReduce, Algo::Tree, Proto::Simple);
  EXPECT_NEAR(m.costTable(Collective::AllReduce, 1 << 17)[T][S], latS + (1 << 17) / (1000 * bwS * 0.5f), 1e-4);
}

TEST(ModelTime, RingSimpleMultiNodeLatencyFactor) {
  const NcclModel m = build(dgxH100(2));  // 16 ranks, 16 channels: plateau from 16*16*64 = 16 KiB
  const float lat = m.latency_us(Collective::AllReduce, Algo::Ring, Proto::Simple);
  const float bw = m.bandwidth_GBps(Collective::AllReduce, Algo::Ring, Proto::Simple);
  const uint64_t small = 16 * 16 * 64 - 1, large = 16 * 16 * 64;
  EXPECT_NEAR(m.costTable(Collective::AllReduce, small)[R][S], lat + float(small) / (1000 * bw), 1e-4);
  EXPECT_NEAR(m.costTable(Collective::AllReduce, large)[R][S], lat * 1.4f + float(large) / (1000 * bw), 1e-4);
  // Not on one node.
  const NcclModel one = build(dgxH100(1));
  const float lat1 = one.latency_us(Collective::AllReduce, Algo::Ring, Proto::Simple);
  const float bw1 = one.bandwidth_GBps(Collective::AllReduce, Algo::Ring, Proto::Simple);
  EXPECT_NEAR(one.costTable(Collective::AllReduce, 1 << 20)[R][S], lat1 + float(1 << 20) / (1000 * bw1), 1e-4);
}

TEST(ModelTime, LatCountRingPerOpOthersPerBatchOfTen) {
  const NcclModel m = build(dgxH100(1));
  const uint64_t n = 4096;
  const CostTable one = m.costTable(Collective::AllReduce, n, 1);
  const CostTable four = m.costTable(Collective::AllReduce, n, 4);
  const CostTable eleven = m.costTable(Collective::AllReduce, n, 11);
  const float ringLat = m.latency_us(Collective::AllReduce, Algo::Ring, Proto::LL);
  const float treeLat = m.latency_us(Collective::AllReduce, Algo::Tree, Proto::LL);
  EXPECT_NEAR(four[R][LL] - one[R][LL], 3 * ringLat, 1e-4);
  EXPECT_NEAR(four[T][LL], one[T][LL], 1e-6);                 // ceil(4 / 10) = 1
  EXPECT_NEAR(eleven[T][LL] - one[T][LL], treeLat, 1e-4);     // ceil(11 / 10) = 2
}

TEST(ModelChoice, SelectionTieBreaking) {
  CostTable t;
  for (auto& row : t) row.fill(kIgnore);
  t[R][LL] = 0.0f;
  t[T][S] = 0.0f;
  DefaultChoice c = selectFromTable(t);
  EXPECT_EQ(c.algo, Algo::Tree);  // equal cost: lowest algorithm index wins
  EXPECT_EQ(c.proto, Proto::Simple);
  t[T][S] = kIgnore;
  t[R][S] = 0.0f;
  c = selectFromTable(t);
  EXPECT_EQ(c.algo, Algo::Ring);  // equal cost within an algorithm: lowest protocol wins
  EXPECT_EQ(c.proto, Proto::LL);
  t[NV][S] = -0.5f;  // any negative is skipped
  EXPECT_EQ(selectFromTable(t).algo, Algo::Ring);
  for (auto& row : t) row.fill(kIgnore);
  EXPECT_EQ(selectFromTable(t).algo, Algo::Default);
}

TEST(ModelTable, IgnorePatternOneNodeVsMultiNode) {
  auto mask = [](const CostTable& t) {
    std::string s;
    for (int a = 0; a < kNumAlgos; ++a) {
      for (int p = 0; p < kNumProtos; ++p) s += t[a][p] == kIgnore ? '-' : 'x';
      s += ' ';
    }
    return s;
  };
  // Order: Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT, each LL LL128 Simple.
  EXPECT_EQ(mask(build(dgxH100(1)).costTable(Collective::AllReduce, 1 << 20)), "xxx xxx --- --- --x --- --- ");
  EXPECT_EQ(mask(build(dgxH100(2)).costTable(Collective::AllReduce, 1 << 20)), "xxx xxx --- --- --- --x --- ");
  EXPECT_EQ(mask(build(dgxH100(1)).costTable(Collective::AllGather, 1 << 20)), "--- xxx --- --- --x --- --- ");
  EXPECT_EQ(mask(build(dgxH100(2)).costTable(Collective::AllGather, 1 << 20)), "--- xxx --- --- --- --- --- ");
}

TEST(ModelTable, SingleRankIsRingSimpleZero) {
  NcclGraphs g;
  g.nRanks = g.nNodes = 1;
  const CostTable t = build(g).costTable(Collective::AllReduce, 1 << 20);
  EXPECT_EQ(t[R][S], 0.0f);
  EXPECT_EQ(t[T][S], kIgnore);
}

TEST(ModelChannels, ShrinkForSmallMessages) {
  const NcclModel m = build(dgxH100(1));
  // Ring LL: threshold 8 * nRanks = 64 B per thread, 512 threads: nc * 32768 B must fit.
  EXPECT_EQ(m.defaultChannels(Algo::Ring, Proto::LL, 65536), 2);
  EXPECT_EQ(m.defaultChannels(Algo::Ring, Proto::LL, 100), 1);
  EXPECT_EQ(m.defaultChannels(Algo::Ring, Proto::LL, uint64_t{1} << 30), 24);
  // Ring Simple: 64 B per thread, 512 threads.
  EXPECT_EQ(m.defaultChannels(Algo::Ring, Proto::Simple, 10 * 32768), 10);
  // NVLS uses its own channel count.
  EXPECT_EQ(m.defaultChannels(Algo::Nvls, Proto::Simple, 1 << 20), 16);
  const DefaultChoice tiny = m.defaultChoice(Collective::AllReduce, 8);
  const DefaultChoice large = m.defaultChoice(Collective::AllReduce, uint64_t{1} << 28);
  EXPECT_LT(tiny.nChannels, large.nChannels);
  EXPECT_EQ(tiny.nChannels, 1);
}

TEST(ModelBuild, RejectsImpossibleGraphs) {
  NcclGraphs g = dgxH100(1);
  g.nNodes = 0;
  EXPECT_FALSE(NcclModel::build(g).ok());
  g = dgxH100(1);
  g.nChannels = 0;
  EXPECT_FALSE(NcclModel::build(g).ok());
}

TEST(ModelDump, LooksLikeNcclTuningLog) {
  const std::string d = build(dgxH100(1)).dump();
  EXPECT_NE(d.find("AllReduce |"), std::string::npos);
  EXPECT_NE(d.find("NVLSTree"), std::string::npos);
  EXPECT_NE(d.find("  15.0/  80.6 |"), std::string::npos);  // AllReduce Ring LL, hand-computed above
}

// ---- approximateGraphs on preset-like topologies ----

Topology dgxH100Topo(int nodes) {
  Topology t;
  t.name = "dgx-h100";
  t.computeCap = 90;
  t.nNodes = nodes;
  t.gpusPerNode = 8;
  t.nvlinkBwPerGpu_GBps = 450;
  t.nicsPerNode = 8;
  t.nicBw_GBps = 50;
  return t;
}

TEST(ApproximateGraphs, DgxH100OneNode) {
  const auto g = approximateGraphs(dgxH100Topo(1));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ring.nChannels, 12);  // 6 x 60 GB/s found, duplicated to 12 x 30 (NVIDIA/nccl#1367)
  EXPECT_FLOAT_EQ(g->ring.bwIntra, 30.0f);
  EXPECT_EQ(g->nChannels, 24);
  EXPECT_EQ(g->nvls.nChannels, 8);
  EXPECT_EQ(g->nvlsChannels, 16);
  EXPECT_FLOAT_EQ(g->nvls.bwIntra, 40.0f);
  EXPECT_FLOAT_EQ(g->nvls.bwInter, 60.0f);
  const NcclModel m = build(*g);
  EXPECT_EQ(m.defaultChoice(Collective::AllReduce, 8).proto, Proto::LL);
  EXPECT_EQ(m.defaultChoice(Collective::AllReduce, uint64_t{1} << 30).proto, Proto::Simple);
}

TEST(ApproximateGraphs, DgxH100MultiNode) {
  const auto g = approximateGraphs(dgxH100Topo(4));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->nNodes, 4);
  EXPECT_GE(g->ring.nChannels, 4);
  EXPECT_LE(g->ring.bwInter, 50.0f);
  const CostTable t = build(*g).costTable(Collective::AllReduce, 1 << 20);
  EXPECT_EQ(t[NV][S], kIgnore);  // no CollNet
  EXPECT_GE(t[NVT][S], 0.0f);
}

TEST(ApproximateGraphs, DgxA100) {
  Topology t = dgxH100Topo(2);
  t.computeCap = 80;
  t.nvlinkBwPerGpu_GBps = 300;
  t.nicBw_GBps = 25;
  t.nvlsSupport = false;
  const auto g = approximateGraphs(t);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->nvlsSupport);
  EXPECT_LE(g->ring.bwInter, 25.0f);
  EXPECT_GE(build(*g).costTable(Collective::AllReduce, 1 << 20)[R][LL128], 0.0f);
}

TEST(ApproximateGraphs, NcclsViewOfTheNicSetsTheInterNodeSpeed) {
  // A NIC NCCL sees below its wire rate (PCIe path, plugin-reported speed) lowers the speed the
  // search finds across nodes, and nothing inside a node.
  Topology t = dgxH100Topo(4);
  const auto wire = approximateGraphs(t);
  t.ncclNicBw_GBps = 20;
  const auto seen = approximateGraphs(t);
  ASSERT_TRUE(wire.ok() && seen.ok());
  EXPECT_LE(seen->ring.bwInter, 20.0f);
  EXPECT_LT(seen->ring.bwInter, wire->ring.bwInter);
  t.nNodes = 1;
  const auto one = approximateGraphs(t);
  t.ncclNicBw_GBps = 0;
  const auto oneWire = approximateGraphs(t);
  ASSERT_TRUE(one.ok() && oneWire.ok());
  EXPECT_EQ(one->ring.bwIntra, oneWire->ring.bwIntra);
  EXPECT_EQ(one->ring.nChannels, oneWire->ring.nChannels);
}

TEST(ApproximateGraphs, H800HasFewerNvlinkChannelsThanH100) {
  Topology t = dgxH100Topo(1);
  t.nvlinkBwPerGpu_GBps = 200;  // 8 NVLink4 links
  const auto h800 = approximateGraphs(t);
  const auto h100 = approximateGraphs(dgxH100Topo(1));
  ASSERT_TRUE(h800.ok() && h100.ok());
  EXPECT_LT(h800->ring.nChannels * h800->ring.bwIntra, h100->ring.nChannels * h100->ring.bwIntra);
}

TEST(ApproximateGraphs, L40sPcieHasNoLL128NorNvls) {
  for (int gpus : {2, 4}) {
    Topology t;
    t.computeCap = 89;
    t.gpusPerNode = gpus;
    t.nvlink = t.nvswitch = t.nvlsSupport = false;
    t.pcieBw_GBps = 24;
    t.nicsPerNode = 0;
    const auto g = approximateGraphs(t);
    ASSERT_TRUE(g.ok());
    const CostTable c = build(*g).costTable(Collective::AllReduce, 1 << 20);
    EXPECT_EQ(c[R][LL128], kIgnore) << gpus;
    EXPECT_EQ(c[NV][S], kIgnore) << gpus;
    EXPECT_GE(c[R][LL], 0.0f);
    EXPECT_GE(c[T][S], 0.0f);
  }
}

TEST(ApproximateGraphs, Gh200QuadsOverSlingshot) {
  Topology t;
  t.computeCap = 90;
  t.nNodes = 8;
  t.gpusPerNode = 4;
  t.nvswitch = t.nvlsSupport = false;
  t.nvlinkBwPerGpu_GBps = 450;
  t.nicsPerNode = 4;
  t.nicBw_GBps = 25;
  const auto g = approximateGraphs(t);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->nRanks, 32);
  EXPECT_EQ(g->ring.nChannels, 4);  // one 24 GB/s channel per 200 Gb/s NIC
  EXPECT_FLOAT_EQ(g->ring.bwInter, 24.0f);
  const NcclModel m = build(*g);
  EXPECT_EQ(m.costTable(Collective::AllReduce, 1 << 20)[NVT][S], kIgnore);
  EXPECT_EQ(m.defaultChoice(Collective::AllReduce, 8).proto, Proto::LL);
}

TEST(ApproximateGraphs, Gh200Ll128AcrossNodesDependsOnNcclRelease) {
  Topology t;
  t.computeCap = 90;
  t.nNodes = 2;
  t.gpusPerNode = 4;
  t.nvswitch = t.nvlsSupport = false;
  t.nicsPerNode = 4;
  t.nicBw_GBps = 25;
  t.nicViaCpu = true;
  const auto ll128 = [&](int version, int nodes) {
    t.ncclVersion = version;
    t.nNodes = nodes;
    return build(approximateGraphs(t).value()).costTable(Collective::AllReduce, 1 << 22)[R][LL128];
  };
  EXPECT_GE(ll128(22809, 2), 0.0f);     // P2C: LL128 on (NCCL_LL128_C2C)
  EXPECT_EQ(ll128(22304, 2), kIgnore);  // PHB before 2.27: off across nodes
  EXPECT_GE(ll128(22304, 1), 0.0f);     // one node: no network path involved
}

TEST(ApproximateGraphs, Gb200Nvl72IsOneNvlinkDomain) {
  Topology t;
  t.computeCap = 100;
  t.nNodes = 18;
  t.gpusPerNode = 4;
  t.nvlinkBwPerGpu_GBps = 900;
  t.nvlDomainGpus = 72;
  t.nicsPerNode = 4;
  const auto g = approximateGraphs(t);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->nNodes, 1);
  EXPECT_EQ(g->nRanks, 72);
  EXPECT_EQ(g->nvlsChannels, 24);
  EXPECT_EQ(g->nChannels, 32);
  EXPECT_GE(build(*g).costTable(Collective::AllReduce, 1 << 20)[NV][S], 0.0f);
}

TEST(ApproximateGraphs, OneGpuPerNodeEnablesPat) {
  Topology t = dgxH100Topo(4);
  t.gpusPerNode = 1;
  t.nicsPerNode = 1;
  const auto g = approximateGraphs(t);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->maxTreePattern, TreePattern::Tree);
  EXPECT_GE(build(*g).costTable(Collective::AllGather, 1 << 20)[PAT][S], 0.0f);
}

TEST(ApproximateGraphs, RejectsEmptyTopology) {
  Topology t;
  t.gpusPerNode = 0;
  EXPECT_FALSE(approximateGraphs(t).ok());
}

}  // namespace
}  // namespace dynamiccl::model
