#include <gtest/gtest.h>

#include "features/features.h"

namespace dynamiccl {

TEST(Names, ParseAcceptsNcclAndOurSpellings) {
  EXPECT_EQ(parseAlgo("NVLS_TREE"), Algo::NvlsTree);
  EXPECT_EQ(parseAlgo("nvlstree"), Algo::NvlsTree);
  EXPECT_EQ(parseAlgo("CollNetDirect"), Algo::CollNetDirect);
  EXPECT_EQ(parseAlgo("default"), Algo::Default);
  EXPECT_FALSE(parseAlgo("rign").has_value());
  EXPECT_EQ(parseProto("Simple"), Proto::Simple);
  EXPECT_EQ(parseProto("LL128"), Proto::LL128);
  EXPECT_FALSE(parseProto("ll64").has_value());
  EXPECT_EQ(parseCollective("AllReduce"), Collective::AllReduce);
  EXPECT_EQ(parseCollective("reduce_scatter"), Collective::ReduceScatter);
  EXPECT_FALSE(parseCollective("alltoall").has_value());
}

TEST(Names, RoundTrip) {
  for (int a = 0; a < kNumAlgos; ++a) EXPECT_EQ(parseAlgo(algoName(Algo(a))), Algo(a));
  for (int p = 0; p < kNumProtos; ++p) EXPECT_EQ(parseProto(protoNcclName(Proto(p))), Proto(p));
  for (int c = 0; c < kNumCollectives; ++c)
    EXPECT_EQ(parseCollective(collectiveName(Collective(c))), Collective(c));
}

TEST(SizeBucket, Boundaries) {
  EXPECT_EQ(SizeBucket::of(0), 0);
  EXPECT_EQ(SizeBucket::of(1), 1);
  EXPECT_EQ(SizeBucket::of(2), 2);
  EXPECT_EQ(SizeBucket::of(3), 2);
  EXPECT_EQ(SizeBucket::of(4), 3);
  EXPECT_EQ(SizeBucket::of(~uint64_t{0}), 64);
  for (int b = 1; b < SizeBucket::kCount; ++b) {
    EXPECT_EQ(SizeBucket::of(SizeBucket::lowest(b)), b);
    if (b > 1) {
      EXPECT_EQ(SizeBucket::of(SizeBucket::lowest(b) - 1), b - 1);
    }
  }
}

}  // namespace dynamiccl
