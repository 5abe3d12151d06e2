// Helpers shared by the tests: temporary files and the built plugin opened like NCCL opens it.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "offline/harness/harness.h"

namespace dynamiccl::testing {

// Sanitized builds run every call several times slower, 8 ranks on 2 cores further skew them: tests
// that tell a bounded wait from an unbounded one scale the bound and the wait alike.
#if defined(__SANITIZE_THREAD__)
inline constexpr int kTimeScale = 6;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int kTimeScale = 3;
#else
inline constexpr int kTimeScale = 1;
#endif

// A file under a fresh temporary directory, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& suffix = ".json") {
    char dir[] = "/tmp/dynamiccl-test-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/file" + suffix;
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

inline std::shared_ptr<harness::TunerLibrary> openPlugin(int maxVersion = 7) {
  harness::OpenOptions options;
  options.maxVersion = maxVersion;
  auto lib = harness::TunerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR), options);
  EXPECT_TRUE(lib.ok()) << (lib.ok() ? "" : lib.error());
  return lib.ok() ? lib.value() : nullptr;
}

// How many lines the plugin logged (harness::LogCapture) contain needle.
inline size_t logLinesMentioning(const std::string& needle) {
  size_t n = 0;
  for (const std::string& l : harness::LogCapture::lines()) n += l.find(needle) != std::string::npos;
  return n;
}

// A profile with one rule per given line of rule JSON objects.
inline std::string profileJson(const std::string& rules, const std::string& name = "test") {
  return R"({"format":"dynamiccl-profile","version":1,"name":")" + name + R"(","rules":[)" + rules + "]}";
}

// Waits for forked ranks until deadline_s, killing stragglers (a hang fails the test); their exit
// codes, -1 for a rank that did not exit normally.
inline std::vector<int> waitForRanks(const std::vector<pid_t>& pids, double deadline_s) {
  std::vector<int> codes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        ADD_FAILURE() << "rank " << r << " hung past " << deadline_s << " s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

// A shell command's exit status (-1: not run, 128: no normal exit) and its standard output.
struct ShellResult {
  int rc = -1;
  std::string output;
};
inline ShellResult runShell(const std::string& cmd) {
  ShellResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

}  // namespace dynamiccl::testing
