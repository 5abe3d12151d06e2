// Which store the dynamiccl command opens when --db is not given.
#pragma once

#include <string>

#include "store/store.h"

namespace dynamiccl::cli {

// --db if given, else DYNAMICCL_DB, else the store's per-host default; DYNAMICCL_DB_MAX_MB caps it.
store::StoreOptions storeOptions(const std::string& dbFlag);

}  // namespace dynamiccl::cli
