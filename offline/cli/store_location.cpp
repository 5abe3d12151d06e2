#include "offline/cli/store_location.h"

#include <cstdlib>

namespace dynamiccl::cli {

store::StoreOptions storeOptions(const std::string& dbFlag) {
  store::StoreOptions o;
  o.path = dbFlag;
  if (const char* p = std::getenv("DYNAMICCL_DB"); o.path.empty() && p && *p) o.path = p;
  if (o.path.empty()) o.path = store::defaultDatabasePath();
  if (const char* mb = std::getenv("DYNAMICCL_DB_MAX_MB"); mb && *mb) {
    char* end = nullptr;
    const double v = std::strtod(mb, &end);
    if (*end == '\0' && v > 0 && v < 1e9) o.max_bytes = static_cast<int64_t>(v * 1024 * 1024);  // 1e9 MB: no overflow
  }
  return o;
}

}  // namespace dynamiccl::cli
