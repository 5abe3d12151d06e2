// The TCP coordinator: write-once records, the token required, garbage and floods refused while
// the server stays up; and the plugin-side client agreeing with it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <random>
#include <sstream>
#include <thread>

#include "coord/record_store.h"
#include "coord/server.h"
#include "coord/wire.h"
#include "policy/online_table.h"

namespace dynamiccl::coord {
namespace {

const std::string kToken = "0123456789abcdef-secret";

int connectLocal(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  wire::setTimeouts(fd, 3000);
  return fd;
}

// Sends raw bytes, returns the status byte answered (-1: connection closed without an answer).
int sendRaw(int port, const std::string& bytes) {
  const int fd = connectLocal(port);
  wire::sendAll(fd, bytes.data(), bytes.size());
  shutdown(fd, SHUT_WR);
  char h[wire::kResponseHeaderBytes];
  const int status = wire::recvAll(fd, h, sizeof h) ? static_cast<unsigned char>(h[0]) : -1;
  close(fd);
  return status;
}

std::unique_ptr<Server> startServer(ServerLimits limits = {}) {
  limits.requestTimeout_ms = 300;
  auto s = Server::start(0, kToken, limits, "127.0.0.1");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
  return s.ok() ? std::move(s.value()) : nullptr;
}

TEST(OnlineCoord, TokenFileNamingAFifoIsRefusedWithoutBlocking) {
  // A FIFO (mode 600) blocked communicator init and `dynamiccl coord` forever in open().
  char dir[] = "/tmp/dynamiccl-token-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/token";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {  // unblocks a blocked reader after 3 s: the test fails on time, not by hanging
    for (int i = 0; i < 300 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done) return;
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto token = readTokenFile(fifo);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  watchdog.join();
  unlink(fifo.c_str());
  rmdir(dir);
  EXPECT_LT(seconds, 1.0);
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.error().find("not a regular file"), std::string::npos) << token.error();
}

TEST(OnlineCoord, RecordsAreWriteOnceAndReadBackExactly) {
  auto server = startServer();
  auto client = makeTcpStore("127.0.0.1", server->port(), kToken);
  policy::OnlineTable t;
  t.setVersion(3);
  t.entry(policy::onlineKey(4, 1 << 20)).exploit.count = 1;
  const std::string bytes = t.serialize();
  EXPECT_EQ(client->publish(7, 1000, bytes), PublishResult::Won);
  EXPECT_EQ(client->publish(7, 1000, kFrozenRecord), PublishResult::Lost);  // the first record stays
  auto back = client->read(7, 1000);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ(**back, bytes);
  auto parsed = policy::OnlineTable::deserialize(**back);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)->version(), 3u);
  auto missing = client->read(7, 2000);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST(OnlineCoord, UnauthenticatedPeersAreRefusedAndLearnNothing) {
  auto server = startServer();
  auto good = makeTcpStore("127.0.0.1", server->port(), kToken);
  ASSERT_EQ(good->publish(1, 10, "payload"), PublishResult::Won);
  auto bad = makeTcpStore("127.0.0.1", server->port(), "wrong-token-wrong-token");
  EXPECT_EQ(bad->publish(1, 20, "evil"), PublishResult::Failed);
  EXPECT_FALSE(bad->read(1, 10).ok());  // refused, not the record
  EXPECT_GE(server->stats().refusedAuth, 2u);
  auto rec = good->read(1, 20);
  ASSERT_TRUE(rec.ok());
  EXPECT_FALSE(rec->has_value());  // the unauthenticated publish stored nothing
}

TEST(OnlineCoord, GarbageAndFloodsLeaveTheServerServing) {
  ServerLimits limits;
  limits.maxConnections = 8;
  auto server = startServer(limits);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200; ++i) {  // random bytes of random lengths, some longer than a header
    std::string junk(rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    const int status = sendRaw(server->port(), junk);
    EXPECT_TRUE(status == -1 || status == static_cast<int>(wire::Status::BadRequest)) << status;
  }
  // A valid header announcing a payload beyond the bound is refused before anything is read.
  wire::RequestHeader h;
  h.op = static_cast<uint8_t>(wire::Op::Publish);
  h.token = wire::padToken(kToken);
  h.length = 0xffffffffu;
  EXPECT_EQ(sendRaw(server->port(), wire::encodeRequestHeader(h)), static_cast<int>(wire::Status::BadRequest));
  // Idle connections beyond the bound are turned away; they time out, and service resumes.
  std::vector<int> idle;
  for (int i = 0; i < 12; ++i) idle.push_back(connectLocal(server->port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  for (int fd : idle) close(fd);
  EXPECT_GT(server->stats().busy, 0u);
  EXPECT_GT(server->stats().badRequests, 150u);
  auto client = makeTcpStore("127.0.0.1", server->port(), kToken);
  EXPECT_EQ(client->publish(9, 9, "still here"), PublishResult::Won);
}

TEST(OnlineCoord, RepeatedBadTokensGetThePeerBanned) {
  ServerLimits limits;
  limits.authFailuresBeforeBan = 5;
  auto server = startServer(limits);
  auto bad = makeTcpStore("127.0.0.1", server->port(), "wrong-token-wrong-token");
  for (int i = 0; i < 5; ++i) bad->read(1, 1);
  auto good = makeTcpStore("127.0.0.1", server->port(), kToken);
  EXPECT_EQ(good->publish(2, 2, "x"), PublishResult::Failed);  // the address is banned for a while
}

// A connection from another loopback source address (all of 127/8 reaches 127.0.0.1), so that one
// test can play many peers; -1 when the connection could not be made.
int connectFrom(const std::string& source, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  wire::setTimeouts(fd, 2000);
  return fd;
}

// Slow senders from many addresses, each trickling its header a byte at a time and reconnecting
// when cut off, until stop is set.
class Trickle {
 public:
  Trickle(int port, int peers) {
    wire::RequestHeader h;
    h.op = static_cast<uint8_t>(wire::Op::Read);
    h.token = wire::padToken("a-guess-at-the-token");
    const std::string bytes = wire::encodeRequestHeader(h);
    for (int i = 0; i < peers; ++i)
      threads_.emplace_back([this, port, i, bytes] {
        const std::string source = "127.0.2." + std::to_string(i + 2);
        while (!stop_.load()) {
          const int fd = connectFrom(source, port);
          if (fd < 0) break;
          ++connections_;
          for (char byte : bytes) {
            if (stop_.load() || send(fd, &byte, 1, MSG_NOSIGNAL) != 1) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
          close(fd);
        }
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // every slot taken before the test goes on
  }
  ~Trickle() {
    stop_.store(true);
    for (auto& t : threads_) t.join();
  }
  int connections() const { return connections_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<std::thread> threads_;
};

// 40 peers without the token trickling bytes hold no slot for long: a client with the token is
// answered every time, and stop() returns promptly although they keep trickling.
TEST(OnlineCoord, SlowSendersWithoutTheTokenLockNobodyOut) {
  ServerLimits limits;
  limits.requestTimeout_ms = 1000;
  auto s = Server::start(0, kToken, limits, "127.0.0.1");
  ASSERT_TRUE(s.ok()) << s.error();
  auto server = std::move(s.value());
  Trickle trickle(server->port(), 40);
  auto good = makeTcpStore("127.0.0.1", server->port(), kToken, 1000);
  ASSERT_EQ(good->publish(5, 5, "payload"), PublishResult::Won);
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = good->read(5, 5);
    answered += r.ok() && r->has_value() ? 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(answered, 20);
  const auto t0 = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_GT(trickle.connections(), 0);
}

// A ban lasts its time however many other addresses come by (the peer table is bounded without
// forgetting bans).
TEST(OnlineCoord, ManyDistinctPeersDoNotLiftABan) {
  ServerLimits limits;
  limits.authFailuresBeforeBan = 3;
  limits.banSeconds = 60;
  auto server = startServer(limits);
  auto bad = makeTcpStore("127.0.0.1", server->port(), "wrong-token-wrong-token");
  for (int i = 0; i < 3; ++i) bad->read(1, 1);
  wire::RequestHeader h;
  h.op = static_cast<uint8_t>(wire::Op::Read);
  h.token = wire::padToken(kToken);
  const std::string request = wire::encodeRequestHeader(h);
  int served = 0;
  for (int i = 0; i < 4200; ++i) {  // more distinct addresses than the table holds (4096)
    const int fd = connectFrom("127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), server->port());
    if (fd < 0) continue;
    char answer[wire::kResponseHeaderBytes];
    if (wire::sendAll(fd, request.data(), request.size()) && wire::recvAll(fd, answer, sizeof answer)) ++served;
    close(fd);
  }
  EXPECT_GT(served, 4096);
  auto good = makeTcpStore("127.0.0.1", server->port(), kToken);
  EXPECT_EQ(good->publish(2, 2, "x"), PublishResult::Failed);  // 127.0.0.1 is still banned
}

// The coordinator listens on loopback unless told otherwise; a listen address must be an address.
TEST(OnlineCoord, ListensOnLoopbackByDefault) {
  auto server = Server::start(0, kToken);
  ASSERT_TRUE(server.ok()) << server.error();
  // /proc/net/tcp: "sl local_address rem_address st ...", addresses as hex IP:port, 0A = LISTEN.
  char port[8];
  std::snprintf(port, sizeof port, ":%04X", (*server)->port());
  std::ifstream tcp("/proc/net/tcp");
  std::string line, listening;
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.ends_with(port)) listening = local;
  }
  EXPECT_EQ(listening, std::string("0100007F") + port);
  auto client = makeTcpStore("127.0.0.1", (*server)->port(), kToken);
  EXPECT_EQ(client->publish(1, 1, "x"), PublishResult::Won);
  EXPECT_FALSE(Server::start(0, kToken, {}, "not-an-address").ok());
}

TEST(OnlineCoord, TablesFromTheWireAreCheckedFieldByField) {
  policy::OnlineTable t;
  auto& e = t.entry(policy::onlineKey(4, 4096));
  e.exploit.count = 1;
  e.exploit.decisions[0] = {Algo::Ring, Proto::LL, 0, 0};
  std::string bytes = t.serialize();
  ASSERT_TRUE(policy::OnlineTable::deserialize(bytes).ok());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {  // every corruption either parses to a valid table or is refused
    std::string b = bytes;
    b[rng() % b.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    auto parsed = policy::OnlineTable::deserialize(b);
    if (parsed.ok()) {
      EXPECT_LE((*parsed)->entry(policy::onlineKey(4, 4096)).exploit.count, 4);
    }
  }
  EXPECT_FALSE(policy::OnlineTable::deserialize(std::string(policy::kOnlineMaxRecordBytes + 1, 'x')).ok());
}

}  // namespace
}  // namespace dynamiccl::coord
