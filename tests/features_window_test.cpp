// The timing window ring and the workload context.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "features/features.h"

namespace dynamiccl {
namespace {

TEST(RatioRing, KeepsTheLastEntriesOldestFirst) {
  RatioRing r;
  float out[kTimingWindowLength];
  r.snapshot(out);
  for (float v : out) EXPECT_EQ(v, 0.0f);  // empty: "as predicted"
  r.push(20.0, 10.0);
  r.snapshot(out);
  EXPECT_NEAR(out[kTimingWindowLength - 1], std::log(2.0), 1e-6);
  EXPECT_EQ(out[0], 0.0f);
  for (int i = 1; i <= 3 * kTimingWindowLength; ++i) r.push(i, 1.0);
  r.snapshot(out);
  EXPECT_EQ(r.count(), kTimingWindowLength);
  for (int i = 0; i < kTimingWindowLength; ++i)
    EXPECT_NEAR(out[i], std::log(2.0 * kTimingWindowLength + 1 + i), 1e-5);
  r.push(0.0, 1.0);  // unusable samples are dropped
  r.push(1.0, -1.0);
  r.push(NAN, 1.0);
  float again[kTimingWindowLength];
  r.snapshot(again);
  for (int i = 0; i < kTimingWindowLength; ++i) EXPECT_EQ(again[i], out[i]);
}

TEST(TimingWindows, KeysAreIndependent) {
  TimingWindows w;
  w.at(Collective::AllReduce, 4096).push(3.0, 1.0);
  EXPECT_EQ(w.at(Collective::AllReduce, 4096).count(), 1);
  EXPECT_EQ(w.at(Collective::AllReduce, 4095 + 4096).count(), 1);  // same log2 bucket
  EXPECT_EQ(w.at(Collective::AllGather, 4096).count(), 0);
  EXPECT_EQ(w.at(Collective::AllReduce, 1 << 20).count(), 0);
}

TEST(Workload, ParsesBothKeys) {
  auto wl = parseWorkloadContext("intensity=12.5,batch=32");
  ASSERT_TRUE(wl.ok()) << wl.error();
  EXPECT_DOUBLE_EQ(*wl->intensity, 12.5);
  EXPECT_EQ(*wl->batch, 32);
  auto one = parseWorkloadContext("batch=4;");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->intensity);
  EXPECT_TRUE(parseWorkloadContext("")->empty());
}

TEST(Workload, RejectsBadInput) {
  EXPECT_FALSE(parseWorkloadContext("intensity=-1").ok());
  EXPECT_FALSE(parseWorkloadContext("batch=2.5").ok());
  EXPECT_FALSE(parseWorkloadContext("speed=3").ok());
  EXPECT_FALSE(parseWorkloadContext("intensity").ok());
  EXPECT_FALSE(parseWorkloadContext("intensity=nan").ok());
}

TEST(ConfigEncoding, OneHotAndChannels) {
  float cfg[kConfigFeatures];
  encodeConfig(Algo::Ring, Proto::LL128, 16, cfg);
  EXPECT_EQ(cfg[1], 1.0f);
  EXPECT_EQ(cfg[8], 1.0f);
  EXPECT_FLOAT_EQ(cfg[10], 4.0f / 6);
  EXPECT_EQ(cfg[11], 1.0f);
  encodeConfig(Algo::Tree, Proto::LL, 0, cfg);
  EXPECT_EQ(cfg[11], 0.0f);
}

}  // namespace
}  // namespace dynamiccl
