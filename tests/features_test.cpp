#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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
  for (int c = 0; c < kNumCollectives; ++c)
    EXPECT_EQ(parseCollective(collectiveNcclName(Collective(c))), Collective(c));
  EXPECT_EQ(collectiveNcclName(Collective::ReduceScatter), "ReduceScatter");  // ncclFuncToString's spelling
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

// One size format for tables and plots: exact units whole, others one decimal, ranges of a bucket "..<".
TEST(SizeText, OneFormat) {
  EXPECT_EQ(sizeText(8), "8 B");
  EXPECT_EQ(sizeText(1023), "1023 B");
  EXPECT_EQ(sizeText(1024), "1K");
  EXPECT_EQ(sizeText(1536), "1.5K");
  EXPECT_EQ(sizeText(4095), "4.0K");
  EXPECT_EQ(sizeText(3ull << 20), "3M");
  EXPECT_EQ(sizeText((1ull << 30) + (1ull << 29)), "1.5G");
  EXPECT_EQ(sizeText((1ull << 30) + 1), "1.0G");
  EXPECT_EQ(sizeText((1ull << 20) - 1), "1.0M") << "never 1024.0K";
  EXPECT_EQ(sizeText((1ull << 30) - 1), "1.0G");
  EXPECT_EQ(sizeRangeText(8, 15), "8 B..<16 B");
  EXPECT_EQ(sizeRangeText(1, 1), "1 B..<2 B") << "the one-byte bucket";
  EXPECT_EQ(sizeRangeText(1024, 2047), "1K..<2K");
  EXPECT_EQ(sizeRangeText(1024, 1500), "1K..1.5K");
  EXPECT_EQ(sizeRangeText(1ull << 20, UINT64_MAX), "1M..");
}

// The plots' formatter (scripts/plot_sizes.py) writes every size as the tables do.
TEST(SizeText, PlotsWriteSizesAsTablesDo) {
  if (std::system("python3 -c '' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const std::vector<uint64_t> sizes = {0, 8, 1000, 1024, 1536, 4095, 65536, (1ull << 20) - 1, 3ull << 20, (3ull << 30) / 2,
                                       (1ull << 40) + 1, 1ull << 62};
  std::string cmd = "python3 " DYNAMICCL_SOURCE_DIR "/scripts/plot_sizes.py";
  for (uint64_t b : sizes) cmd += " " + std::to_string(b);
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[64];
  for (uint64_t b : sizes) {
    ASSERT_NE(std::fgets(line, sizeof line, p), nullptr) << "python stopped before " << b;
    std::string got(line);
    if (!got.empty() && got.back() == '\n') got.pop_back();
    EXPECT_EQ(got, sizeText(b)) << b;
  }
  EXPECT_EQ(pclose(p), 0);
}

}  // namespace dynamiccl
