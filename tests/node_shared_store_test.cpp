// One reader per node: of several processes' stores on one node, only the holder of a communicator's
// lock polls the shared store, the others' polls read its copy; a rank waiting for a record it does
// not find on the node asks the store; the role passes on when its holder goes; jobs never read each
// other's copies; a lock path that cannot be a lock leaves each process polling for itself.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "coord/coord.h"

namespace dynamiccl::coord {
namespace {

namespace fs = std::filesystem;

// The shared store (a directory standing in for etcd), its requests counted.
class CountedStore : public RecordStore {
 public:
  explicit CountedStore(std::unique_ptr<RecordStore> inner) : inner_(std::move(inner)) {}
  PublishResult publishBy(uint64_t c, uint64_t b, const std::string& bytes, Deadline by) override {
    ++requests;
    return inner_->publishBy(c, b, bytes, by);
  }
  Expected<std::optional<std::string>> read(uint64_t c, uint64_t b) override {
    ++requests;
    return inner_->read(c, b);
  }
  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t c, const std::vector<uint64_t>& bs, size_t presence,
                                                             Deadline by) override {
    ++requests;
    return inner_->readMany(c, bs, presence, by);
  }
  Expected<SetCount> joinSetBy(uint64_t c, const std::string& s, const std::string& g, const std::string& m,
                               const std::string& bytes, Deadline by) override {
    ++requests;
    return inner_->joinSetBy(c, s, g, m, bytes, by);
  }
  Expected<RecordsAndCount> readAndCount(uint64_t c, const std::vector<uint64_t>& bs, const std::string& s,
                                         const std::string& g) override {
    ++requests;
    return inner_->readAndCount(c, bs, s, g);
  }
  Expected<std::optional<SetMember>> memberOutside(uint64_t c, const std::string& s, const std::string& g) override {
    ++requests;
    return inner_->memberOutside(c, s, g);
  }
  std::string describe() const override { return "the shared test store"; }
  std::atomic<int> requests{0};

 private:
  std::unique_ptr<RecordStore> inner_;
};

struct Node : ::testing::Test {
  void SetUp() override {
    char tmpl[] = "/tmp/dynamiccl-nodereads-XXXXXX";
    root = mkdtemp(tmpl);
    auto inner = openDirStore(root + "/shared", false);
    ASSERT_TRUE(inner.ok()) << inner.error();
    shared = std::make_shared<CountedStore>(std::move(inner.value()));
    base = root + "/node";
  }
  void TearDown() override { fs::remove_all(root); }
  std::unique_ptr<RecordStore> process(const std::string& job = "job-a") {
    auto s = nodeSharedStore(shared, base, job);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
    return s.ok() ? std::move(s.value()) : nullptr;
  }
  std::string root, base;
  std::shared_ptr<CountedStore> shared;
};

constexpr uint64_t kComm = 0xabc;

TEST_F(Node, OnlyTheReaderPollsTheStoreAndTheOthersReadItsCopy) {
  auto a = process(), b = process(), c = process();
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(shared->publish(kComm, 1000, "table-1000"), PublishResult::Won);
  shared->requests = 0;
  auto first = a->pollMany(kComm, {1000, 2000}, 0);  // the first to poll takes the lock
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)[0], "table-1000");
  EXPECT_FALSE((*first)[1]);
  EXPECT_EQ(shared->requests, 1);
  for (int poll = 0; poll < 10; ++poll)
    for (RecordStore* other : {b.get(), c.get()}) {
      auto got = other->pollMany(kComm, {1000, 2000}, 0);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ((*got)[0], "table-1000");
      EXPECT_FALSE((*got)[1]);
    }
  EXPECT_EQ(shared->requests, 1) << "20 polls of the node's other processes asked the store";
  // Presence of the newest, as a rank's read-ahead asks it: answered on the node.
  auto present = b->pollMany(kComm, {1000}, 1);
  ASSERT_TRUE(present.ok());
  EXPECT_EQ((*present)[0], "");
  // Another communicator's reader is whoever polls it first.
  auto other = b->pollMany(kComm + 1, {1000}, 0);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(shared->requests, 2);
}

TEST_F(Node, AWaitingRankAsksTheStoreForWhatTheNodeLacksAndTheNodeKeepsIt) {
  auto a = process(), b = process(), c = process();
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(a->pollMany(kComm, {1000}, 0).ok());  // a reads for the node
  ASSERT_EQ(shared->publish(kComm, 1000, "table-1000"), PublishResult::Won);
  shared->requests = 0;
  auto polled = b->pollMany(kComm, {1000}, 0);  // the reader has not polled since: not on the node yet
  ASSERT_TRUE(polled.ok());
  EXPECT_FALSE((*polled)[0]);
  EXPECT_EQ(shared->requests, 0);
  auto waited = b->readMany(kComm, {1000}, 0, kNoDeadline);  // at its boundary: the store is asked
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ((*waited)[0], "table-1000");
  EXPECT_EQ(shared->requests, 1);
  auto later = c->readMany(kComm, {1000}, 0, kNoDeadline);  // kept on the node by b
  ASSERT_TRUE(later.ok());
  EXPECT_EQ((*later)[0], "table-1000");
  EXPECT_EQ(shared->requests, 1);
}

TEST_F(Node, TheLeadersOwnPublishIsOnTheNodeAtOnce) {
  auto a = process(), b = process();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->pollMany(kComm, {1000}, 0).ok());
  ASSERT_EQ(b->publish(kComm, 1000, "leader's"), PublishResult::Won);
  ASSERT_EQ(b->publish(kComm, 2000, "x"), PublishResult::Won);
  EXPECT_EQ(a->publish(kComm, 2000, "y"), PublishResult::Lost);  // write-once through to the store
  shared->requests = 0;
  auto got = b->pollMany(kComm, {1000, 2000}, 0);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0], "leader's");
  EXPECT_EQ((*got)[1], "x");
  EXPECT_EQ(shared->requests, 0);
}

TEST_F(Node, TheRolePassesOnWhenItsHolderGoes) {
  auto a = process(), b = process();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->pollMany(kComm, {1000}, 0).ok());
  shared->requests = 0;
  ASSERT_TRUE(b->pollMany(kComm, {1000}, 0).ok());
  EXPECT_EQ(shared->requests, 0);
  a.reset();  // the reader's process ends: the kernel drops its lock
  ASSERT_EQ(shared->publish(kComm, 1000, "table-1000"), PublishResult::Won);
  shared->requests = 0;
  auto got = b->pollMany(kComm, {1000}, 0);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0], "table-1000");
  EXPECT_EQ(shared->requests, 1);
}

TEST_F(Node, AnotherJobNeverReadsThisJobsCopy) {
  auto a = process("job-a"), b = process("job-b");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(shared->publish(kComm, 1000, "job-a's table"), PublishResult::Won);
  ASSERT_TRUE(a->pollMany(kComm, {1000}, 0).ok());  // kept in job a's directory
  shared->requests = 0;
  auto got = b->pollMany(kComm, {1000}, 0);  // the first of job b: its own reader, asking the store
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(shared->requests, 1);
}

TEST_F(Node, ALockPathThatIsNoFileLeavesEveryProcessPollingItself) {
  auto a = process(), b = process();
  ASSERT_TRUE(a && b);
  // Whatever sits where the lock goes (a FIFO, a directory): nobody waits on it, each asks the store.
  for (const auto& entry : fs::recursive_directory_iterator(base))
    if (entry.is_directory() && entry.path().filename() == "readers") {
      ASSERT_EQ(mkfifo((entry.path() / "0000000000000abc").c_str(), 0600), 0);
      ASSERT_EQ(mkdir((entry.path() / "0000000000000abd").c_str(), 0700), 0);
    }
  shared->requests = 0;
  for (uint64_t comm : {kComm, kComm + 1}) {
    ASSERT_TRUE(a->pollMany(comm, {1000}, 0).ok());
    ASSERT_TRUE(b->pollMany(comm, {1000}, 0).ok());
  }
  EXPECT_EQ(shared->requests, 4);
}

TEST_F(Node, ANodeDirectoryOthersMayWriteIsRefused) {
  ASSERT_EQ(mkdir(base.c_str(), 0777), 0);
  ASSERT_EQ(chmod(base.c_str(), 0777), 0);
  auto s = nodeSharedStore(shared, base, "job-a");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("private"), std::string::npos) << s.error();
}

TEST_F(Node, TheNodeKeepsTheNewestRecordsAndTheRestComeFromTheStore) {
  auto a = process(), b = process();
  ASSERT_TRUE(a && b);
  for (uint64_t e = 1; e <= 100; ++e) {
    ASSERT_EQ(shared->publish(kComm, e * 1000, "t" + std::to_string(e)), PublishResult::Won);
    ASSERT_TRUE(a->pollMany(kComm, {e * 1000}, 0).ok());
  }
  shared->requests = 0;
  auto newest = b->pollMany(kComm, {100000}, 0);
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ((*newest)[0], "t100");
  auto oldest = b->pollMany(kComm, {1000}, 0);
  ASSERT_TRUE(oldest.ok());
  EXPECT_FALSE((*oldest)[0]) << "the node keeps every record for the job's life";
  EXPECT_EQ(shared->requests, 0);
  auto waited = b->readMany(kComm, {1000}, 0, kNoDeadline);
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ((*waited)[0], "t1");
}

TEST_F(Node, AProcesssAgentAndHotPathShareItsStoreWhileTheLeaderPublishes) {
  // As in the plugin: one process's store polled by its epoch agent while its hot path waits at a
  // boundary (readMany), another process's polls, and the leader publishing; every read of a boundary
  // gives the one record published there (run under TSan: scripts/sanitize.sh thread).
  auto a = process(), b = process();
  ASSERT_TRUE(a && b);
  std::atomic<bool> stop{false}, wrong{false};
  const auto check = [&](uint64_t boundary, const std::optional<std::string>& got) {
    if (got && *got != "t" + std::to_string(boundary)) wrong = true;
  };
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (uint64_t e = 1; e <= 200; ++e) (void)shared->publish(kComm, e * 1000, "t" + std::to_string(e * 1000));
    stop = true;
  });
  for (RecordStore* s : {a.get(), a.get(), b.get()})
    threads.emplace_back([&, s, waits = s == a.get() && threads.size() == 2] {
      for (uint64_t e = 1; !stop.load(); e = e % 200 + 1) {
        const uint64_t boundary = e * 1000;
        auto got = waits ? s->readMany(kComm, {boundary}, 0, kNoDeadline) : s->pollMany(kComm, {boundary}, 0);
        if (got.ok()) check(boundary, (*got)[0]);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_FALSE(wrong.load()) << "a boundary read another boundary's record";
}

}  // namespace
}  // namespace dynamiccl::coord
