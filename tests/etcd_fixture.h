// A real etcd on loopback for the tests: started on free ports with its data in a temporary
// directory, stopped (and the directory removed) with the object. Tests skip where no etcd binary is
// installed (scripts/setup.sh installs Debian's etcd-server).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "coord/coord.h"

namespace dynamiccl::testing {

inline std::string etcdBinary() {
  for (const char* p : {"/usr/bin/etcd", "/usr/local/bin/etcd"})
    if (access(p, X_OK) == 0) return p;
  return "";
}
inline std::string etcdctlBinary() {
  for (const char* p : {"/usr/bin/etcdctl", "/usr/local/bin/etcdctl"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

// A port nothing listens on now (the kernel's choice for port 0).
inline int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

// Endpoints on loopback that listen and never answer (sockets of this process, never accepted):
// a connection is made or left pending, and no byte ever comes back.
class SilentEndpoints {
 public:
  explicit SilentEndpoints(int count) {
    for (int i = 0; i < count; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof a;
      if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1) != 0 ||
          getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        if (fd >= 0) close(fd);
        continue;
      }
      fds_.push_back(fd);
      list_ += (list_.empty() ? "" : ",") + std::string("http://127.0.0.1:") + std::to_string(ntohs(a.sin_port));
    }
  }
  ~SilentEndpoints() {
    for (int fd : fds_) close(fd);
  }
  SilentEndpoints(const SilentEndpoints&) = delete;
  SilentEndpoints& operator=(const SilentEndpoints&) = delete;
  size_t size() const { return fds_.size(); }
  const std::string& endpoints() const { return list_; }  // comma-separated, as DYNAMICCL_ETCD

 private:
  std::vector<int> fds_;
  std::string list_;
};

// Files for an etcd serving TLS and requiring client certificates (all empty: plain HTTP).
struct EtcdTls {
  std::string ca, serverCert, serverKey, clientCert, clientKey;
};

// One or more etcd members forming a cluster on loopback.
class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 1, EtcdTls tls = {}) : tls_(std::move(tls)) {
    char tmpl[] = "/tmp/dynamiccl-etcd-XXXXXX";
    dir_ = mkdtemp(tmpl);
    members_.resize(members);
    for (int i = 0; i < members; ++i) members_[i].name = "m" + std::to_string(i);
    startOnFreshPorts();
  }
  ~EtcdCluster() {
    for (Member& m : members_) stop(m);
    std::filesystem::remove_all(dir_);
  }
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // Whether every member answers a range request: within 60 s at the first start (a loaded 2-core CI
  // machine), 20 s after. A free port can be taken by another
  // process (a test running beside this one) before etcd binds it: a member that exits before the
  // cluster first answered is started again, the whole cluster on fresh ports, up to 3 times. What a
  // member that never answered logged goes to stderr, so a failure says why.
  bool ready() {
    for (int attempt = 0;; ++attempt) {
      const Answer a = answerEach();
      if (a == Answer::AllUp) return everUp_ = true;
      if (a == Answer::Exited && !everUp_ && attempt < 3) {
        for (Member& m : members_) stop(m);
        for (Member& m : members_) std::filesystem::remove_all(dir_ + "/" + m.name);
        startOnFreshPorts();
        continue;
      }
      for (const Member& m : members_) printLog(m);
      return false;
    }
  }

  std::string endpoint(size_t i = 0) const {
    return (tls_.ca.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(members_[i].clientPort);
  }
  std::string endpoints() const {
    std::string out;
    for (size_t i = 0; i < members_.size(); ++i) out += (i ? "," : "") + endpoint(i);
    return out;
  }
  void signal(int sig, size_t i = 0) const {
    if (members_[i].pid > 0) kill(members_[i].pid, sig);
  }
  void kill9(size_t i = 0) {
    signal(SIGKILL, i);
    if (members_[i].pid > 0) waitpid(members_[i].pid, nullptr, 0);
    members_[i].pid = -1;
  }
  // Kills member i and starts it again on the same ports with an empty data directory: a store
  // that lost its data (a single member is a new cluster of its own; true when it answers again).
  bool restartEmpty(size_t i = 0) {
    kill9(i);
    std::filesystem::remove_all(dir_ + "/" + members_[i].name);
    start(members_[i], initial_);
    return ready();
  }
  // Starts member i again (killed before) on the same ports with its data kept; ready() tells when
  // the cluster answers again.
  void startAgainKept(size_t i = 0) {
    kill9(i);
    start(members_[i], initial_);
  }
  // etcdctl against the first live member: its standard output.
  std::string ctlOutput(const std::string& args) const {
    const std::string cmd = etcdctlBinary() + " --endpoints=" + endpoint(firstLive()) + " " + args + " 2>/dev/null";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
      pclose(p);
    }
    return out;
  }
  // etcdctl against the first live member; its exit status.
  int ctl(const std::string& args) const {
    const std::string cmd = etcdctlBinary() + " --endpoints=" + endpoint(firstLive()) + " " + args + " >/dev/null 2>&1";
    return std::system(cmd.c_str());
  }

 private:
  struct Member {
    std::string name;
    int clientPort = 0, peerPort = 0;
    pid_t pid = -1;
  };
  enum class Answer { AllUp, Exited, Silent };
  Answer answerEach() {
    for (size_t i = 0; i < members_.size(); ++i) {
      coord::EtcdOptions o;
      o.endpoints = {endpoint(i)};
      o.caFile = tls_.ca;
      o.certFile = tls_.clientCert;
      o.keyFile = tls_.clientKey;
      auto store = coord::openEtcdStore(o);
      if (!store.ok()) return Answer::Silent;
      bool up = false;
      for (int t = 0, tries = everUp_ ? 400 : 1200; t < tries && !up; ++t) {
        up = (*store)->read(0, 0).ok();
        if (up) break;
        if (exited(members_[i])) return Answer::Exited;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (!up) return Answer::Silent;
    }
    return Answer::AllUp;
  }
  // Reaps member m if its process has ended.
  static bool exited(Member& m) {
    if (m.pid <= 0) return true;
    int status = 0;
    if (waitpid(m.pid, &status, WNOHANG) != m.pid) return false;
    m.pid = -1;
    return true;
  }
  void startOnFreshPorts() {
    std::string initial;
    for (size_t i = 0; i < members_.size(); ++i) {
      Member& m = members_[i];
      m.clientPort = freePort();
      m.peerPort = freePort();
      initial += (i ? "," : "") + m.name + "=http://127.0.0.1:" + std::to_string(m.peerPort);
    }
    initial_ = initial;
    for (Member& m : members_) start(m, initial_);
  }
  void printLog(const Member& m) const {
    std::ifstream log(dir_ + "/" + m.name + ".log");
    std::string line, text;
    for (int n = 0; n < 20 && std::getline(log, line); ++n) text += "  " + line + "\n";  // etcd says why it stopped first
    std::fprintf(stderr, "etcd member %s (client port %d, peer port %d, %s) logged:\n%s", m.name.c_str(), m.clientPort,
                 m.peerPort, m.pid > 0 ? "running" : "exited", text.c_str());
  }
  size_t firstLive() const {
    for (size_t i = 0; i < members_.size(); ++i)
      if (members_[i].pid > 0) return i;
    return 0;
  }
  void start(Member& m, const std::string& initial) {
    const std::string client = (tls_.ca.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(m.clientPort);
    const std::string peer = "http://127.0.0.1:" + std::to_string(m.peerPort);
    const std::string data = dir_ + "/" + m.name;
    const std::string log = dir_ + "/" + m.name + ".log";
    std::vector<std::string> args = {etcdBinary(), "--name", m.name, "--data-dir", data, "--listen-client-urls", client,
                                     "--advertise-client-urls", client, "--listen-peer-urls", peer,
                                     "--initial-advertise-peer-urls", peer, "--initial-cluster", initial,
                                     "--initial-cluster-state", "new", "--logger", "zap", "--log-level", "error"};
    if (!tls_.ca.empty())
      args.insert(args.end(), {"--cert-file", tls_.serverCert, "--key-file", tls_.serverKey, "--trusted-ca-file", tls_.ca,
                               "--client-cert-auth"});
    m.pid = fork();
    if (m.pid == 0) {
      setenv("ETCD_UNSUPPORTED_ARCH", "", 0);
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  static void stop(Member& m) {
    if (m.pid <= 0) return;
    kill(m.pid, SIGCONT);  // a stopped member would not see SIGTERM
    kill(m.pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      if (waitpid(m.pid, &status, WNOHANG) == m.pid) return void(m.pid = -1);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(m.pid, SIGKILL);
    waitpid(m.pid, &status, 0);
    m.pid = -1;
  }
  EtcdTls tls_;
  bool everUp_ = false;
  std::string dir_, initial_;
  std::vector<Member> members_;
};

}  // namespace dynamiccl::testing
