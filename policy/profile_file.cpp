// Reading a profile file with a size cap, choosing the format by content.
#include "policy/profile.h"

namespace dynamiccl::policy {

Expected<Profile> parseProfileText(std::string_view text, ProfileFormat format, const std::string& source) {
  // Editors on Windows save a UTF-8 byte order mark; it says nothing about the format.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  if (format == ProfileFormat::Auto) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    format = first != std::string::npos && text[first] == '{' ? ProfileFormat::Json : ProfileFormat::NvidiaCsv;
  }
  auto profile = format == ProfileFormat::Json ? parseProfileJson(text) : parseNvidiaCsv(text);
  if (!profile) return makeError(source + ": " + profile.error());
  profile->source = source;
  return profile;
}

Expected<Profile> loadProfileFile(const std::string& path, ProfileFormat format, uint64_t maxBytes,
                                  const std::function<void(std::string_view)>& onRead) {
  // A FIFO or device swapped in cannot block init, and the size checked is the size of the file read.
  auto read = readRegularFile(path, maxBytes);
  if (!read) return makeError(read.error());
  if (onRead) onRead(*read);
  return parseProfileText(*read, format, path);
}

}  // namespace dynamiccl::policy
