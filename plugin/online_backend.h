// Where a communicator's records live (epochs, the input check): etcd, a shared directory, or (one node
// only) a node-local directory, as the settings name them.
#pragma once

#include <memory>

#include "coord/coord.h"
#include "features/features.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {

Expected<std::shared_ptr<coord::RecordStore>> openOnlineBackend(const Settings& s, const CommShape& shape);
// Whether the settings name a backend for this communicator (a multi-node one needs one configured).
bool hasOnlineBackend(const Settings& s, const CommShape& shape);

}  // namespace dynamiccl::plugin
