// The proposer figures: how soon an order of configurations reaches the measured best at each key.
#include <gtest/gtest.h>

#include <set>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "offline/train/measured_data.h"
#include "offline/train/proposer_kinds.h"
#include "offline/train/proposer_eval.h"

namespace dynamiccl::train {
namespace {

// One key of a 2-GPU L40S: NCCL's default (100 us) and three forced protocols, LL128 the best by far.
struct OneKey {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dynamiccl_proposers_" + std::to_string(::getpid()) + ".csv");
  OneKey() {
    const std::string sys = "L40S-48GB x2 PCIe";
    std::ofstream(path) << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
                        << sys << ",allreduce,2,1,1048576,default,default,,,100,0,x\n"
                        << sys << ",allreduce,2,1,1048576,RING,LL,,,150,0,x\n"
                        << sys << ",allreduce,2,1,1048576,RING,LL128,,,60,0,x\n"
                        << sys << ",allreduce,2,1,1048576,RING,SIMPLE,,,99.5,0,x\n";
  }
  ~OneKey() { std::filesystem::remove(path); }
};

TEST(ProposerEval, CountsTrialsUntilTheMeasuredBestAndHitsAtOneAndThree) {
  const OneKey k;
  auto data = loadReplayData(k.path.string());
  ASSERT_TRUE(data.ok()) << data.error();
  const auto first = [](Proto p) {
    return [p](const measurements::ReplayPoint&) { return std::vector<sim::Config>{{Algo::Ring, p, 0, 0}}; };
  };
  const ProposerFigures right = evaluateProposer("right", *data, first(Proto::LL128));
  ASSERT_EQ(right.keys, 1);
  EXPECT_EQ(right.bestIsDefault, 0);
  EXPECT_EQ(right.top1, 1);
  EXPECT_EQ(right.trials, 1);
  const ProposerFigures wrong = evaluateProposer("wrong", *data, [](const measurements::ReplayPoint&) {
    return std::vector<sim::Config>{{Algo::Ring, Proto::LL, 0, 0}, {Algo::Tree, Proto::LL, 0, 0},
                                    {Algo::Ring, Proto::Simple, 0, 0}, {Algo::Ring, Proto::LL128, 0, 0}};
  });
  EXPECT_EQ(wrong.top1, 0);
  // Unmeasured proposals (tree) and NCCL's own choice cost no trial; the measured loser does.
  EXPECT_EQ(wrong.top3, 1);
  EXPECT_EQ(wrong.trials, 2);
  EXPECT_EQ(wrong.trials, wrong.everyArm);
  EXPECT_NE(describeProposer(wrong).find("top-1   0/1"), std::string::npos) << describeProposer(wrong);
}

// The kinds policy-eval --proposers evaluates, in one list: NCCL's cost order first (the yardstick),
// each name once, the learned network the one kind that needs a network and says why it has none.
TEST(ProposerEval, EveryKindInOneListWithNcclsOrderFirst) {
  const auto& kinds = proposerKinds();
  ASSERT_GE(kinds.size(), 3u);
  EXPECT_EQ(kinds.front().name, "NCCL's cost order");
  std::set<std::string> names;
  int needNetwork = 0;
  for (const ProposerKind& k : kinds) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " twice";
    needNetwork += k.needsNetwork;
  }
  EXPECT_EQ(needNetwork, 1);
  const OneKey key;
  auto data = loadReplayData(key.path.string());
  ASSERT_TRUE(data.ok()) << data.error();
  ProposerInputs none;
  none.simulatorFor = [](const measurements::Shape&) -> const sim::Simulator* { return nullptr; };
  none.networkMissing = "no LibTorch here";
  for (const ProposerKind& k : kinds) {
    std::string why;
    const auto order = k.order(none, why);
    if (k.needsNetwork) {
      EXPECT_FALSE(order) << k.name << " proposed without its network";
      EXPECT_NE(why.find("no LibTorch here"), std::string::npos) << why;
    } else {
      ASSERT_TRUE(order) << k.name << ": " << why;
      EXPECT_EQ(evaluateProposer(k.name, *data, *order).keys, 1) << k.name;
    }
  }
}

}  // namespace
}  // namespace dynamiccl::train
