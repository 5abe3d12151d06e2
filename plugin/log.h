// One process-wide route to NCCL's logger; lines are prefixed "DynamICCL:". Never on the hot path
// except the once-only warnings about odd input, which are guarded by an atomic flag.
#pragma once

#include <atomic>

#include "abi/abi.h"

namespace dynamiccl::plugin {

// The first non-null logger NCCL hands us wins; before that, warnings go to stderr.
void setLogger(ncclDebugLogger_t logger);
void logWarn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logInfo(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// True exactly once per flag: for "log one clear line" about something that may repeat per call.
inline bool firstTime(std::atomic<bool>& flag) { return !flag.exchange(true, std::memory_order_relaxed); }

}  // namespace dynamiccl::plugin
