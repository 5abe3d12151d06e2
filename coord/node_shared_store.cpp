// One reader per node: of the processes on a node that follow one communicator, the one holding that
// communicator's lock file polls the store; what it reads it keeps in a directory on the node, where
// the others' polls read it without asking the store. Steady requests then grow with the nodes, not
// the ranks (8 GPUs a node: an eighth). The lock is flock(2): the kernel lets it go when its holder
// exits, and the next poll of another process takes it.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>

#include "coord/record_seal.h"
#include "coord/record_store.h"
#include "features/features.h"

namespace dynamiccl::coord {
namespace {

// Records the reader keeps on the node per communicator, the newest; older ones are removed (a rank
// further behind reads them from the store when it waits for them).
constexpr size_t kKeptOnNode = 64;
// A job's directory nothing was written in for this long is an ended job's: removed when another opens.
constexpr auto kEndedAfter = std::chrono::hours(24);

class NodeSharedStore : public RecordStore {
 public:
  NodeSharedStore(std::shared_ptr<RecordStore> inner, std::unique_ptr<RecordStore> node, std::string lockDir)
      : inner_(std::move(inner)), node_(std::move(node)), lockDir_(std::move(lockDir)) {}
  ~NodeSharedStore() override {
    for (const auto& [commId, fd] : locks_) close(fd);
  }

  PublishResult publishBy(uint64_t commId, uint64_t boundary, const std::string& bytes, Deadline by) override {
    const PublishResult r = inner_->publishBy(commId, boundary, bytes, by);
    if (r == PublishResult::Won) keep(commId, boundary, bytes);  // the store's record now: the node reads it here
    return r;
  }

  // The store's own answer (a rank checking what the store holds now, not what the node kept).
  Expected<std::optional<std::string>> read(uint64_t commId, uint64_t boundary) override {
    auto r = inner_->read(commId, boundary);
    if (r.ok() && r->has_value()) keep(commId, boundary, **r);
    return r;
  }

  // A rank waiting for records: what the node holds, then the rest from the store.
  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                             size_t presence, Deadline by) override {
    auto here = node_->readMany(commId, boundaries, presence, by);
    if (!here.ok()) return readAndKeep(commId, boundaries, presence, by);
    std::vector<uint64_t> missing;
    std::vector<size_t> at;
    size_t missingPresence = 0;
    for (size_t i = 0; i < boundaries.size(); ++i)
      if (!(*here)[i]) {
        if (i < presence) ++missingPresence;  // presence items come first, so they stay first
        missing.push_back(boundaries[i]);
        at.push_back(i);
      }
    if (missing.empty()) return here;
    auto there = readAndKeep(commId, missing, missingPresence, by);
    if (!there.ok()) return there;
    for (size_t j = 0; j < at.size(); ++j) (*here)[at[j]] = std::move((*there)[j]);
    return here;
  }

  // A poll: the node's reader asks the store, the node's other processes read what it kept.
  Expected<std::vector<std::optional<std::string>>> pollMany(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                             size_t presence, Deadline by) override {
    if (isReader(commId)) return readAndKeep(commId, boundaries, presence, by);
    auto here = node_->readMany(commId, boundaries, presence, by);
    if (!here.ok()) return readAndKeep(commId, boundaries, presence, by);  // the node's directory failed: ask ourselves
    return here;
  }

  Expected<bool> removeIf(uint64_t commId, uint64_t boundary, const std::string& expected, Deadline by) override {
    return inner_->removeIf(commId, boundary, expected, by);
  }
  Expected<SetCount> joinSetBy(uint64_t commId, const std::string& set, const std::string& group,
                               const std::string& member, const std::string& bytes, Deadline by) override {
    return inner_->joinSetBy(commId, set, group, member, bytes, by);
  }
  Expected<RecordsAndCount> readAndCount(uint64_t commId, const std::vector<uint64_t>& boundaries, const std::string& set,
                                         const std::string& group) override {
    return inner_->readAndCount(commId, boundaries, set, group);
  }
  Expected<std::optional<SetMember>> memberOutside(uint64_t commId, const std::string& set,
                                                   const std::string& group) override {
    return inner_->memberOutside(commId, set, group);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  Expected<std::vector<std::optional<std::string>>> readAndKeep(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                                size_t presence, Deadline by) {
    auto r = inner_->readMany(commId, boundaries, presence, by);
    if (r.ok())
      for (size_t i = presence; i < r->size(); ++i)
        if ((*r)[i]) keep(commId, boundaries[i], *(*r)[i]);
    return r;
  }

  // Write-once on the node as in the store: the bytes kept are the store's record, whoever kept them first.
  void keep(uint64_t commId, uint64_t boundary, const std::string& bytes) {
    if (boundary >= kInputsAgreementKey) return;  // only epoch records are polled
    if (node_->publish(commId, boundary, bytes) != PublishResult::Won) return;
    std::lock_guard lock(mutex_);
    auto& kept = kept_[commId];
    kept.emplace_back(boundary, bytes);
    if (kept.size() <= kKeptOnNode) return;
    (void)node_->removeIf(commId, kept.front().first, kept.front().second, kNoDeadline);
    kept.pop_front();
  }

  // Whether this process holds the node's reader lock for the communicator (taken here if free). A
  // lock file it cannot open or lock for another reason than a holder: it reads the store itself.
  bool isReader(uint64_t commId) {
    std::lock_guard lock(mutex_);
    if (locks_.count(commId)) return true;
    char name[32];
    std::snprintf(name, sizeof name, "/%016" PRIx64, commId);
    const int fd = open((lockDir_ + name).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) return true;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return true;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      locks_[commId] = fd;
      return true;
    }
    const bool held = errno == EWOULDBLOCK;
    close(fd);
    return !held;
  }

  std::shared_ptr<RecordStore> inner_;
  std::unique_ptr<RecordStore> node_;
  const std::string lockDir_;
  std::mutex mutex_;
  std::map<uint64_t, int> locks_;  // communicator -> its lock file, held
  std::map<uint64_t, std::deque<std::pair<uint64_t, std::string>>> kept_;
};

Status privateDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return makeError("cannot create " + path);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
    return makeError(path + " is not a directory private to this user");
  return Ok{};
}

// Ended jobs' directories under `base`: nothing of theirs changed for kEndedAfter.
void removeEnded(const std::filesystem::path& base, const std::filesystem::path& keep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path() == keep || !it->is_directory(ec) || it->is_symlink(ec)) continue;
    auto newest = fs::last_write_time(it->path(), ec);
    for (fs::directory_iterator c(it->path(), ec); !ec && c != end; c.increment(ec))
      newest = std::max(newest, fs::last_write_time(c->path(), ec));
    if (!ec && now - newest > kEndedAfter) fs::remove_all(it->path(), ec);
    ec.clear();
  }
}

}  // namespace

Expected<std::unique_ptr<RecordStore>> nodeSharedStore(std::shared_ptr<RecordStore> inner, const std::string& base,
                                                       const std::string& jobTag) {
  if (Status s = privateDir(base); !s.ok()) return makeError(s.error());
  const std::string reads = base + "/reads";
  if (Status s = privateDir(reads); !s.ok()) return makeError(s.error());
  // One directory per store and job: another job's records (the same communicator id, a test run
  // again) are never read as this one's.
  const std::string dir = reads + "/" + hex(sha256(inner->describe() + "\n" + jobTag)).substr(0, 24);
  removeEnded(reads, dir);
  if (Status s = privateDir(dir); !s.ok()) return makeError(s.error());
  const std::string lockDir = dir + "/readers";
  if (Status s = privateDir(lockDir); !s.ok()) return makeError(s.error());
  auto node = openDirStore(dir, true);
  if (!node.ok()) return makeError(node.error());
  return std::unique_ptr<RecordStore>(std::make_unique<NodeSharedStore>(std::move(inner), std::move(node.value()), lockDir));
}

}  // namespace dynamiccl::coord
