#include "coord/wire.h"

#include <poll.h>
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

bool validRequestStart(const char* p) {
  const auto magic = get<uint32_t>(p);
  const auto op = get<uint8_t>(p);
  return magic == kMagic && (op == static_cast<uint8_t>(Op::Publish) || op == static_cast<uint8_t>(Op::Read));
}

std::optional<std::array<char, kTokenBytes>> decodeRequestPrefix(const char* p) {
  if (!validRequestStart(p)) return std::nullopt;
  p += kRequestStartBytes;
  std::array<char, kTokenBytes> token{};
  std::memcpy(token.data(), p, kTokenBytes);
  return token;
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

namespace {

// Waits for fd to be ready for events until the deadline, in ticks short enough to notice cancel.
bool waitReady(int fd, short events, std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& cancel) {
  using namespace std::chrono;
  while (!cancel.load(std::memory_order_relaxed)) {
    const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left, 20)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
  return false;
}

}  // namespace

bool recvAllBy(int fd, char* data, size_t n, std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>& cancel) {
  while (n) {
    if (!waitReady(fd, POLLIN, deadline, cancel)) return false;
    const ssize_t r = recv(fd, data, n, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool sendAllBy(int fd, const char* data, size_t n, std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>& cancel) {
  while (n) {
    if (!waitReady(fd, POLLOUT, deadline, cancel)) return false;
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void setTimeouts(int fd, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace dynamiccl::coord::wire
