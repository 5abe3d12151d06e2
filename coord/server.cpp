#include "coord/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "coord/record_store.h"
#include "coord/wire.h"

namespace dynamiccl::coord {

using Clock = std::chrono::steady_clock;

struct Server::Impl {
  ServerLimits limits;
  std::array<char, wire::kTokenBytes> token{};
  int listenFd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<int> active{0};
  std::thread acceptor;

  mutable std::mutex mutex;  // guards everything below
  std::map<std::pair<uint64_t, uint64_t>, std::string> records;
  size_t totalBytes = 0;
  ServerStats stats;
  struct Peer {
    double tokens = 0;
    Clock::time_point refill{};
    int authFailures = 0;
    Clock::time_point bannedUntil{};
  };
  std::unordered_map<std::string, Peer> peers;

  // False when the peer is banned or over its request rate.
  bool admit(const std::string& peer) {
    std::lock_guard lock(mutex);
    ++stats.requests;
    if (peers.size() > 4096) peers.clear();  // bounded memory: forget every peer's history at once
    Peer& p = peers[peer];
    const auto now = Clock::now();
    if (now < p.bannedUntil) {
      ++stats.refusedAuth;
      return false;
    }
    const double rate = limits.requestsPerSecondPerPeer;
    if (p.refill == Clock::time_point{}) p.tokens = rate;
    else p.tokens = std::min(rate, p.tokens + rate * std::chrono::duration<double>(now - p.refill).count());
    p.refill = now;
    if (p.tokens < 1) {
      ++stats.rateLimited;
      return false;
    }
    p.tokens -= 1;
    return true;
  }

  void authFailed(const std::string& peer) {
    std::lock_guard lock(mutex);
    ++stats.refusedAuth;
    Peer& p = peers[peer];
    if (++p.authFailures >= limits.authFailuresBeforeBan) {
      p.authFailures = 0;
      p.bannedUntil = Clock::now() + std::chrono::seconds(limits.banSeconds);
    }
  }

  void reply(int fd, wire::Status s, const std::string& payload = {}) {
    const std::string h = wire::encodeResponseHeader(s, static_cast<uint32_t>(payload.size()));
    if (wire::sendAll(fd, h.data(), h.size())) wire::sendAll(fd, payload.data(), payload.size());
  }

  void serve(int fd, const std::string& peer) {
    wire::setTimeouts(fd, limits.ioTimeout_ms);
    if (!admit(peer)) return reply(fd, wire::Status::Busy);
    char head[wire::kRequestHeaderBytes];
    if (!wire::recvAll(fd, head, sizeof head)) return countBad();
    const std::optional<wire::RequestHeader> h = wire::decodeRequestHeader(head);
    if (!h || h->length > kMaxRecordBytes || (h->op == static_cast<uint8_t>(wire::Op::Read) && h->length != 0)) {
      countBad();
      return reply(fd, wire::Status::BadRequest);
    }
    if (!wire::tokensEqual(h->token, token)) {
      authFailed(peer);
      return reply(fd, wire::Status::Refused);
    }
    const auto key = std::make_pair(h->commId, h->boundary);
    if (h->op == static_cast<uint8_t>(wire::Op::Read)) {
      std::string payload;
      bool found = false;
      {
        std::lock_guard lock(mutex);
        if (auto it = records.find(key); it != records.end()) {
          found = true;
          payload = it->second;
        }
      }
      return found ? reply(fd, wire::Status::Ok, payload) : reply(fd, wire::Status::NotFound);
    }
    std::string payload(h->length, '\0');
    if (!wire::recvAll(fd, payload.data(), payload.size())) return countBad();
    wire::Status status = wire::Status::Ok;
    std::string existing;
    {
      std::lock_guard lock(mutex);
      if (auto it = records.find(key); it != records.end()) {
        status = wire::Status::Lost;
        existing = it->second;
      } else if (records.size() >= limits.maxRecords || totalBytes + payload.size() > limits.maxTotalBytes) {
        status = wire::Status::Busy;
        ++stats.busy;
      } else {
        totalBytes += payload.size();
        records.emplace(key, std::move(payload));
        ++stats.published;
      }
    }
    reply(fd, status, existing);
  }

  void countBad() {
    std::lock_guard lock(mutex);
    ++stats.badRequests;
  }

  void acceptLoop() {
    while (!stopping.load()) {
      pollfd p{listenFd, POLLIN, 0};
      if (poll(&p, 1, 100) != 1) continue;
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = accept4(listenFd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
      if (fd < 0) continue;
      char ip[INET6_ADDRSTRLEN] = "?";
      if (addr.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, ip, sizeof ip);
      else if (addr.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, ip, sizeof ip);
      if (active.load() >= limits.maxConnections) {
        wire::setTimeouts(fd, 100);
        reply(fd, wire::Status::Busy);
        close(fd);
        std::lock_guard lock(mutex);
        ++stats.busy;
        continue;
      }
      ++active;
      std::thread([this, fd, peer = std::string(ip)] {
        serve(fd, peer);
        close(fd);
        --active;
      }).detach();
    }
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { stop(); }

Expected<std::unique_ptr<Server>> Server::start(int port, std::string token, ServerLimits limits, bool loopbackOnly) {
  if (token.size() < 16 || token.size() > wire::kTokenBytes) return makeError("token must be 16..64 bytes");
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->token = wire::padToken(token);
  impl->listenFd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listenFd < 0) return makeError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(impl->listenFd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(loopbackOnly ? INADDR_LOOPBACK : INADDR_ANY);
  if (bind(impl->listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(impl->listenFd, 128) != 0) {
    const std::string why = std::strerror(errno);
    close(impl->listenFd);
    return makeError("cannot listen on port " + std::to_string(port) + ": " + why);
  }
  socklen_t len = sizeof addr;
  getsockname(impl->listenFd, reinterpret_cast<sockaddr*>(&addr), &len);
  impl->port = ntohs(addr.sin_port);
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->acceptLoop(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }

ServerStats Server::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

void Server::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  close(impl_->listenFd);
  // Connection threads end within their I/O timeout; wait for them so none outlives the Impl.
  while (impl_->active.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace dynamiccl::coord
