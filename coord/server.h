// The TCP coordinator behind `dynamiccl coord`: an authenticated, bounded, write-once record store.
// Every input is bounded (header size, payload size, record count and bytes, connections,
// requests per peer per second, failed authentications per peer) so garbage cannot take it down.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "features/features.h"

namespace dynamiccl::coord {

struct ServerLimits {
  int maxConnections = 32;
  int ioTimeout_ms = 2000;
  size_t maxRecords = 65536;
  size_t maxTotalBytes = 256u << 20;
  double requestsPerSecondPerPeer = 2000;
  int authFailuresBeforeBan = 16;  // per peer address; then refused unread for banSeconds
  int banSeconds = 10;
};

struct ServerStats {
  uint64_t requests = 0, published = 0, refusedAuth = 0, badRequests = 0, busy = 0, rateLimited = 0;
};

class Server {
 public:
  // port 0 picks a free port (tests); loopbackOnly binds 127.0.0.1 instead of every address.
  static Expected<std::unique_ptr<Server>> start(int port, std::string token, ServerLimits limits = {},
                                                 bool loopbackOnly = false);
  ~Server();
  int port() const;
  ServerStats stats() const;
  void stop();  // bounded: connections time out within ioTimeout_ms

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dynamiccl::coord
