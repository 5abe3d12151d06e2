// The etcd backend against a real etcd on loopback: write-once records, exact bytes back, leases,
// credentials, and endpoints that are down or trickle bytes (every request ends within its bound).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "coord/http_client.h"
#include "tests/etcd_fixture.h"
#include "tests/set_poll_check.h"

namespace dynamiccl::coord {
namespace {

using testing::EtcdCluster;

#define SKIP_WITHOUT_ETCD() \
  if (testing::etcdBinary().empty()) GTEST_SKIP() << "no etcd binary (scripts/setup.sh installs etcd-server)"

std::unique_ptr<RecordStore> storeFor(const std::string& endpoints, int timeout_ms = 2000) {
  EtcdOptions o;
  for (size_t at = 0; at <= endpoints.size();) {
    const size_t comma = std::min(endpoints.find(',', at), endpoints.size());
    o.endpoints.push_back(endpoints.substr(at, comma - at));
    at = comma + 1;
  }
  o.timeout_ms = timeout_ms;
  auto s = openEtcdStore(o);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
  return s.ok() ? std::move(s.value()) : nullptr;
}

TEST(EtcdStore, RecordsAreWriteOnceAndReadBackExactly) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  auto store = storeFor(etcd.endpoint());
  std::string bytes = "table\n";
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);  // every byte value, NUL included
  EXPECT_EQ(store->publish(7, 1000, bytes), PublishResult::Won);
  EXPECT_EQ(store->publish(7, 1000, kFrozenRecord), PublishResult::Lost);  // the first record stays
  auto back = store->read(7, 1000);
  ASSERT_TRUE(back.ok() && back->has_value()) << (back.ok() ? "absent" : back.error());
  EXPECT_EQ(**back, bytes);
  auto missing = store->read(7, 2000);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(store->publish(8, 1000, ""), PublishResult::Won);  // an empty record is a record
  auto empty = store->read(8, 1000);
  ASSERT_TRUE(empty.ok() && empty->has_value());
  EXPECT_EQ(**empty, "");
}

TEST(EtcdStore, ConcurrentPublishersHaveExactlyOneWinner) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  std::atomic<int> won{0}, lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto store = storeFor(etcd.endpoint());
      for (uint64_t b = 1; b <= 20; ++b) {
        const PublishResult r = store->publish(42, b, "writer " + std::to_string(t));
        (r == PublishResult::Won ? won : lost)++;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 20);
  EXPECT_EQ(lost.load(), 7 * 20);
}

TEST(EtcdStore, APollReadsRecordsAndCountsTheSetAsAJoinDoesInOneTransaction) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  auto store = storeFor(etcd.endpoint());
  const auto count = testing::pollAfterThreeJoins(*store, 9, std::chrono::milliseconds(0));
  EXPECT_EQ(count.filling_ns, -1);  // etcd keeps no times
}

TEST(EtcdStore, KeysAreLeasedSoOldJobsExpire) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  auto store = storeFor(etcd.endpoint());
  ASSERT_EQ(store->publish(0xabc, 10, "x"), PublishResult::Won);
  // etcdctl prints the lease of the key; a key without one has none.
  const std::string json = etcd.ctlOutput("get --prefix dynamiccl/ -w json");
  ASSERT_NE(json.find("\"kvs\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"lease\":"), std::string::npos) << json;
}

TEST(EtcdStore, WrongCredentialsFailEveryRequestAndRightOnesWork) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  ASSERT_EQ(etcd.ctl("user add root:rootpw"), 0);
  ASSERT_EQ(etcd.ctl("auth enable"), 0);
  EtcdOptions o;
  o.endpoints = {etcd.endpoint()};
  o.user = "root";
  o.password = "wrong";
  auto bad = openEtcdStore(o);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ((*bad)->publish(1, 10, "evil"), PublishResult::Failed);
  EXPECT_FALSE((*bad)->read(1, 10).ok());
  o.password = "rootpw";
  auto good = openEtcdStore(o);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ((*good)->publish(1, 10, "fine"), PublishResult::Won);
  auto back = (*good)->read(1, 10);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ(**back, "fine");
  auto anonymous = storeFor(etcd.endpoint());
  EXPECT_FALSE(anonymous->read(1, 10).ok());  // auth on: no reading without credentials
  // A dead first endpoint does not stop authentication at the next one.
  o.endpoints = {"http://127.0.0.1:" + std::to_string(testing::freePort()), etcd.endpoint()};
  auto failover = openEtcdStore(o);
  ASSERT_TRUE(failover.ok());
  EXPECT_EQ((*failover)->publish(1, 20, "again"), PublishResult::Won);
}

// A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl in dir.
bool makeCertificates(const std::string& dir) {
  const std::string o = "openssl ";
  const std::string q = " >/dev/null 2>&1";
  const std::string cmds[] = {
      o + "req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/ca.key -out " + dir + "/ca.crt -days 1 -subj /CN=test-ca",
      o + "req -newkey rsa:2048 -nodes -keyout " + dir + "/server.key -out " + dir + "/server.csr -subj /CN=127.0.0.1",
      "printf 'subjectAltName=IP:127.0.0.1\\n' > " + dir + "/san.ext",
      o + "x509 -req -in " + dir + "/server.csr -CA " + dir + "/ca.crt -CAkey " + dir + "/ca.key -CAcreateserial -out " +
          dir + "/server.crt -days 1 -extfile " + dir + "/san.ext",
      o + "req -newkey rsa:2048 -nodes -keyout " + dir + "/client.key -out " + dir + "/client.csr -subj /CN=root",
      o + "x509 -req -in " + dir + "/client.csr -CA " + dir + "/ca.crt -CAkey " + dir + "/ca.key -CAcreateserial -out " +
          dir + "/client.crt -days 1"};
  for (const std::string& c : cmds)
    if (std::system((c + q).c_str()) != 0) return false;
  return true;
}

TEST(EtcdStore, TlsWithClientCertificatesAndNothingWithoutThem) {
  SKIP_WITHOUT_ETCD();
  if (std::system("openssl version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl to make certificates";
  char tmpl[] = "/tmp/dynamiccl-tls-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  ASSERT_TRUE(makeCertificates(dir));
  testing::EtcdTls tls{dir + "/ca.crt", dir + "/server.crt", dir + "/server.key", dir + "/client.crt", dir + "/client.key"};
  {
    EtcdCluster etcd(1, tls);
    ASSERT_TRUE(etcd.ready());
    EtcdOptions o;
    o.endpoints = {etcd.endpoint()};
    o.caFile = tls.ca;
    o.certFile = tls.clientCert;
    o.keyFile = tls.clientKey;
    auto good = openEtcdStore(o);
    ASSERT_TRUE(good.ok());
    EXPECT_EQ((*good)->publish(5, 50, "over tls"), PublishResult::Won);
    auto back = (*good)->read(5, 50);
    ASSERT_TRUE(back.ok() && back->has_value()) << (back.ok() ? "absent" : back.error());
    EXPECT_EQ(**back, "over tls");
    o.certFile.clear();  // no client certificate: refused
    o.keyFile.clear();
    auto anonymous = openEtcdStore(o);
    ASSERT_TRUE(anonymous.ok());
    EXPECT_FALSE((*anonymous)->read(5, 50).ok());
    o.caFile.clear();  // the server's certificate is not one the system trusts
    o.certFile = tls.clientCert;
    o.keyFile = tls.clientKey;
    auto untrusted = openEtcdStore(o);
    ASSERT_TRUE(untrusted.ok());
    EXPECT_FALSE((*untrusted)->read(5, 50).ok());
  }
  std::filesystem::remove_all(dir);
}

TEST(EtcdStore, CredentialsFileMustBePrivateAndOneLine) {
  char dir[] = "/tmp/dynamiccl-cred-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/cred";
  std::ofstream(path) << "alice:s3cret\n";
  chmod(path.c_str(), 0644);
  auto open = readEtcdCredentials(path);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().find("chmod 600"), std::string::npos) << open.error();
  chmod(path.c_str(), 0600);
  auto ok = readEtcdCredentials(path);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->user, "alice");
  EXPECT_EQ(ok->password, "s3cret");
  std::ofstream(path) << "no-colon-here";
  EXPECT_FALSE(readEtcdCredentials(path).ok());
  std::filesystem::remove_all(dir);
}

TEST(EtcdStore, CredentialsFileNamingAFifoIsRefusedWithoutBlocking) {
  char dir[] = "/tmp/dynamiccl-cred-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/cred";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {  // unblocks a blocked reader after 3 s: the test fails instead of hanging
    for (int i = 0; i < 300 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done) return;
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
  });
  auto read = readEtcdCredentials(fifo);  // a blocked open would be freed by the watchdog, then read nothing
  done = true;
  watchdog.join();
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().find("not a regular file"), std::string::npos) << read.error();
}

// Accepts connections and answers each with one byte per second, forever (until destroyed).
class TricklingServer {
 public:
  TricklingServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 64);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) break;
        clients_.emplace_back([this, c] {
          const char* reply = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{";
          for (size_t i = 0; reply[i] && !stop_; ++i) {
            if (send(c, reply + i, 1, MSG_NOSIGNAL) != 1) break;
            for (int t = 0; t < 100 && !stop_; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          close(c);
        });
      }
    });
  }
  ~TricklingServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    for (auto& t : clients_) t.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> clients_;
};

TEST(EtcdStore, AnEndpointThatTricklesBytesFailsTheRequestInsteadOfHoldingIt) {
  TricklingServer trickle;
  auto store = storeFor(trickle.endpoint(), 1500);
  ASSERT_TRUE(store);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {  // a request that never ends fails the test instead of hanging it
    for (int i = 0; i < 3000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(done.load()) << "a request to a trickling endpoint outlived 30 s";
  });
  EXPECT_EQ(store->publish(1, 10, "x"), PublishResult::Failed);
  EXPECT_FALSE(store->read(1, 10).ok());
  done = true;
  watchdog.join();
}

TEST(EtcdStore, ADeadEndpointIsSkippedForTheNextOne) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  const std::string dead = "http://127.0.0.1:" + std::to_string(testing::freePort());
  auto store = storeFor(dead + "," + etcd.endpoint());
  EXPECT_EQ(store->publish(3, 30, "x"), PublishResult::Won);
  auto back = store->read(3, 30);
  ASSERT_TRUE(back.ok() && back->has_value());
}

TEST(EtcdStore, OneOperationOverManySilentEndpointsEndsWithinItsTimeout) {
  // DYNAMICCL_ETCD_CLIENT's timeout_ms bounds an operation, all endpoints together (not each endpoint's try).
  testing::SilentEndpoints silent(100);
  ASSERT_EQ(silent.size(), 100u);
  auto store = storeFor(silent.endpoints(), 200);
  ASSERT_TRUE(store);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  EXPECT_FALSE(store->read(1, 10).ok());
  const double read_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  EXPECT_EQ(store->publish(1, 10, "x"), PublishResult::Failed);  // the lease grant and the transaction together
  const double publish_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  EXPECT_LT(read_ms, 1000) << "a read over 100 silent endpoints at a 200 ms timeout";
  EXPECT_LT(publish_ms, 1000) << "a publish over 100 silent endpoints at a 200 ms timeout";
}

TEST(EtcdStore, NoLibcurlIsOneClearError) {
  // What a machine without libcurl sees: the plugin's backend cannot open, and says why.
  auto none = HttpClient::load("libcurl-that-does-not-exist.so.4");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("cannot load"), std::string::npos) << none.error();
}

}  // namespace
}  // namespace dynamiccl::coord
