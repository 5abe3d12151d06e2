#include "plugin/online_backend.h"

#include <mutex>

namespace dynamiccl::plugin {
namespace {

// One etcd client per process and configuration: communicators come by the hundred, and each would
// otherwise grant its own lease and authenticate again.
Expected<std::shared_ptr<coord::RecordStore>> etcdStore(const Settings& s) {
  static std::mutex mutex;
  static std::string cachedFor;
  static std::shared_ptr<coord::RecordStore> cached;
  coord::EtcdOptions o;
  o.endpoints = s.etcdEndpoints;
  o.caFile = s.etcd.ca;
  o.certFile = s.etcd.cert;
  o.keyFile = s.etcd.key;
  o.timeout_ms = s.etcd.timeout_ms;
  o.ttl_s = s.etcd.ttl_s;
  if (!s.etcd.authFile.empty()) {
    auto credentials = coord::readEtcdCredentials(s.etcd.authFile);
    if (!credentials.ok()) return makeError(credentials.error());
    o.user = credentials->user;
    o.password = credentials->password;
  }
  std::string key;
  for (const std::string& e : o.endpoints) key += e + ",";
  key += "\n" + o.user + "\n" + o.password + "\n" + o.caFile + "\n" + o.certFile + "\n" + o.keyFile + "\n" +
         std::to_string(o.timeout_ms) + "\n" + std::to_string(o.ttl_s);
  std::lock_guard lock(mutex);
  if (cached && cachedFor == key) return cached;
  auto store = coord::openEtcdStore(o);
  if (!store.ok()) return makeError(store.error());
  cached = std::move(store.value());
  cachedFor = key;
  return cached;
}

}  // namespace

bool hasOnlineBackend(const Settings& s, const CommShape& shape) {
  return !s.etcdEndpoints.empty() || !s.coordDir.empty() || shape.nNodes == 1;
}

Expected<std::shared_ptr<coord::RecordStore>> openOnlineBackend(const Settings& s, const CommShape& shape) {
  if (!s.etcdEndpoints.empty()) return etcdStore(s);
  if (!s.coordDir.empty()) {
    auto store = coord::openDirStore(s.coordDir, false, s.test.coordDelay_ms, s.test.publishFails_ms);
    if (!store.ok()) return makeError(store.error());
    return std::shared_ptr<coord::RecordStore>(std::move(store.value()));
  }
  if (!hasOnlineBackend(s, shape)) return makeError("no coordination backend for a multi-node communicator");
  auto store = coord::openDirStore(coord::nodeLocalDir(), true, s.test.coordDelay_ms, s.test.publishFails_ms);
  if (!store.ok()) return makeError(store.error());
  return std::shared_ptr<coord::RecordStore>(std::move(store.value()));
}

}  // namespace dynamiccl::plugin
