// The plugin finds the version of a real libnccl loaded RTLD_LOCAL (as from a PyTorch wheel), where
// dlsym(RTLD_DEFAULT) cannot see it. Deliberately not linked with the harness, which exports its
// own ncclGetVersion. Skipped where no libnccl.so.2 can be loaded.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "abi/abi.h"

namespace {

std::mutex gMutex;
std::vector<std::string> gLines;

void capture(ncclDebugLogLevel, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard lock(gMutex);
  gLines.emplace_back(buf);
}

TEST(LibncclVersion, ALibncclLoadedLocallyIsFoundAndItsRulesFollowed) {
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!nccl) nccl = dlopen("/usr/local/cuda/lib/libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!nccl) GTEST_SKIP() << "no libnccl.so.2 here";
  auto getVersion = reinterpret_cast<int (*)(int*)>(dlsym(nccl, "ncclGetVersion"));
  ASSERT_NE(getVersion, nullptr);
  int code = 0;
  ASSERT_EQ(getVersion(&code), 0);
  ASSERT_EQ(dlsym(RTLD_DEFAULT, "ncclGetVersion"), nullptr) << "loaded locally: invisible to RTLD_DEFAULT";

  unsetenv("DYNAMICCL_NCCL_VERSION");
  void* plugin = dlopen(DYNAMICCL_PLUGIN_DIR "/libnccl-tuner-dynamiccl.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  auto* tuner = static_cast<const ncclTuner_v5_t*>(dlsym(plugin, "ncclTunerPlugin_v5"));
  ASSERT_NE(tuner, nullptr);
  ncclNvlDomainInfo_v5_t nvl{};
  ncclTunerConstants_v5_t constants{};
  void* ctx = nullptr;
  ASSERT_EQ(tuner->init(&ctx, 0x77, 8, 1, &capture, &nvl, &constants), ncclSuccess);
  const std::string version = std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
                              std::to_string(code % 100);
  const std::string rules = dynamiccl::abi::pickRuleName(dynamiccl::abi::pickRuleFor(code));
  const std::string want = "NCCL " + version + " (ncclGetVersion): following NCCL " + rules + "'s selection rules";
  bool found = false;
  for (const std::string& l : gLines) found |= l.find(want) != std::string::npos;
  EXPECT_TRUE(found) << want << "\n" << ::testing::PrintToString(gLines);
  EXPECT_EQ(tuner->finalize(ctx), ncclSuccess);
}

}  // namespace
