// The seal (an HMAC-SHA-256 from libcrypto, coord/crypto.cpp) and the job's token.
#include "coord/record_seal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace dynamiccl::coord {
namespace {

constexpr const char* kSealHeader = "DYNAMICCL-SEALED-1";
std::string placeAndBytes(uint64_t commId, uint64_t boundary, std::string_view bytes) {
  return std::to_string(commId) + "/" + std::to_string(boundary) + "\n" + std::string(bytes);
}

bool sameDigest(std::string_view a, std::string_view b) {  // constant time for equal lengths
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string hex(const Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) out += {kHex[b >> 4], kHex[b & 15]};
  return out;
}

std::string sealRecord(std::string_view key, uint64_t commId, uint64_t boundary, std::string_view bytes) {
  return std::string(kSealHeader) + "\n" + hex(hmacSha256(key, placeAndBytes(commId, boundary, bytes))) + "\n" +
         std::string(bytes);
}

namespace {
bool isSealed(std::string_view record) {
  const size_t headerEnd = std::strlen(kSealHeader);
  return record.size() >= headerEnd + 1 + 64 + 1 && record.substr(0, headerEnd) == kSealHeader &&
         record[headerEnd] == '\n' && record[headerEnd + 65] == '\n';
}
}  // namespace

std::string_view sealedPayload(std::string_view record) {
  return isSealed(record) ? record.substr(std::strlen(kSealHeader) + 66) : record;
}

std::optional<std::string> openSealed(std::string_view key, uint64_t commId, uint64_t boundary, std::string_view record) {
  if (!isSealed(record) || !systemCrypto().ok()) return std::nullopt;  // without libcrypto nothing opens
  const size_t headerEnd = std::strlen(kSealHeader);
  const std::string_view mac = record.substr(headerEnd + 1, 64);
  const std::string_view bytes = record.substr(headerEnd + 66);
  if (!sameDigest(mac, hex(hmacSha256(key, placeAndBytes(commId, boundary, bytes))))) return std::nullopt;
  return std::string(bytes);
}

Expected<std::string> readJobToken(const std::string& path) {
  constexpr size_t kMinBytes = 16, kMaxBytes = 4096;
  auto fd = openRegularFile(path, O_RDONLY);
  if (!fd) return makeError("DYNAMICCL_COORD_TOKEN_FILE: " + fd.error());
  struct stat st {};
  const bool statted = ::fstat(*fd, &st) == 0;
  const bool privateSmall = statted && !(st.st_mode & 077) && static_cast<uint64_t>(st.st_size) <= kMaxBytes;
  std::string text(privateSmall ? static_cast<size_t>(st.st_size) : 0, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(*fd, text.data() + got, text.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(*fd);
  text.resize(got);
  const std::string what = "DYNAMICCL_COORD_TOKEN_FILE " + path;
  if (!statted) return makeError("cannot read " + what);
  if (st.st_mode & 077) return makeError(what + " may be read or written by group or others; chmod 600 it");
  if (static_cast<uint64_t>(st.st_size) > kMaxBytes) return makeError(what + " is over " + std::to_string(kMaxBytes) + " bytes");
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.size() < kMinBytes)
    return makeError(what + " holds " + std::to_string(text.size()) + " bytes; a token is at least " +
                     std::to_string(kMinBytes) + " (e.g. openssl rand -hex 32)");
  return text;
}

}  // namespace dynamiccl::coord
