#include "plugin/log.h"

#include <cstdarg>
#include <cstdio>

namespace dynamiccl::plugin {
namespace {
std::atomic<ncclDebugLogger_t> gLogger{nullptr};

void vlog(ncclDebugLogLevel level, const char* fmt, va_list ap) {
  char line[1024];
  std::vsnprintf(line, sizeof line, fmt, ap);
  if (ncclDebugLogger_t logger = gLogger.load(std::memory_order_acquire)) {
    logger(level, NCCL_TUNING | NCCL_INIT, __FILE__, __LINE__, "DynamICCL: %s", line);
  } else if (level == NCCL_LOG_WARN) {
    std::fprintf(stderr, "DynamICCL WARN: %s\n", line);
  }
}
}  // namespace

void setLogger(ncclDebugLogger_t logger) {
  ncclDebugLogger_t expected = nullptr;
  if (logger) gLogger.compare_exchange_strong(expected, logger, std::memory_order_acq_rel);
}

void logWarn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(NCCL_LOG_WARN, fmt, ap);
  va_end(ap);
}

void logInfo(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(NCCL_LOG_INFO, fmt, ap);
  va_end(ap);
}

}  // namespace dynamiccl::plugin
