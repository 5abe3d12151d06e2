// Where the per-host database lives, and creating it with private permissions.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

constexpr const char* kPendingTag = ".pending-verdicts-";

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

const char* nonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

}  // namespace

std::optional<int64_t> maxBytesFromMegabytes(const char* text) {
  if (text == nullptr) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double mb = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(mb) || !(mb > 0 && mb < 1e9)) return std::nullopt;
  const auto bytes = static_cast<int64_t>(mb * 1024 * 1024);
  if (bytes < 1) return std::nullopt;  // 0 would mean no cap at all
  return bytes;
}

std::string defaultDatabasePath() {
  std::string base;
  if (const char* xdg = nonEmptyEnv("XDG_DATA_HOME")) {
    base = xdg;
  } else if (const char* home = nonEmptyEnv("HOME")) {
    base = std::string(home) + "/.local/share";
  } else {
    base = "/tmp";
  }
  return base + "/dynamiccl/" + hostName() + ".db";
}

Status prepareDatabaseFile(const std::string& path) {
  if (path.empty() || path == ":memory:") return Ok{};
  // Each missing directory on the way is created private; existing ones are left as they are.
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return makeError("cannot create directory " + dir + ": " + std::strerror(errno));
  }
  // O_CREAT without O_TRUNC: an existing file is untouched; a new one starts at 0600 (SQLite's
  // -wal and -shm files copy the main file's permissions).
  // A FIFO or device there is refused here: SQLite's own open would block or misbehave on it.
  auto fd = openRegularFile(path, O_RDWR | O_CREAT);
  if (!fd) return makeError(fd.error());
  ::close(*fd);
  return Ok{};
}

std::string pendingVerdictsPath(const std::string& db, long pid, long long ns) {
  return db + kPendingTag + std::to_string(pid) + "-" + std::to_string(ns);
}

std::vector<std::string> pendingVerdictsFiles(const std::string& db) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  const fs::path path(db);
  const std::string prefix = path.filename().string() + kPendingTag;
  std::error_code ec;
  for (fs::directory_iterator it(path.has_parent_path() ? path.parent_path() : fs::path("."), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() &&
        name.find_first_not_of("0123456789-", prefix.size()) == std::string::npos)
      out.push_back(it->path().string());
  }
  return out;
}

}  // namespace dynamiccl::store
