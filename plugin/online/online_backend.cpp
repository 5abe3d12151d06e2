#include "plugin/online/online_backend.h"

namespace dynamiccl::plugin {

Expected<std::shared_ptr<coord::RecordStore>> openOnlineBackend(const Settings& s, const CommShape& shape) {
  if (!s.coordHost.empty()) {
    auto token = coord::readTokenFile(s.coordTokenFile);
    if (!token.ok()) return makeError(token.error());
    return std::shared_ptr<coord::RecordStore>(coord::makeTcpStore(s.coordHost, s.coordPort, *token));
  }
  if (!s.coordDir.empty()) {
    auto store = coord::openDirStore(s.coordDir, false, s.coordDelay_ms);
    if (!store.ok()) return makeError(store.error());
    return std::shared_ptr<coord::RecordStore>(std::move(store.value()));
  }
  if (shape.nNodes != 1) return makeError("no coordination backend for a multi-node communicator");
  auto store = coord::openDirStore(coord::nodeLocalDir(), true, s.coordDelay_ms);
  if (!store.ok()) return makeError(store.error());
  return std::shared_ptr<coord::RecordStore>(std::move(store.value()));
}

}  // namespace dynamiccl::plugin
