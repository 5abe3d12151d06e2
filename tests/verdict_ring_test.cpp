// The verdicts' memory in the coordination backend is a ring of eight records: a thousand jobs in one
// scope keep eight records, each job reads one ring (one request) and resumes the newest verdict of
// every candidate any job wrote; jobs that end together both stay; a planted record is read past and
// replaced in turn. On the shared directory and on a real etcd (skipped where none is installed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "plugin/online/verdict_record.h"
#include "tests/etcd_fixture.h"

namespace dynamiccl::plugin {
namespace {

constexpr int kCandidates = 40;  // distinct candidates the jobs take turns at

// Counts the backend operations a job makes: its work must not grow with the jobs before it.
class CountingStore : public coord::RecordStore {
 public:
  explicit CountingStore(coord::RecordStore& inner) : inner_(inner) {}
  coord::PublishResult publishBy(uint64_t c, uint64_t b, const std::string& bytes, coord::Deadline by) override {
    ++ops;
    return inner_.publishBy(c, b, bytes, by);
  }
  Expected<std::optional<std::string>> read(uint64_t c, uint64_t b) override {
    ++ops;
    return inner_.read(c, b);
  }
  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t c, const std::vector<uint64_t>& b,
                                                             size_t presence, coord::Deadline by = coord::kNoDeadline) override {
    ++ops;
    return inner_.readMany(c, b, presence, by);
  }
  Expected<bool> removeIf(uint64_t c, uint64_t b, const std::string& expected, coord::Deadline by) override {
    ++ops;
    return inner_.removeIf(c, b, expected, by);
  }
  Expected<coord::RecordsAndCount> readAndCount(uint64_t c, const std::vector<uint64_t>& bs, const std::string& s,
                                                const std::string& g) override {
    ++ops;
    return inner_.readAndCount(c, bs, s, g);
  }
  Expected<coord::SetCount> joinSetBy(uint64_t c, const std::string& s, const std::string& g, const std::string& m,
                                      const std::string& bytes, coord::Deadline by) override {
    return inner_.joinSetBy(c, s, g, m, bytes, by);
  }
  Expected<std::optional<coord::SetMember>> memberOutside(uint64_t c, const std::string& s, const std::string& g) override {
    return inner_.memberOutside(c, s, g);
  }
  std::string describe() const override { return inner_.describe(); }
  int ops = 0;

 private:
  coord::RecordStore& inner_;
};

VerdictScope scope() {
  VerdictScope s;
  s.fingerprint = R"({"gpu_cc":90})";
  s.ncclVersion = "2.28.9";
  s.nRanks = 16;
  s.nNodes = 2;
  return s;
}

// Job `job`'s verdict: candidate job % kCandidates, its sample count the job's number.
store::VerdictRow verdictOf(int job) {
  store::VerdictRow r;
  r.collective = "allreduce";
  r.min_bytes = int64_t{1024} << (job % kCandidates % 20);
  r.max_bytes = r.min_bytes * 2 - 1;
  r.algo = job % kCandidates < 20 ? "TREE" : "RING";
  r.proto = "LL";
  r.base_algo = "RING";
  r.base_proto = "SIMPLE";
  r.n = job;
  r.base_n = job;
  r.mean_log_us = r.base_mean_log_us = 1;
  r.var_log_us = r.base_var_log_us = 0.01;
  r.gain = r.gain_low = r.gain_high = NAN;
  r.state = "testing";
  r.ts_ns = int64_t{job} * 1'000'000;
  return r;
}

coord::Deadline inOneSecond() { return std::chrono::steady_clock::now() + std::chrono::seconds(1); }

// A thousand jobs, each resuming then publishing; the backend's records counted by `records`.
void thousandJobs(coord::RecordStore& backend, const std::function<size_t()>& records) {
  const VerdictScope s = scope();
  std::map<std::string, int64_t> newest;  // candidate -> the last job that wrote it
  size_t mostRecords = 0;
  int mostOps = 0;
  for (int job = 1; job <= 1000; ++job) {
    CountingStore counted(backend);
    const std::vector<store::VerdictRow> resumed = readTravelledVerdicts(counted, s);
    ASSERT_EQ(resumed.size(), newest.size()) << "job " << job;
    for (const store::VerdictRow& r : resumed)
      ASSERT_EQ(r.n, newest[r.algo + std::to_string(r.min_bytes)]) << "job " << job << ": not the newest verdict";
    const store::VerdictRow mine = verdictOf(job);
    auto slot = publishVerdicts(counted, s, {mine}, inOneSecond());
    ASSERT_TRUE(slot.ok()) << "job " << job << ": " << slot.error();
    EXPECT_EQ(*slot, static_cast<uint64_t>((job - 1) % 8 + 1));
    newest[mine.algo + std::to_string(mine.min_bytes)] = job;
    if (job <= 16 || job % 25 == 0) mostRecords = std::max(mostRecords, records());  // etcdctl is slow to ask
    mostOps = std::max(mostOps, counted.ops);
  }
  EXPECT_EQ(mostRecords, 8u) << "the memory is the ring's eight records, whatever the jobs";
  EXPECT_LE(mostOps, 4) << "a job reads the ring once to resume, and once, removes and publishes at finalize";
  EXPECT_EQ(newest.size(), static_cast<size_t>(kCandidates));
}

size_t filesIn(const std::filesystem::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n;
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/dynamiccl-ring-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

std::filesystem::path namespaceDir(const std::string& root) {
  char b[32];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(verdictNamespace(scope())));
  return std::filesystem::path(root) / b;
}

TEST(VerdictRing, AThousandJobsKeepEightRecordsAndTheNewestVerdictOfEveryCandidateOnADirectory) {
  TempDir dir;
  auto backend = coord::openDirStore(dir.path, true);
  ASSERT_TRUE(backend.ok()) << backend.error();
  thousandJobs(**backend, [&] { return filesIn(namespaceDir(dir.path)); });
}

TEST(VerdictRing, AThousandJobsKeepEightRecordsAndTheNewestVerdictOfEveryCandidateOnEtcd) {
  if (testing::etcdBinary().empty() || testing::etcdctlBinary().empty()) GTEST_SKIP() << "no etcd installed";
  testing::EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  coord::EtcdOptions o;
  o.endpoints = {etcd.endpoint()};
  o.prefix = "ring";
  auto backend = coord::openEtcdStore(o);
  ASSERT_TRUE(backend.ok()) << backend.error();
  thousandJobs(**backend, [&] {
    const std::string out = etcd.ctlOutput("get --prefix ring/ --keys-only");
    size_t keys = 0;
    for (size_t at = out.find("ring/"); at != std::string::npos; at = out.find("ring/", at + 1)) ++keys;
    return keys;
  });
}

TEST(VerdictRing, JobsEndingTogetherBothStayAndAPlantedRecordIsReadPastThenReplaced) {
  TempDir dir;
  auto backend = coord::openDirStore(dir.path, true);
  ASSERT_TRUE(backend.ok()) << backend.error();
  const VerdictScope s = scope();
  ASSERT_TRUE(publishVerdicts(**backend, s, {verdictOf(1)}, inOneSecond()).ok());
  const auto ns = namespaceDir(dir.path);
  std::ofstream(ns / "b2") << R"({"format":"dynamiccl-verdicts","version":)";  // planted where job 2 writes

  // Jobs 2 and 3 both started after job 1; each folds what the ring holds when it ends.
  EXPECT_EQ(readTravelledVerdicts(**backend, s).size(), 1u);
  auto second = publishVerdicts(**backend, s, {verdictOf(2)}, inOneSecond());
  auto third = publishVerdicts(**backend, s, {verdictOf(3)}, inOneSecond());
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_TRUE(third.ok()) << third.error();
  EXPECT_EQ(*second, 2u) << "the planted record's slot is replaced in its turn";
  EXPECT_EQ(*third, 3u);
  std::ifstream planted(ns / "b2");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(planted), {}).find(R"("sequence":2)") != std::string::npos, true);
  EXPECT_EQ(readTravelledVerdicts(**backend, s).size(), 3u) << "the newest record folds all three jobs";

  // A record whose slot changed between the read and the removal is left alone.
  std::ofstream(ns / "b4") << "another job's bytes";
  EXPECT_FALSE(*(*backend)->removeIf(verdictNamespace(s), 4, "what this job read", inOneSecond()));
  std::ifstream kept(ns / "b4");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "another job's bytes");
}

}  // namespace
}  // namespace dynamiccl::plugin
