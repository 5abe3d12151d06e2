// Cost-table helpers and NCCL's selection rule, the logger capture and scoped environment.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "offline/harness/harness.h"

namespace dynamiccl::harness {

CostTable allIgnored() {
  CostTable t;
  for (auto& row : t) row.fill(DYNAMICCL_NCCL_ALGO_PROTO_IGNORE);
  return t;
}

CostTable allAvailable(float cost_us) {
  CostTable t;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) t[a][p] = cost_us + 0.5f * static_cast<float>(a * kNumProtos + p);
  return t;
}

CostTable ncclPicks(int algo, int proto) {
  CostTable t = allAvailable(20.0f);
  t[algo][proto] = 5.0f;
  return t;
}

Choice selectLikeNccl(const CostTable& table, abi::PickRule rule, const CostTable* before) {
  Choice c;
  const int slot = abi::ncclChoice(table[0].data(), rule, before ? (*before)[0].data() : nullptr);
  if (slot != abi::kNoPick) c.algo = slot / kNumProtos, c.proto = slot % kNumProtos;
  return c;
}

namespace {
std::mutex gLogMutex;
std::vector<std::pair<ncclDebugLogLevel, std::string>> gLogLines;

void captureLog(ncclDebugLogLevel level, unsigned long, const char* file, int line, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard lock(gLogMutex);
  gLogLines.emplace_back(level, std::string(file ? file : "?") + ":" + std::to_string(line) + " " + buf);
  if (std::getenv("DYNAMICCL_HARNESS_ECHO")) std::fprintf(stderr, "[nccl log %d] %s\n", int(level), buf);
}
}  // namespace

ncclDebugLogger_t LogCapture::logger() { return &captureLog; }

std::vector<std::string> LogCapture::lines() {
  std::lock_guard lock(gLogMutex);
  std::vector<std::string> out;
  for (auto& [lvl, s] : gLogLines) out.push_back(s);
  return out;
}

size_t LogCapture::count(ncclDebugLogLevel level) {
  std::lock_guard lock(gLogMutex);
  size_t n = 0;
  for (auto& [lvl, s] : gLogLines) n += lvl == level;
  return n;
}

void LogCapture::clear() {
  std::lock_guard lock(gLogMutex);
  gLogLines.clear();
}

ScopedEnv::ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) {
    had_ = true;
    old_ = old;
  }
  if (value) setenv(name_.c_str(), value, 1);
  else unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (had_) setenv(name_.c_str(), old_.c_str(), 1);
  else unsetenv(name_.c_str());
}

}  // namespace dynamiccl::harness
