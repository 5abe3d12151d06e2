// Directory backend: one file per record, published by link(2), which fails with EEXIST when the
// name exists (atomic on local file systems and NFS), so exactly one publisher wins.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "coord/record_store.h"

namespace dynamiccl::coord {
namespace {

Status ensureDir(const std::string& path, bool privateDir) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return makeError("cannot create " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return makeError(path + " is not a directory");
  if (privateDir && (st.st_uid != getuid() || (st.st_mode & 077) != 0))
    return makeError(path + " is not private to this user (owner or mode); refusing it");
  return Ok{};
}

// Never blocks and never follows: a FIFO, a device, a directory, a symlink or a file over the size
// limit under a record's name reads as kNotARecord (alike on every rank: they all see the same thing
// there), not as an error a rank would wait on. nullopt: no such file.
Expected<std::optional<std::string>> readRecordFile(const std::string& name) {
  const int fd = open(name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    // ELOOP: a symlink (O_NOFOLLOW); ENXIO: a socket or a FIFO's other end; ENOTDIR: a file where the
    // communicator's directory goes. What sits there, not a failure of the store.
    if (errno == ELOOP || errno == ENXIO || errno == ENOTDIR || errno == EISDIR)
      return std::optional<std::string>{kNotARecord};
    return makeError("cannot open " + name + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return makeError("cannot stat " + name + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxRecordBytes)) {
    close(fd);
    return std::optional<std::string>{kNotARecord};
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int e = errno;
      close(fd);
      return makeError("cannot read " + name + ": " + std::strerror(e));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  // A file that shrank or grew while read is not a record either: ours never change once linked.
  char extra = 0;
  const bool changed = got != out.size() || ::read(fd, &extra, 1) > 0;
  close(fd);
  if (changed) return std::optional<std::string>{kNotARecord};
  return std::optional<std::string>{std::move(out)};
}

// Calls `each` with every entry's name but . and .. until it returns false.
Status forEachEntry(const std::string& dir, const std::function<bool(const std::string&)>& each) {
  DIR* d = opendir(dir.c_str());
  if (!d) return makeError("cannot list " + dir + ": " + std::strerror(errno));
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name.rfind(".tmp.", 0) == 0) continue;
    if (!each(name)) break;
  }
  closedir(d);
  return Ok{};
}

struct Members {
  uint64_t count = 0;
  int64_t filling_ns = -1;  // SetCount's
};

int64_t nsOf(const statx_timestamp& t) { return t.tv_sec * int64_t{1000000000} + t.tv_nsec; }

// How many members (subdirectories) a set's directory holds: its link count less 2, read through
// where the file system does not count subdirectories (a link count under 3 with at least one member);
// and, where the file system keeps birth times (ext4, xfs, tmpfs, btrfs), how long since the first
// joiner made it, to the latest member's arrival (its modification): both in the file server's clock.
// A directory not there yet has none.
Expected<Members> members(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);  // an open revalidates NFS's attributes
  if (fd < 0 && errno == ENOENT) return Members{};
  if (fd < 0) return makeError("cannot open " + dir + ": " + std::strerror(errno));
  Members m;
  uint64_t links = 0;
  struct statx sx {};
  struct stat st {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_NLINK | STATX_BTIME | STATX_MTIME, &sx) == 0) {
    if ((sx.stx_mask & STATX_BTIME) && (sx.stx_mask & STATX_MTIME))
      m.filling_ns = std::max<int64_t>(nsOf(sx.stx_mtime) - nsOf(sx.stx_btime), 0);
    links = (sx.stx_mask & STATX_NLINK) ? sx.stx_nlink : 0;
  } else if (fstat(fd, &st) == 0) {  // a kernel without statx: the count, no times
    links = st.st_nlink;
  } else {
    close(fd);
    return makeError("cannot stat " + dir);
  }
  close(fd);
  if (links >= 3) {
    m.count = links - 2;
    return m;
  }
  const Status listed = forEachEntry(dir, [&](const std::string&) { return ++m.count, true; });
  if (!listed.ok()) return makeError(listed.error());
  return m;
}

// A set's count: its "all" directory's members (and how long it has been filling), its group's.
Expected<SetCount> countOf(const std::string& setDir, const std::string& group) {
  auto all = members(setDir + "/all");
  if (!all.ok()) return makeError(all.error());
  auto inGroup = members(setDir + "/g-" + group);
  if (!inGroup.ok()) return makeError(inGroup.error());
  return SetCount{all->count, inGroup->count, all->filling_ns};
}

class DirStore : public RecordStore {
 public:
  DirStore(std::string dir, bool privateDir, int delay_ms, int publishFails_ms)
      : dir_(std::move(dir)), private_(privateDir), delay_ms_(delay_ms), publishFails_ms_(publishFails_ms) {}

  PublishResult publishBy(uint64_t commId, uint64_t boundary, const std::string& bytes, Deadline by) override {
    if (!pause(by)) return PublishResult::Failed;
    const bool epochTable = boundary < kInputsAgreementKey && bytes != kFrozenRecord;  // not the input check's
    if (publishFails_ms_ > 0 && epochTable && firstTableAt(commId, boundary)) {
      std::this_thread::sleep_until(std::min(by, std::chrono::steady_clock::now() + std::chrono::milliseconds(publishFails_ms_)));
      return PublishResult::Failed;
    }
    if (bytes.size() > kMaxRecordBytes) return PublishResult::Failed;
    const std::string commDir = commDirOf(commId);
    if (!ensureDir(commDir, private_).ok()) return PublishResult::Failed;
    static std::atomic<uint64_t> counter{0};
    const std::string tmp = commDir + "/.tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return PublishResult::Failed;
    const bool written = writeAll(fd, bytes) && close(fd) == 0;
    if (!written) {
      unlink(tmp.c_str());
      return PublishResult::Failed;
    }
    const std::string name = recordPath(commId, boundary);
    PublishResult result = PublishResult::Won;
    if (link(tmp.c_str(), name.c_str()) != 0) {
      struct stat st {};
      // NFS may report failure for a link that was made (lost reply): the link count tells.
      if (errno == EEXIST) result = PublishResult::Lost;
      else if (!(stat(tmp.c_str(), &st) == 0 && st.st_nlink == 2)) result = PublishResult::Failed;
    }
    unlink(tmp.c_str());
    return result;
  }

  Expected<std::optional<std::string>> read(uint64_t commId, uint64_t boundary) override {
    pause();
    return readRecordFile(recordPath(commId, boundary));
  }

  // rename(2) takes the record out of its name atomically; it is removed if it holds what the caller
  // read, else linked back (unless a new record took the name meanwhile: that one stays).
  Expected<bool> removeIf(uint64_t commId, uint64_t boundary, const std::string& expected, Deadline by) override {
    if (!pause(by)) return makeError("no time left to remove a record");
    static std::atomic<uint64_t> counter{0};
    const std::string name = recordPath(commId, boundary);
    const std::string aside = commDirOf(commId) + "/.tmp.rm." + std::to_string(getpid()) + "." + std::to_string(counter++);
    if (rename(name.c_str(), aside.c_str()) != 0) {
      if (errno == ENOENT) return false;
      return makeError("cannot remove " + name + ": " + std::strerror(errno));
    }
    auto held = readRecordFile(aside);
    const bool same = held.ok() && *held && **held == expected;
    if (!same) (void)link(aside.c_str(), name.c_str());  // EEXIST: a newer record took the name
    unlink(aside.c_str());
    return same;
  }

  // Whether a record exists is one lstat: its bytes are not read.
  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                             size_t presence, Deadline by = kNoDeadline) override {
    if (!pause(by)) return makeError("no time left to read records");
    std::vector<std::optional<std::string>> out;
    for (size_t i = 0; i < boundaries.size(); ++i) {
      const std::string name = recordPath(commId, boundaries[i]);
      struct stat st {};
      if (i >= presence) {
        auto rec = readRecordFile(name);
        if (!rec.ok()) return makeError(rec.error());
        out.push_back(std::move(*rec));
      } else if (lstat(name.c_str(), &st) == 0) {
        out.push_back(std::string());
      } else if (errno == ENOENT) {
        out.push_back(std::nullopt);
      } else {
        return makeError("cannot stat " + name + ": " + std::strerror(errno));
      }
    }
    return out;
  }

  // A member is a directory holding its record, renamed into its group's directory whole, then named
  // again (an empty directory) in the set's "all": each directory's link count is its members', so
  // a count is one stat, whatever the number of members (ext4, xfs, tmpfs, NFS, Lustre; a file system
  // that does not count, btrfs, is read through instead).
  Expected<SetCount> joinSetBy(uint64_t commId, const std::string& set, const std::string& group,
                               const std::string& member, const std::string& bytes, Deadline) override {
    pause();  // a directory's operations have no bound of their own to extend
    if (bytes.size() > kMaxRecordBytes) return makeError("a set member over the record size limit");
    const std::string setDir = commDirOf(commId) + "/s-" + set;
    const std::string all = setDir + "/all", groupDir = setDir + "/g-" + group, placed = groupDir + "/" + member;
    for (const std::string& d : {commDirOf(commId), setDir, all, groupDir})
      if (Status st = ensureDir(d, private_); !st.ok()) return makeError(st.error());
    struct stat st {};
    if (lstat(placed.c_str(), &st) != 0) {
      static std::atomic<uint64_t> counter{0};
      const std::string tmp = setDir + "/.tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
      if (mkdir(tmp.c_str(), 0700) != 0) return makeError("cannot create " + tmp + ": " + std::strerror(errno));
      const int fd = open((tmp + "/record").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      const bool written = fd >= 0 && writeAll(fd, bytes) && close(fd) == 0;
      // rename(2) of a directory onto an existing non-empty one fails: the member written before stays.
      const bool placedNow = written && rename(tmp.c_str(), placed.c_str()) == 0;
      if (!placedNow) {
        unlink((tmp + "/record").c_str());
        rmdir(tmp.c_str());
        if (lstat(placed.c_str(), &st) != 0) return makeError("cannot place " + placed + ": " + std::strerror(errno));
      }
    }
    if (mkdir((all + "/" + member).c_str(), 0700) != 0 && errno != EEXIST)
      return makeError("cannot create " + all + "/" + member + ": " + std::strerror(errno));
    return countOf(setDir, group);
  }

  // The records, then both counts: two stats (a set or group no one joined counts 0).
  Expected<RecordsAndCount> readAndCount(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                         const std::string& set, const std::string& group) override {
    auto recs = readMany(commId, boundaries, 0);
    if (!recs.ok()) return makeError(recs.error());
    auto count = countOf(commDirOf(commId) + "/s-" + set, group);
    if (!count.ok()) return makeError(count.error());
    return RecordsAndCount{std::move(*recs), *count};
  }

  Expected<std::optional<SetMember>> memberOutside(uint64_t commId, const std::string& set,
                                                   const std::string& group) override {
    pause();
    const std::string setDir = commDirOf(commId) + "/s-" + set;
    std::string other;  // the first group by name other than `group`: the same one for every caller
    const Status listed = forEachEntry(setDir, [&](const std::string& name) {
      if (name.rfind("g-", 0) == 0 && name != "g-" + group && (other.empty() || name < other)) other = name;
      return true;
    });
    if (!listed.ok()) return makeError(listed.error());
    if (other.empty()) return std::optional<SetMember>{};
    std::string first;
    const Status inGroup = forEachEntry(setDir + "/" + other, [&](const std::string& name) {
      first = name;
      return false;  // any member will do: one read, whatever the group's size
    });
    if (!inGroup.ok()) return makeError(inGroup.error());
    if (first.empty()) return std::optional<SetMember>{};
    auto bytes = readRecordFile(setDir + "/" + other + "/" + first + "/record");
    if (!bytes.ok()) return makeError(bytes.error());
    return std::optional<SetMember>{SetMember{other.substr(2), bytes->value_or("")}};
  }

  std::string describe() const override { return (private_ ? "node-local directory " : "shared directory ") + dir_; }

 private:
  static bool writeAll(int fd, const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }
  std::string commDirOf(uint64_t commId) const {
    char b[32];
    std::snprintf(b, sizeof b, "/%016" PRIx64, commId);
    return dir_ + b;
  }
  std::string recordPath(uint64_t commId, uint64_t boundary) const {
    return commDirOf(commId) + "/b" + std::to_string(boundary);
  }
  // The injected delay, cut at `by`; false when `by` came first (the file operations themselves are
  // not bounded: a hung file system holds them).
  bool pause(Deadline by = kNoDeadline) const {
    if (delay_ms_ <= 0) return std::chrono::steady_clock::now() < by;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms_);
    std::this_thread::sleep_until(std::min(until, by));
    return until <= by;
  }
  bool firstTableAt(uint64_t commId, uint64_t boundary) {
    std::lock_guard lock(failedMutex_);
    return failed_.insert({commId, boundary}).second;
  }
  std::string dir_;
  bool private_;
  int delay_ms_;
  int publishFails_ms_;
  std::mutex failedMutex_;
  std::set<std::pair<uint64_t, uint64_t>> failed_;  // boundaries whose first table publish failed
};

}  // namespace

std::string nodeLocalDir() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/dynamiccl-" + std::to_string(getuid());
}

Expected<std::unique_ptr<RecordStore>> openDirStore(const std::string& dir, bool privateDir, int delay_ms,
                                                    int publishFails_ms) {
  if (dir.empty()) return makeError("empty coordination directory");
  if (auto crypto = systemCrypto(); !crypto.ok()) return makeError(crypto.error());  // records are sealed
  if (Status s = ensureDir(dir, privateDir); !s.ok()) return makeError(s.error());
  return std::unique_ptr<RecordStore>(std::make_unique<DirStore>(dir, privateDir, delay_ms, publishFails_ms));
}

}  // namespace dynamiccl::coord
