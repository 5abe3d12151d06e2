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
#include <vector>

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
  std::atomic<int> threads{0};  // connection threads not yet finished
  std::thread acceptor;

  // One connection being served. cancel is read by its thread without the mutex; the rest is guarded.
  struct Connection {
    std::string peer;
    Clock::time_point accepted{};
    bool authenticated = false;
    bool live = false;  // a thread is serving it
    std::atomic<bool> cancel{false};
  };

  mutable std::mutex mutex;  // guards everything below
  std::map<std::pair<uint64_t, uint64_t>, std::string> records;
  size_t totalBytes = 0;
  ServerStats stats;
  struct Peer {
    double tokens = 0;
    Clock::time_point refill{};
    int authFailures = 0;
    Clock::time_point bannedUntil{};
    Clock::time_point lastSeen{};
  };
  std::unordered_map<std::string, Peer> peers;
  // Twice the connection limit: room for cancelled connections whose threads are still unwinding.
  std::vector<std::unique_ptr<Connection>> connections;

  // The peer's entry; when the table is full, the least recently seen peer that is not banned gives
  // way (a ban lasts its time whatever the churn of addresses); with every entry banned, new
  // addresses share one entry, so they can lock out only each other.
  Peer& peerLocked(const std::string& peer, Clock::time_point now) {
    if (auto it = peers.find(peer); it != peers.end()) return it->second;
    if (peers.size() >= limits.maxTrackedPeers) {
      auto victim = peers.end();
      for (auto it = peers.begin(); it != peers.end(); ++it)
        if (it->first != "" && now >= it->second.bannedUntil &&
            (victim == peers.end() || it->second.lastSeen < victim->second.lastSeen))
          victim = it;
      if (victim == peers.end()) return peers[""];
      peers.erase(victim);
    }
    return peers[peer];
  }

  // False when the peer is banned or over its request rate.
  bool admitLocked(const std::string& peer, Clock::time_point now) {
    ++stats.requests;
    Peer& p = peerLocked(peer, now);
    p.lastSeen = now;
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
    const auto now = Clock::now();
    Peer& p = peerLocked(peer, now);
    if (++p.authFailures >= limits.authFailuresBeforeBan) {
      p.authFailures = 0;
      p.bannedUntil = now + std::chrono::seconds(limits.banSeconds);
    }
  }

  void reply(int fd, Connection& c, Clock::time_point deadline, wire::Status s, const std::string& payload = {}) {
    const std::string h = wire::encodeResponseHeader(s, static_cast<uint32_t>(payload.size()));
    if (wire::sendAllBy(fd, h.data(), h.size(), deadline, c.cancel))
      wire::sendAllBy(fd, payload.data(), payload.size(), deadline, c.cancel);
  }

  void serve(int fd, Connection& c) {
    const Clock::time_point deadline = c.accepted + std::chrono::milliseconds(limits.requestTimeout_ms);
    char head[wire::kRequestHeaderBytes];
    // Magic, then the token: nothing else is read, and no payload waited for, from a peer without it.
    if (!wire::recvAllBy(fd, head, wire::kRequestStartBytes, deadline, c.cancel)) return countBad();
    if (!wire::validRequestStart(head)) {
      countBad();
      return reply(fd, c, deadline, wire::Status::BadRequest);
    }
    if (!wire::recvAllBy(fd, head + wire::kRequestStartBytes, wire::kTokenBytes, deadline, c.cancel)) {
      if (Clock::now() >= deadline) return authFailed(c.peer);  // a token too slow to arrive counts as wrong
      return countBad();
    }
    const auto prefix = wire::decodeRequestPrefix(head);
    if (!prefix) return countBad();  // unreachable: the start was checked
    if (!wire::tokensEqual(*prefix, token)) {
      authFailed(c.peer);
      return reply(fd, c, deadline, wire::Status::Refused);
    }
    {
      std::lock_guard lock(mutex);
      c.authenticated = true;
    }
    if (!wire::recvAllBy(fd, head + wire::kRequestPrefixBytes, sizeof head - wire::kRequestPrefixBytes, deadline,
                         c.cancel))
      return countBad();
    const std::optional<wire::RequestHeader> h = wire::decodeRequestHeader(head);
    if (!h || h->length > kMaxRecordBytes || (h->op == static_cast<uint8_t>(wire::Op::Read) && h->length != 0)) {
      countBad();
      return reply(fd, c, deadline, wire::Status::BadRequest);
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
      return found ? reply(fd, c, deadline, wire::Status::Ok, payload) : reply(fd, c, deadline, wire::Status::NotFound);
    }
    std::string payload(h->length, '\0');
    if (!wire::recvAllBy(fd, payload.data(), payload.size(), deadline, c.cancel)) return countBad();
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
    reply(fd, c, deadline, status, existing);
  }

  void countBad() {
    std::lock_guard lock(mutex);
    ++stats.badRequests;
  }

  enum class Admission { Serve, Busy, Refused };

  // Under the mutex: a free slot for this peer, or why not. At the total limit, the oldest
  // connection still without its token (past the grace) is cancelled to make room: slow senders
  // compete with each other, never with a client that sent its token.
  Admission admitConnection(const std::string& peer, Connection*& slot) {
    const auto now = Clock::now();
    if (!admitLocked(peer, now)) return Admission::Refused;
    int live = 0, fromPeer = 0;
    Connection* oldestPreAuth = nullptr;
    for (const auto& c : connections) {
      if (!c->live || c->cancel.load()) continue;
      ++live;
      if (c->peer == peer) ++fromPeer;
      if (!c->authenticated && now - c->accepted >= std::chrono::milliseconds(limits.preAuthGrace_ms) &&
          (oldestPreAuth == nullptr || c->accepted < oldestPreAuth->accepted))
        oldestPreAuth = c.get();
    }
    if (fromPeer >= limits.maxConnectionsPerPeer) return Admission::Busy;
    Connection* free = nullptr;
    for (const auto& c : connections)
      if (!c->live) free = c.get();
    if (free == nullptr) return Admission::Busy;  // cancelled threads still unwinding
    if (live >= limits.maxConnections) {
      if (oldestPreAuth == nullptr) return Admission::Busy;
      oldestPreAuth->cancel.store(true);
    }
    free->peer = peer;
    free->accepted = now;
    free->authenticated = false;
    free->cancel.store(false);
    free->live = true;
    slot = free;
    return Admission::Serve;
  }

  void turnAway(int fd, wire::Status s) {
    const std::atomic<bool> never{false};
    const std::string h = wire::encodeResponseHeader(s, 0);
    wire::sendAllBy(fd, h.data(), h.size(), Clock::now() + std::chrono::milliseconds(100), never);
    close(fd);
  }

  void acceptLoop() {
    while (!stopping.load()) {
      pollfd p{listenFd, POLLIN, 0};
      if (poll(&p, 1, 20) != 1) continue;
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = accept4(listenFd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
      if (fd < 0) continue;
      char ip[INET6_ADDRSTRLEN] = "?";
      if (addr.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, ip, sizeof ip);
      else if (addr.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, ip, sizeof ip);
      Connection* slot = nullptr;
      Admission admission;
      {
        std::lock_guard lock(mutex);
        admission = admitConnection(ip, slot);
        if (admission == Admission::Busy) ++stats.busy;
      }
      if (admission != Admission::Serve) {
        turnAway(fd, wire::Status::Busy);  // banned or over its rate: the same answer as a full server
        continue;
      }
      ++threads;
      try {
        std::thread([this, fd, slot] {
          serve(fd, *slot);
          close(fd);
          {
            std::lock_guard lock(mutex);
            slot->live = false;
          }
          --threads;  // the last touch of the Impl: stop() waits for this
        }).detach();
      } catch (const std::exception&) {  // no thread to be had: answer busy, free the slot
        turnAway(fd, wire::Status::Busy);
        std::lock_guard lock(mutex);
        slot->live = false;
        --threads;
      }
    }
  }

};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { stop(); }

Expected<std::unique_ptr<Server>> Server::start(int port, std::string token, ServerLimits limits,
                                                const std::string& listenAddress) {
  if (token.size() < 16 || token.size() > wire::kTokenBytes) return makeError("token must be 16..64 bytes");
  if (limits.maxConnections < 1 || limits.maxConnectionsPerPeer < 1 || limits.requestTimeout_ms < 1 ||
      limits.maxTrackedPeers < 1)
    return makeError("server limits must be positive");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, listenAddress.c_str(), &addr.sin_addr) != 1)
    return makeError("cannot listen on '" + listenAddress + "': not an IPv4 address");
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->token = wire::padToken(token);
  for (int i = 0; i < 2 * limits.maxConnections; ++i) impl->connections.push_back(std::make_unique<Impl::Connection>());
  impl->listenFd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listenFd < 0) return makeError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(impl->listenFd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(impl->listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(impl->listenFd, 128) != 0) {
    const std::string why = std::strerror(errno);
    close(impl->listenFd);
    return makeError("cannot listen on " + listenAddress + ":" + std::to_string(port) + ": " + why);
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
  {
    std::lock_guard lock(impl_->mutex);
    for (const auto& c : impl_->connections) c->cancel.store(true);
  }
  // Cancelled connections notice within one 20 ms poll tick; wait so none outlives the Impl.
  while (impl_->threads.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace dynamiccl::coord
