// A plain-text sink for checking the measurement channel by eye or from tests through dlopen:
// DYNAMICCL_OBSERVATION_LOG=<path> appends one CSV line per observation, written per batch.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "plugin/log.h"
#include "plugin/profiler/worker.h"

namespace dynamiccl::plugin {
namespace {

class LogFileSink final : public WorkerSink {
 public:
  LogFileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~LogFileSink() override { ::close(fd_); }

  void consume(const Observation* o, const JoinedDecision*, size_t n) override {
    text_.clear();
    char line[512];
    for (size_t i = 0; i < n; ++i) {
      const int len = std::snprintf(
          line, sizeof line, "%llu,%d,%llu,%s,%llu,%s,%s,%d,%.3f,%.3f,%s,%d\n",
          static_cast<unsigned long long>(o[i].commId), o[i].rank, static_cast<unsigned long long>(o[i].seq),
          collectiveName(o[i].coll).data(), static_cast<unsigned long long>(o[i].bytes),
          algoNcclName(o[i].algo).data(), protoNcclName(o[i].proto).data(), o[i].nChannels, o[i].gpu_us,
          o[i].cpu_us, o[i].gpuTiming ? "gpu" : "host", o[i].nRanks);
      if (len > 0) text_.append(line, std::min<size_t>(static_cast<size_t>(len), sizeof line - 1));
    }
    if (!writeAll()) {
      // A full disk or a broken file loses the batch: counted, and said once.
      profilerCounters().unwritten.fetch_add(n, std::memory_order_relaxed);
      if (!reported_) logWarn("profiler: cannot write DYNAMICCL_OBSERVATION_LOG=%s (%s); further losses are counted",
                              path_.c_str(), std::strerror(errno));
      reported_ = true;
    }
  }

 private:
  bool writeAll() {
    size_t done = 0;
    while (done < text_.size()) {
      const ssize_t w = ::write(fd_, text_.data() + done, text_.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }

  int fd_;
  std::string path_;
  std::string text_;
  bool reported_ = false;
};

}  // namespace

std::unique_ptr<WorkerSink> makeLogFileSink(const Settings& s) {
  if (s.observationLog.empty()) return nullptr;
  const char* path = s.observationLog.c_str();
  // Owner-only, never through a symlink someone else planted, never a FIFO or device (open would block).
  auto fd = openRegularFile(path, O_WRONLY | O_CREAT | O_APPEND, FollowLinks::No);
  if (!fd) {
    logWarn("profiler: DYNAMICCL_OBSERVATION_LOG refused: %s", fd.error().c_str());
    return nullptr;
  }
  return std::make_unique<LogFileSink>(*fd, path);
}

}  // namespace dynamiccl::plugin
