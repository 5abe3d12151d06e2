// SHA-256 as FIPS 180-4 states it, HMAC as RFC 2104, the seal built on them, and the job's token.
#include "coord/record_seal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace dynamiccl::coord {
namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};
constexpr const char* kSealHeader = "DYNAMICCL-SEALED-1";
constexpr size_t kBlock = 64;

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(uint32_t h[8], const uint8_t* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 | uint32_t(block[4 * i + 2]) << 8 | block[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

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

Digest sha256(std::string_view data) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t full = data.size() / kBlock * kBlock;
  for (size_t at = 0; at < full; at += kBlock) compress(h, p + at);
  // The tail, 0x80, zeros, and the length in bits (big-endian) in one or two final blocks.
  uint8_t tail[2 * kBlock] = {};
  const size_t rest = data.size() - full;
  if (rest) std::memcpy(tail, p + full, rest);
  tail[rest] = 0x80;
  const size_t blocks = rest + 1 + 8 <= kBlock ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * kBlock - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) compress(h, tail + b * kBlock);
  Digest out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h[i] >> (24 - 8 * j));
  return out;
}

Digest hmacSha256(std::string_view key, std::string_view message) {
  std::string k(key);
  if (k.size() > kBlock) {
    const Digest d = sha256(k);
    k.assign(d.begin(), d.end());
  }
  k.resize(kBlock, '\0');
  std::string inner(kBlock, '\0'), outer(kBlock, '\0');
  for (size_t i = 0; i < kBlock; ++i) {
    inner[i] = static_cast<char>(k[i] ^ 0x36);
    outer[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  inner.append(message);
  const Digest innerDigest = sha256(inner);
  outer.append(innerDigest.begin(), innerDigest.end());
  return sha256(outer);
}

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
  if (!isSealed(record)) return std::nullopt;
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
