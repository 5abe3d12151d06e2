// Reading a profile file with a size cap, choosing the format by content.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "policy/profile.h"

namespace dynamiccl::policy {

Expected<Profile> loadProfileFile(const std::string& path, ProfileFormat format, uint64_t maxBytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return makeError("cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return makeError(path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return makeError(path + " is " + std::to_string(st.st_size) + " bytes, over the " + std::to_string(maxBytes) + " byte limit");
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  text.resize(static_cast<size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in && !in.eof()) return makeError("cannot read " + path);
  text.resize(static_cast<size_t>(in.gcount()));
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
