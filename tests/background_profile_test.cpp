// A profile over 1 MiB is parsed off NCCL's init path: the communicator runs NCCL's choices until the
// profile's first call, then the profile's, on every rank at the same call, whenever the parse ends.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::Choice;
using harness::LogCapture;
using harness::ScopedEnv;
using testing::openPlugin;
using testing::TempFile;

constexpr uint64_t kFirstCall = 1000;  // kBackgroundProfileFirstCall
const Choice kRule{1, 0, 4};           // ring/ll on 4 channels, where NCCL picks ring/simple

// `rule` among enough allgather rules (disjoint sizes) to pass 1 MiB; `tail` closes the document.
std::string bigProfile(const std::string& rule, const std::string& tail = "]}", size_t bytes = (1u << 20) + 4096) {
  std::string text = R"({"format":"dynamiccl-profile","version":1,"name":"big","rules":[)" + rule;
  for (int i = 0; text.size() < bytes; ++i)
    text += R"(,{"collective":"allgather","bytes":[)" + std::to_string(i * 100 + 1) + "," +
            std::to_string(i * 100 + 50) + R"(],"algo":"tree","proto":"ll128","channels":2})";
  return text + tail;
}
const std::string kBadTail = R"(,{"collective":"allreduce","algo":"warp","proto":"ll"}]})";  // no such algorithm
const std::string kAllreduceRule = R"({"collective":"allreduce","algo":"ring","proto":"ll","channels":4})";

TEST(BackgroundProfile, NcclsChoicesUntilTheFirstCallThenTheProfilesOnEveryCommunicator) {
  TempFile big(bigProfile(kAllreduceRule));
  ScopedEnv env("DYNAMICCL_PROFILE", big.path().c_str());
  LogCapture::clear();
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  harness::CommSpec a, b;
  b.commId = a.commId + 1;
  auto first = lib->init(a);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(testing::logLinesMentioning("is parsed off NCCL's init path: its rules apply from call 1000"), 1u)
      << ::testing::PrintToString(LogCapture::lines());
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t i = 0; i < kFirstCall; ++i) {
    ASSERT_EQ((*first)->decide(4, 4096, table), (Choice{1, 2, 0})) << "call " << i;
    if (i == kFirstCall / 2) {  // a communicator made meanwhile counts its own calls
      auto second = lib->init(b);
      ASSERT_TRUE(second.ok());
      for (uint64_t j = 0; j < kFirstCall; ++j) ASSERT_EQ((*second)->decide(4, 4096, table), (Choice{1, 2, 0}));
      EXPECT_EQ((*second)->decide(4, 4096, table), kRule);
    }
  }
  EXPECT_EQ((*first)->decide(4, 4096, table), kRule);
  EXPECT_EQ((*first)->decide(4, 1 << 20, table), kRule);
  EXPECT_EQ(testing::logLinesMentioning("parsed in "), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("off NCCL's init path; its rules apply from call 1000"), 1u);
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 0u) << ::testing::PrintToString(LogCapture::lines());
}

// The same through the v2 entry point, which takes the algorithm and protocol as outputs.
TEST(BackgroundProfile, TheOldestTunerInterfaceSwitchesAtTheSameCall) {
  TempFile big(bigProfile(kAllreduceRule));
  ScopedEnv env("DYNAMICCL_PROFILE", big.path().c_str());
  auto lib = openPlugin(2);
  ASSERT_TRUE(lib);
  ASSERT_EQ(lib->version(), 2);
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t i = 0; i < kFirstCall; ++i) ASSERT_EQ((*comm)->decide(4, 4096, table), (Choice{1, 2, 0})) << i;
  EXPECT_EQ((*comm)->decide(4, 4096, table), kRule);
}

// A file of exactly 1 MiB is parsed at init, and its rules apply from the first call.
TEST(BackgroundProfile, AProfileUpToOneMiBAppliesFromTheFirstCall) {
  std::string text = bigProfile(kAllreduceRule);
  const std::string tail = "]}";
  text.resize((1u << 20) - tail.size());
  text.resize(text.rfind(",{"));
  text += tail;
  text += std::string((1u << 20) - text.size(), ' ');
  ASSERT_EQ(text.size(), 1u << 20);
  TempFile file(text);
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ((*comm)->decide(4, 4096, harness::ncclPicks(1, 2)), kRule);
  EXPECT_EQ(testing::logLinesMentioning("read in "), 1u) << ::testing::PrintToString(LogCapture::lines());
}

// A big file that turns out bad: NCCL's choices before and after the first call, one warning.
TEST(BackgroundProfile, ABadBigProfileLeavesNcclsChoicesAndSaysWhy) {
  TempFile big(bigProfile(kAllreduceRule, kBadTail));
  ScopedEnv env("DYNAMICCL_PROFILE", big.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", nullptr);
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t i = 0; i < kFirstCall + 100; ++i) ASSERT_EQ((*comm)->decide(4, 4096, table), (Choice{1, 2, 0})) << i;
  EXPECT_EQ(testing::logLinesMentioning("profile not used, NCCL's own choices stand"), 1u) << ::testing::PrintToString(LogCapture::lines());
}

// DYNAMICCL_STRICT=1 fails a communicator's init on a bad profile: init then waits for the parse.
TEST(BackgroundProfile, StrictModeParsesAtInitAndFailsOnABadBigProfile) {
  TempFile big(bigProfile(kAllreduceRule, kBadTail));
  ScopedEnv env("DYNAMICCL_PROFILE", big.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_FALSE(comm.ok());
}

// Communicators finalized before their profile's first call, even before the parse ends, leave the
// profile to a later communicator, which switches as the first would have.
TEST(BackgroundProfile, CommunicatorsFinalizedBeforeTheSwitchLeaveTheProfileToTheNext) {
  TempFile big(bigProfile(kAllreduceRule));
  ScopedEnv env("DYNAMICCL_PROFILE", big.path().c_str());
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  for (int i = 0; i < 3; ++i) {
    auto comm = lib->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
  }  // finalized at once
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t i = 0; i < kFirstCall; ++i) ASSERT_EQ((*comm)->decide(4, 4096, table), (Choice{1, 2, 0}));
  EXPECT_EQ((*comm)->decide(4, 4096, table), kRule);
}

// NCCL dlcloses the library after its last communicator, here while the parse still runs (16 MB: a
// few hundred ms). The parse holds the library, so its code stays mapped; the next load finds the
// profile parsed and switches at call 1000.
TEST(BackgroundProfile, TheLibraryClosedDuringAParseStaysLoadedUntilTheParseEnds) {
  TempFile big(bigProfile(kAllreduceRule, "]}", 16u << 20));
  ScopedEnv env("DYNAMICCL_PROFILE", big.path().c_str());
  {
    auto lib = openPlugin();
    ASSERT_TRUE(lib);
    auto comm = lib->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
  }  // finalized, then dlclosed, with the parse under way
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the parse ends in a library nobody else holds
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t i = 0; i < kFirstCall; ++i) ASSERT_EQ((*comm)->decide(4, 4096, table), (Choice{1, 2, 0}));
  EXPECT_EQ((*comm)->decide(4, 4096, table), kRule);
}

}  // namespace
}  // namespace dynamiccl
