#include "features/regular_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dynamiccl {

Expected<int> openRegularFile(const std::string& path, int flags, FollowLinks follow, mode_t createMode) {
  flags |= O_NONBLOCK | O_CLOEXEC;
  if (follow == FollowLinks::No) flags |= O_NOFOLLOW;
  const int fd = ::open(path.c_str(), flags, createMode);
  if (fd < 0 && errno == ENXIO) return makeError(path + " is not a regular file (a FIFO or device)");
  if (fd < 0) return makeError("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(path + " is not a regular file");
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

void adviseHugePages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

Expected<std::string> readRegularFile(const std::string& path, uint64_t maxBytes, FollowLinks follow) {
  auto fd = openRegularFile(path, O_RDONLY, follow);
  if (!fd) return makeError(fd.error());
  struct stat st {};
  if (::fstat(*fd, &st) != 0 || static_cast<uint64_t>(st.st_size) > maxBytes) {
    ::close(*fd);
    return makeError(path + " is " + std::to_string(st.st_size) + " bytes, over the " + std::to_string(maxBytes) +
                     " byte limit");
  }
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  adviseHugePages(text.data(), text.capacity());  // before the first write faults its pages in
  text.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(*fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(*fd);
  text.resize(got);
  return text;
}

}  // namespace dynamiccl
