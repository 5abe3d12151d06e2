// The tuner's decision log under a concurrent writer (getCollInfo's thread) and reader (the profiler's
// worker joining observations): a decision found is always one the writer logged whole, never a mix
// of two calls. Under ThreadSanitizer this also checks the seqlock payload is race-free.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "plugin/decision_log.h"

namespace dynamiccl::plugin {
namespace {

// Every field a function of the call index: a torn read shows as a mismatch.
uint64_t bytesOf(uint64_t call) { return 1024 + 8 * call; }
Algo algoOf(uint64_t call) { return static_cast<Algo>(static_cast<int>(call % (kNumAlgos + 1)) - 1); }
Proto protoOf(uint64_t call) { return static_cast<Proto>(static_cast<int>(call % (kNumProtos + 1)) - 1); }
int channelsOf(uint64_t call) { return static_cast<int>(call % 64); }
uint64_t chunkOf(uint64_t call) { return 4096 * (call + 1); }
DecisionSource sourceOf(uint64_t call) { return static_cast<DecisionSource>(call % 3); }

void expectWhole(const LoggedDecision& d, uint64_t call) {
  ASSERT_EQ(d.call, call);
  ASSERT_EQ(d.nBytes, bytesOf(call));
  ASSERT_EQ(d.algo, algoOf(call));
  ASSERT_EQ(d.proto, protoOf(call));
  ASSERT_EQ(d.nChannels, channelsOf(call));
  ASSERT_EQ(d.chunkBytes, chunkOf(call));
  ASSERT_EQ(d.source, sourceOf(call));
}

TEST(ConcurrencyDecisionLog, ReaderSeesOnlyWholeDecisionsWhileTheTunerWrites) {
  constexpr int kColl = 4;
  constexpr uint64_t kCalls = 100'000;
  auto log = std::make_unique<DecisionLog>();
  std::atomic<uint64_t> logged{0};
  std::thread writer([&] {
    for (uint64_t call = 0; call < kCalls; ++call) {
      ASSERT_EQ(log->record(kColl, bytesOf(call), algoOf(call), protoOf(call), channelsOf(call), chunkOf(call),
                            sourceOf(call)),
                call);
      logged.store(call + 1, std::memory_order_release);
    }
  });
  uint64_t found = 0;
  for (uint64_t n = 0; n < kCalls;) {
    n = logged.load(std::memory_order_acquire);
    // The slots the writer is overwriting right now: recent calls, some mid-write.
    for (uint64_t back = 1; back <= DecisionLog::kSlots && back <= n; ++back) {
      LoggedDecision d;
      if (!log->find(kColl, n - back, bytesOf(n - back), &d)) continue;
      ++found;
      expectWhole(d, n - back);
      if (::testing::Test::HasFatalFailure()) break;
    }
    if (::testing::Test::HasFatalFailure()) break;
  }
  writer.join();
  // Quiet again: the last kSlots calls are all there, and a size mismatch is refused.
  for (uint64_t call = kCalls - DecisionLog::kSlots; call < kCalls; ++call) {
    LoggedDecision d;
    ASSERT_TRUE(log->find(kColl, call, bytesOf(call), &d)) << call;
    expectWhole(d, call);
    EXPECT_FALSE(log->find(kColl, call, bytesOf(call) + 1, &d));
  }
  LoggedDecision d;
  EXPECT_FALSE(log->find(kColl, kCalls - DecisionLog::kSlots - 1, bytesOf(kCalls - DecisionLog::kSlots - 1), &d));
  EXPECT_GT(found, 0u);
}

}  // namespace
}  // namespace dynamiccl::plugin
