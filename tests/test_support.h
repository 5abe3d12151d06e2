// Helpers shared by the tests: temporary files and the built plugin opened like NCCL opens it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "offline/harness/harness.h"

namespace dynamiccl::testing {

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

inline std::shared_ptr<harness::TunerLibrary> openPlugin(int maxVersion = 6) {
  harness::OpenOptions options;
  options.maxVersion = maxVersion;
  auto lib = harness::TunerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR), options);
  EXPECT_TRUE(lib.ok()) << (lib.ok() ? "" : lib.error());
  return lib.ok() ? lib.value() : nullptr;
}

// A profile with one rule per given line of rule JSON objects.
inline std::string profileJson(const std::string& rules, const std::string& name = "test") {
  return R"({"format":"dynamiccl-profile","version":1,"name":")" + name + R"(","rules":[)" + rules + "]}";
}

}  // namespace dynamiccl::testing
