// The plugin driven with the cost tables NCCL's own model produces (model/), not hand-made ones.
#include <gtest/gtest.h>

#include <cstring>

#include "offline/model/model.h"
#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::ScopedEnv;
using testing::openPlugin;
using testing::profileJson;
using testing::TempFile;

model::NcclModel modelFor(int nNodes) {
  model::Topology topo;  // DGX-H100-like defaults
  topo.name = "dgx-h100";
  topo.nNodes = nNodes;
  auto graphs = model::approximateGraphs(topo);
  EXPECT_TRUE(graphs.ok()) << (graphs.ok() ? "" : graphs.error());
  auto m = model::NcclModel::build(graphs.value());
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
  return m.value();
}

harness::CostTable asHarness(const model::CostTable& t) { return t; }

TEST(PluginWithNcclModel, NoProfileReproducesNcclsDefaultEverywhere) {
  ScopedEnv env("DYNAMICCL_PROFILE", nullptr);
  for (int nNodes : {1, 2, 4}) {
    const model::NcclModel m = modelFor(nNodes);
    auto comm = openPlugin(5)->init(harness::CommSpec{9, 8 * nNodes, nNodes});
    ASSERT_TRUE(comm.ok());
    for (int c = 0; c < kNumCollectives; ++c)
      for (uint64_t n = 8; n <= (uint64_t{1} << 32); n *= 4) {
        const auto table = m.costTable(Collective(c), n);
        const auto expected = m.defaultChoice(Collective(c), n);
        const harness::Choice got = (*comm)->decide(c, n, asHarness(table));
        EXPECT_EQ(got.algo, static_cast<int>(expected.algo)) << nNodes << " nodes, coll " << c << ", " << n << " B";
        EXPECT_EQ(got.proto, static_cast<int>(expected.proto));
        EXPECT_EQ(got.nChannels, 0);
      }
  }
}

TEST(PluginWithNcclModel, NvlsRuleFallsBackWhereNcclHasNoNvls) {
  // NVLS needs CollNet across nodes: on 2 nodes NCCL marks it IGNORE and the next rule applies.
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"nvls","proto":"simple"},
                                  {"collective":"allreduce","algo":"ring","proto":"ll128","channels":8})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  const model::NcclModel one = modelFor(1), two = modelFor(2);
  ASSERT_GE(one.costTable(Collective::AllReduce, 1 << 24)[4][2], 0.0f) << "1-node DGX-H100 has NVLS";
  ASSERT_EQ(two.costTable(Collective::AllReduce, 1 << 24)[4][2], -1.0f);
  auto c1 = openPlugin()->init(harness::CommSpec{1, 8, 1});
  auto c2 = openPlugin()->init(harness::CommSpec{2, 16, 2});
  ASSERT_TRUE(c1.ok() && c2.ok());
  EXPECT_EQ((*c1)->decide(4, 1 << 24, asHarness(one.costTable(Collective::AllReduce, 1 << 24))),
            (harness::Choice{4, 2, 0}));
  EXPECT_EQ((*c2)->decide(4, 1 << 24, asHarness(two.costTable(Collective::AllReduce, 1 << 24))),
            (harness::Choice{1, 1, 8}));
}

TEST(PluginWithNcclModel, ConstantsAreLeftAsNcclGaveThem) {
  ScopedEnv env("DYNAMICCL_PROFILE", nullptr);
  ncclTunerConstants_v5_t constants = model::defaultTunerConstants();
  const ncclTunerConstants_v5_t before = constants;
  harness::CommSpec spec;
  spec.constants = &constants;
  auto comm = openPlugin(5)->init(spec);
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ(0, std::memcmp(&constants, &before, sizeof constants));
}

}  // namespace
}  // namespace dynamiccl
