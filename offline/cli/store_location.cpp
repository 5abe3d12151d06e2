#include "offline/cli/store_location.h"

#include <cstdlib>

namespace dynamiccl::cli {

store::StoreOptions storeOptions(const std::string& dbFlag) {
  store::StoreOptions o;
  o.path = dbFlag;
  if (const char* p = std::getenv("DYNAMICCL_DB"); o.path.empty() && p && *p) o.path = p;
  if (o.path.empty()) o.path = store::defaultDatabasePath();
  if (auto cap = store::maxBytesFromMegabytes(std::getenv("DYNAMICCL_DB_MAX_MB"))) o.max_bytes = *cap;
  return o;
}

}  // namespace dynamiccl::cli
