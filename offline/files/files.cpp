// Checked output files over a plain descriptor, so the first failure keeps its errno; written beside
// the target and renamed over it, so a reader never sees a partial file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include "offline/files/files.h"

namespace dynamiccl::files {
namespace {

Error failure(const std::string& what, const std::string& path, int err) {
  return makeError(what + " " + path + ": " + (err != 0 ? std::strerror(err) : "I/O error"));
}

}  // namespace

// A buffered streambuf over fd that remembers the errno of the first failed write and then stops.
class OutputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(64 * 1024) { setp(data_.data(), data_.data() + data_.size()); }
  ~Buffer() override { closeFd(); }
  int error() const { return error_; }
  bool failed() const { return failed_; }
  // Flushes, syncs to the disk (a full one may say so only here) and closes; false (and error()) on
  // the first failure so far.
  bool finish() {
    drain();
    if (!failed_ && ::fsync(fd_) != 0 && errno != EINVAL) fail(errno);  // EINVAL: a file that cannot sync
    if (!closeFd() && !failed_) fail(errno);
    return !failed_;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  void fail(int err) {
    if (!failed_) error_ = err;
    failed_ = true;
  }
  bool drain() {
    const char* p = pbase();
    while (!failed_ && p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(n < 0 ? errno : EIO);
      else p += n;
    }
    setp(data_.data(), data_.data() + data_.size());
    return !failed_;
  }
  bool closeFd() {
    if (fd_ < 0) return true;
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0;
  }
  int fd_;
  std::vector<char> data_;
  int error_ = 0;
  bool failed_ = false;
};

namespace {

// What path names: its final target (symbolic links resolved, so a link keeps pointing at the new
// file) and that target's status where it exists; refused where it exists and is not a regular file.
struct Target {
  std::string path;
  std::optional<struct stat> existing;
};

Expected<Target> resolveTarget(const std::string& path) {
  if (path.empty()) return makeError("cannot open an empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return failure("cannot open", path, errno);
    return Target{path, std::nullopt};  // a new file (or a dangling link, replaced)
  }
  if (!S_ISREG(st.st_mode))
    return makeError("cannot open " + path + ": not a regular file (" +
                     (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket") +
                     "); outputs are written to files");
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
  return Target{ec ? path : resolved.string(), st};
}

// A new file beside target, named after it; O_EXCL, so it is never something that was already there.
Expected<std::pair<std::string, int>> createTemporary(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path t(target);
  const std::string dir = t.has_parent_path() ? t.parent_path().string() + "/" : "";
  std::random_device seed;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string temp = dir + "." + t.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                             std::to_string(counter++) + "-" + std::to_string(seed() % 100000);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd >= 0) return std::make_pair(temp, fd);
    if (errno != EEXIST) return failure("cannot open", target, errno);
  }
  return failure("cannot open", target, EEXIST);
}

// The earlier file's bytes, so an appending writer replaces it with old + new.
bool copyInto(const std::string& from, int to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (in < 0) return false;
  char buf[64 * 1024];
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    for (ssize_t done = 0; ok && done < n;) {
      const ssize_t w = ::write(to, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      ok = w > 0;
      if (ok) done += w;
    }
    if (!ok) break;
  }
  const int err = errno;
  ::close(in);
  errno = err;
  return ok;
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string target, std::string temp, int fd)
    : path_(std::move(path)),
      target_(std::move(target)),
      temp_(std::move(temp)),
      buffer_(std::make_unique<Buffer>(fd)),
      stream_(std::make_unique<std::ostream>(buffer_.get())) {}

OutputFile::~OutputFile() {
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

std::ostream& OutputFile::stream() { return *stream_; }

Expected<std::unique_ptr<OutputFile>> OutputFile::open(const std::string& path, Mode mode) try {
  auto target = resolveTarget(path);
  if (!target) return makeError(target.error());
  auto temp = createTemporary(target->path);
  if (!temp) return makeError(temp.error());
  auto [tempPath, fd] = *temp;
  std::unique_ptr<OutputFile> file(new OutputFile(path, target->path, tempPath, fd));
  if (const auto& old = target->existing) {
    (void)::fchown(fd, old->st_uid, old->st_gid);  // as it was where we may; the mode below matters more
    if (::fchmod(fd, old->st_mode & 07777) != 0) return failure("cannot open", path, errno);
    if (mode == Mode::Append && !copyInto(target->path, fd)) return failure("cannot write", path, errno);
  }
  return file;
} catch (const std::exception& e) {
  return makeError("cannot open " + path + ": " + e.what());
}

Status OutputFile::close() {
  if (temp_.empty()) return makeError("cannot write " + path_ + ": already closed");
  if (!buffer_->finish() || stream_->bad()) return failure("cannot write", path_, buffer_->error());
  if (::rename(temp_.c_str(), target_.c_str()) != 0) return failure("cannot write", path_, errno);
  temp_.clear();
  return Ok{};
}

Status writeFile(const std::string& path, std::string_view text) {
  auto file = OutputFile::open(path);
  if (!file) return makeError(file.error());
  (*file)->stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  return (*file)->close();
}

Status flushStdout() {
  errno = 0;
  std::cout.flush();
  const bool streamOk = static_cast<bool>(std::cout);
  if (!streamOk || std::fflush(stdout) != 0) return failure("cannot write", "standard output", errno);
  return Ok{};
}

}  // namespace dynamiccl::files
