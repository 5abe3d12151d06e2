// A plain-text sink for checking the measurement channel by eye or from tests through dlopen:
// DYNAMICCL_OBSERVATION_LOG=<path> appends one CSV line per observation, flushed per batch.
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>

#include "plugin/log.h"
#include "plugin/profiler/worker.h"

namespace dynamiccl::plugin {
namespace {

class LogFileSink final : public WorkerSink {
 public:
  explicit LogFileSink(FILE* f) : f_(f) {}
  ~LogFileSink() override { std::fclose(f_); }

  void consume(const Observation* o, size_t n) override {
    for (size_t i = 0; i < n; ++i)
      std::fprintf(f_, "%llu,%d,%llu,%s,%llu,%s,%s,%d,%.3f,%.3f,%s,%d\n",
                   static_cast<unsigned long long>(o[i].commId), o[i].rank, static_cast<unsigned long long>(o[i].seq),
                   collectiveName(o[i].coll).data(), static_cast<unsigned long long>(o[i].bytes),
                   algoNcclName(o[i].algo).data(), protoNcclName(o[i].proto).data(), o[i].nChannels, o[i].gpu_us,
                   o[i].cpu_us, o[i].gpuTiming ? "gpu" : "host", o[i].nRanks);
    std::fflush(f_);
  }

 private:
  FILE* f_;
};

}  // namespace

std::unique_ptr<WorkerSink> makeLogFileSink(const Settings& s) {
  if (s.observationLog.empty()) return nullptr;
  const char* path = s.observationLog.c_str();
  // Owner-only, never through a symlink someone else planted.
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE* f = fd >= 0 ? ::fdopen(fd, "a") : nullptr;
  if (!f) {
    if (fd >= 0) ::close(fd);
    logWarn("profiler: cannot open DYNAMICCL_OBSERVATION_LOG=%s", path);
    return nullptr;
  }
  return std::make_unique<LogFileSink>(f);
}

}  // namespace dynamiccl::plugin
