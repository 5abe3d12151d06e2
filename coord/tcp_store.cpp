// TCP backend: the plugin's client of `dynamiccl coord`. One short connection per request, every
// step under a timeout, so a dead or slow coordinator costs bounded time and never a hang.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <cstring>

#include "coord/record_store.h"
#include "coord/wire.h"

namespace dynamiccl::coord {
namespace {

int connectWithTimeout(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    wire::setTimeouts(fd, timeout_ms);
  }
  return fd;
}

class TcpStore : public RecordStore {
 public:
  TcpStore(std::string host, int port, std::string token, int timeout_ms)
      : host_(std::move(host)), port_(port), token_(wire::padToken(token)), timeout_ms_(timeout_ms) {}

  PublishResult publish(uint64_t commId, uint64_t boundary, const std::string& bytes) override {
    if (bytes.size() > kMaxRecordBytes) return PublishResult::Failed;
    auto r = request(wire::Op::Publish, commId, boundary, bytes);
    if (!r.ok()) return PublishResult::Failed;
    if (r->first == wire::Status::Ok) return PublishResult::Won;
    return r->first == wire::Status::Lost ? PublishResult::Lost : PublishResult::Failed;
  }

  Expected<std::optional<std::string>> read(uint64_t commId, uint64_t boundary) override {
    auto r = request(wire::Op::Read, commId, boundary, {});
    if (!r.ok()) return makeError(r.error());
    if (r->first == wire::Status::NotFound) return std::optional<std::string>{};
    if (r->first != wire::Status::Ok) return makeError("coordinator refused the request");
    return std::optional<std::string>{std::move(r->second)};
  }

  std::string describe() const override { return "TCP coordinator " + host_ + ":" + std::to_string(port_); }

 private:
  Expected<std::pair<wire::Status, std::string>> request(wire::Op op, uint64_t commId, uint64_t boundary,
                                                         const std::string& payload) {
    const int fd = connectWithTimeout(host_, port_, timeout_ms_);
    if (fd < 0) return makeError("cannot reach " + describe());
    wire::RequestHeader h;
    h.op = static_cast<uint8_t>(op);
    h.token = token_;
    h.commId = commId;
    h.boundary = boundary;
    h.length = static_cast<uint32_t>(payload.size());
    const std::string head = wire::encodeRequestHeader(h);
    char rh[wire::kResponseHeaderBytes];
    bool ok = wire::sendAll(fd, head.data(), head.size()) && wire::sendAll(fd, payload.data(), payload.size()) &&
              wire::recvAll(fd, rh, sizeof rh);
    std::pair<wire::Status, std::string> out;
    if (ok) {
      uint32_t len;
      std::memcpy(&len, rh + 1, 4);
      out.first = static_cast<wire::Status>(rh[0]);
      ok = len <= kMaxRecordBytes;
      if (ok) {
        out.second.resize(len);
        ok = wire::recvAll(fd, out.second.data(), len);
      }
    }
    close(fd);
    if (!ok) return makeError("bad or no answer from " + describe());
    return out;
  }
  std::string host_;
  int port_;
  std::array<char, wire::kTokenBytes> token_;
  int timeout_ms_;
};

}  // namespace

std::unique_ptr<RecordStore> makeTcpStore(std::string host, int port, std::string token, int timeout_ms) {
  return std::make_unique<TcpStore>(std::move(host), port, std::move(token), timeout_ms);
}

Expected<std::string> readTokenFile(const std::string& path) {
  // Never a FIFO or device (open would block init, or the coordinator's start, forever); the mode and
  // size checked are those of the file read.
  auto fd = openRegularFile(path, O_RDONLY);
  if (!fd) return makeError("token file: " + fd.error());
  struct stat st {};
  std::string t;
  const bool statted = fstat(*fd, &st) == 0;
  if (statted && !(st.st_mode & 077) && st.st_size <= 4096) {
    t.resize(static_cast<size_t>(st.st_size));
    const ssize_t n = ::read(*fd, t.data(), t.size());
    t.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(*fd);
  if (!statted) return makeError("cannot read token file " + path);
  if (st.st_mode & 077) return makeError("token file " + path + " is readable by others; chmod 600 it");
  if (st.st_size > 4096) return makeError("token file " + path + " is too large");
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(t.begin());
  if (t.size() < 16 || t.size() > wire::kTokenBytes) return makeError("token in " + path + " must be 16..64 bytes");
  for (char c : t)
    if (c < 0x21 || c > 0x7e) return makeError("token in " + path + " must be printable");
  return t;
}

}  // namespace dynamiccl::coord
