// The TCP coordinator behind `dynamiccl coord`: an authenticated, bounded, write-once record store.
// Every input is bounded (header size, payload size, record count and bytes, connections in total
// and per address, one deadline per request, requests per peer per second, failed authentications
// per peer) so garbage, floods and slow senders cannot take it down or lock out a client with the token.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "features/features.h"

namespace dynamiccl::coord {

struct ServerLimits {
  int maxConnections = 32;         // in flight at once, all addresses together
  int maxConnectionsPerPeer = 8;   // in flight at once from one address (a node's ranks share one)
  int requestTimeout_ms = 2000;    // the whole request: header, payload and answer
  int preAuthGrace_ms = 100;       // when full, a connection still without its token after this may be dropped
  size_t maxRecords = 65536;
  size_t maxTotalBytes = 256u << 20;
  double requestsPerSecondPerPeer = 2000;
  int authFailuresBeforeBan = 16;  // per peer address (a wrong token, or none within the deadline)
  int banSeconds = 10;             // then refused unread
  size_t maxTrackedPeers = 4096;   // bounded memory; a ban is kept until it expires, whatever the churn
};

struct ServerStats {
  uint64_t requests = 0, published = 0, refusedAuth = 0, badRequests = 0, busy = 0, rateLimited = 0;
};

class Server {
 public:
  // port 0 picks a free port (tests); listenAddress is an IPv4 address ("0.0.0.0": every interface).
  static Expected<std::unique_ptr<Server>> start(int port, std::string token, ServerLimits limits = {},
                                                 const std::string& listenAddress = "127.0.0.1");
  ~Server();
  int port() const;
  ServerStats stats() const;
  void stop();  // bounded: every connection is cancelled and gone within about 20 ms

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dynamiccl::coord
