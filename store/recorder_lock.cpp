// One recording process per store file: a non-blocking flock(2) on `<db>.writer`, which the kernel
// drops when its holder closes it or dies (no stale lock to clean up).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "store/store_impl.h"

namespace dynamiccl::store {

RecorderLock::RecorderLock(int fd) : fd_(fd) {}
RecorderLock::~RecorderLock() { ::close(fd_); }

Expected<std::unique_ptr<RecorderLock>> RecorderLock::tryTake(const std::string& dbPath) {
  const std::string path = dbPath + ".writer";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return makeError("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    ::close(fd);
    if (why != EWOULDBLOCK) return makeError("cannot lock " + path + ": " + std::strerror(why));
    return std::unique_ptr<RecorderLock>();  // another process records: not an error
  }
  // Who holds it, for the line the others log: host:pid.
  char holder[128] = {};
  gethostname(holder, 64);
  const std::string text = std::string(holder) + ":" + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text.data(), text.size(), 0);
  return std::unique_ptr<RecorderLock>(new RecorderLock(fd));
}

std::string RecorderLock::holder(const std::string& dbPath) {
  const int fd = ::open((dbPath + ".writer").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  char text[128] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  ::close(fd);
  std::string out(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\0')) out.pop_back();
  return out;
}

}  // namespace dynamiccl::store
