#include "coord/wire.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dynamiccl::coord::wire {
namespace {
template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
template <typename T>
T get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}
}  // namespace

std::string encodeRequestHeader(const RequestHeader& h) {
  std::string out;
  put(out, h.magic);
  put(out, h.op);
  out.append(h.token.data(), h.token.size());
  put(out, h.commId);
  put(out, h.boundary);
  put(out, h.length);
  return out;
}

std::optional<RequestHeader> decodeRequestHeader(const char* p) {
  RequestHeader h;
  h.magic = get<uint32_t>(p);
  h.op = get<uint8_t>(p);
  std::memcpy(h.token.data(), p, kTokenBytes);
  p += kTokenBytes;
  h.commId = get<uint64_t>(p);
  h.boundary = get<uint64_t>(p);
  h.length = get<uint32_t>(p);
  if (h.magic != kMagic || (h.op != static_cast<uint8_t>(Op::Publish) && h.op != static_cast<uint8_t>(Op::Read)))
    return std::nullopt;
  return h;
}

std::string encodeResponseHeader(Status status, uint32_t length) {
  std::string out;
  put(out, static_cast<uint8_t>(status));
  put(out, length);
  return out;
}

std::array<char, kTokenBytes> padToken(const std::string& token) {
  std::array<char, kTokenBytes> out{};
  std::memcpy(out.data(), token.data(), std::min(token.size(), kTokenBytes));
  return out;
}

bool tokensEqual(const std::array<char, kTokenBytes>& a, const std::array<char, kTokenBytes>& b) {
  unsigned char diff = 0;
  for (size_t i = 0; i < kTokenBytes; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool sendAll(int fd, const char* data, size_t n) {
  while (n) {
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool recvAll(int fd, char* data, size_t n) {
  while (n) {
    const ssize_t r = recv(fd, data, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void setTimeouts(int fd, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace dynamiccl::coord::wire
