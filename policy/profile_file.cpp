// Reading a profile file with a size cap, choosing the format by content.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "policy/profile.h"

namespace dynamiccl::policy {

Expected<Profile> loadProfileFile(const std::string& path, ProfileFormat format, uint64_t maxBytes) {
  // Open first, then check what was opened: a FIFO or device swapped in cannot block init
  // (O_NONBLOCK) and the size checked is the size of the file read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return makeError("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(path + " is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    ::close(fd);
    return makeError(path + " is " + std::to_string(st.st_size) + " bytes, over the " + std::to_string(maxBytes) +
                     " byte limit");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  if (format == ProfileFormat::Auto) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    format = first != std::string::npos && text[first] == '{' ? ProfileFormat::Json : ProfileFormat::NvidiaCsv;
  }
  auto profile = format == ProfileFormat::Json ? parseProfileJson(text) : parseNvidiaCsv(text);
  if (!profile) return makeError(path + ": " + profile.error());
  profile->source = path;
  return profile;
}

}  // namespace dynamiccl::policy
