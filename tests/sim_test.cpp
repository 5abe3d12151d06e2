// The simulator's basic physics, presets, determinism of noise, and replay's lookup logic (against
// a fake decision function, no plugin needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/sim.h"

using namespace dynamiccl;
using namespace dynamiccl::sim;

TEST(SimPresets, EveryPresetBuildsAndMatchesItsShippedJson) {
  for (const std::string& name : presetNames()) {
    auto t = preset(name, 2);
    ASSERT_TRUE(t.ok()) << name;
    auto back = topologyFromJson(topologyToJson(t.value()));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(topologyToJson(back.value()), topologyToJson(t.value()));
    const std::string file = std::string(DYNAMICCL_SOURCE_DIR) + "/sim/presets/" + name + ".json";
    auto shipped = loadTopology(file, 2);
    ASSERT_TRUE(shipped.ok()) << file << ": " << shipped.error();
    EXPECT_EQ(topologyToJson(shipped.value()), topologyToJson(t.value())) << file;
    EXPECT_TRUE(NcclReference::create(t.value()).ok()) << name;
  }
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
  auto ref = NcclReference::create(preset("dgx-h100", 2).value());
  ASSERT_TRUE(ref.ok());
  for (uint64_t b = 8; b <= (1ull << 30); b *= 16) {
    const Config d = ref->defaultConfig(Collective::AllReduce, b);
    ASSERT_NE(d.algo, Algo::Default);
    EXPECT_GE(ref->costTable(Collective::AllReduce, b)[int(d.algo)][int(d.proto)], 0.0f);
    EXPECT_GT(d.nChannels, 0);
  }
  // NCCL_PROTO=LL128 explicitly enables LL128 even on PCIe, where NCCL's auto rule would not.
  auto pcie = NcclReference::create(preset("l40s-pcie-4", 1).value());
  ASSERT_TRUE(pcie.ok());
  EXPECT_LT(pcie->costTable(Collective::AllReduce, 1 << 20)[int(Algo::Ring)][int(Proto::LL128)], 0.0f);
  EXPECT_EQ(pcie->restrictedConfig(Collective::AllReduce, 1 << 20, std::nullopt, Proto::LL128).proto, Proto::LL128);
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
