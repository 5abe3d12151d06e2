// bench_startup: wall time from exec to exit of the dynamiccl command, the cost every command pays
// before it does anything (LibTorch is loaded only by the commands that train): `--version`, and
// `show` of an example profile through the plugin. Prints min / median / max over the runs.
//   bench_startup [runs (default 20)]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

// Seconds one run of argv took, or a negative number if it could not run or failed.
double timedRun(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int status = 0;
  const bool ran = posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ) == 0 &&
                   waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  posix_spawn_file_actions_destroy(&quiet);
  return ran ? s : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const std::string exe = DYNAMICCL_EXE;
  const std::string profile = std::string(DYNAMICCL_SOURCE_DIR) + "/profiles/example-dgx-h100.json";
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"dynamiccl --version", {exe, "--version"}},
      {"dynamiccl show (example profile, 2 x 8 ranks)",
       {exe, "show", "--profile", profile, "--nodes", "2", "--ranks", "16", "--trust", "all"}},
  };
  std::printf("startup of %s, %d runs each (wall time, exec to exit)\n", exe.c_str(), runs);
  int rc = 0;
  for (const auto& [name, args] : commands) {
    timedRun(args);  // warm the page cache: the figure is a start, not a first read from disk
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) t.push_back(timedRun(args));
    std::sort(t.begin(), t.end());
    if (t.front() < 0) {
      std::printf("  %-48s failed\n", name.c_str());
      rc = 1;
      continue;
    }
    std::printf("  %-48s min %7.1f ms  median %7.1f ms  max %7.1f ms\n", name.c_str(), 1e3 * t.front(),
                1e3 * t[t.size() / 2], 1e3 * t.back());
  }
  return rc;
}
