// Checked output files over a plain descriptor, so the first failure keeps its errno.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>
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
  // Flushes and closes; false (and error()) on the first failure so far.
  bool finish() {
    drain();
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

OutputFile::OutputFile(std::string path, int fd)
    : path_(std::move(path)), buffer_(std::make_unique<Buffer>(fd)), stream_(std::make_unique<std::ostream>(buffer_.get())) {}
OutputFile::~OutputFile() = default;
std::ostream& OutputFile::stream() { return *stream_; }

Expected<std::unique_ptr<OutputFile>> OutputFile::open(const std::string& path, Mode mode) try {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::Append ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return failure("cannot open", path, errno);
  return std::unique_ptr<OutputFile>(new OutputFile(path, fd));
} catch (const std::exception& e) {
  return makeError("cannot open " + path + ": " + e.what());
}

Status OutputFile::close() {
  if (!buffer_->finish() || stream_->bad()) return failure("cannot write", path_, buffer_->error());
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
