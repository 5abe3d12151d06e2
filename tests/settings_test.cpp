// Every environment variable the plugin reads: a garbage value gives exactly one log line naming the
// variable, and the documented default stands (the "settings:" line the plugin logs at each read
// lists the values in force). Also the one exception boundary of both roles and the profiler's caps.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "test_support.h"

namespace dynamiccl {
namespace {

using harness::CostTable;
using harness::LogCapture;
using harness::ScopedEnv;
using testing::openPlugin;
using testing::profileJson;
using testing::TempFile;

struct Variable {
  const char* name;
  const char* inForce;  // the documented default as the settings line shows it
  bool isPath;          // any short text names a file: only "" and an over-long value are garbage
};

const Variable kVariables[] = {
    {"DYNAMICCL_PROFILE", "(unset)", true},
    {"NCCL_TUNER_CONFIG_FILE", "(unset)", true},
    {"DYNAMICCL_STRICT", "0", false},
    {"DYNAMICCL_ENABLE", "1", false},
    {"DYNAMICCL_TRUST", "verified", false},
    {"DYNAMICCL_NCCL_VERSION", "(unset)", false},
    {"DYNAMICCL_HOST", "(unset)", false},
    {"DYNAMICCL_DB", "(unset)", true},
    {"DYNAMICCL_DB_MAX_MB", "(unset)", false},
    {"DYNAMICCL_RECORD", "1", false},
    {"DYNAMICCL_OBSERVATION_LOG", "(unset)", true},
    {"DYNAMICCL_PROFILER", "records=4096,queue=65536,grace_ms=2000", false},
    {"DYNAMICCL_BUDGET", "explore=0.01,measure=0.01,record=0", false},
    {"DYNAMICCL_MEASUREMENT_COST", "(unset)", true},
    {"DYNAMICCL_METRICS_DIR", "(unset)", true},
    {"DYNAMICCL_ONLINE", "(unset)", false},
    {"DYNAMICCL_VERIFY", "auto", false},
    {"DYNAMICCL_SEARCH_CHANNELS", "(unset)", false},
    {"DYNAMICCL_EPOCH_CALLS", "1000", false},
    {"DYNAMICCL_EPOCH_TIMEOUT_MS", "60000", false},
    {"DYNAMICCL_COORD_DIR", "(unset)", true},
    {"DYNAMICCL_COORD_TOKEN_FILE", "(unset)", true},
    {"DYNAMICCL_ETCD", "(unset)", false},
    {"DYNAMICCL_ETCD_CLIENT", "timeout_ms=2000,ttl_s=86400,node_reads=1", false},
    {"DYNAMICCL_INPUTS_CHECK", "1", false},
    {"DYNAMICCL_INPUTS_TIMEOUT_MS", "auto", false},
    {"DYNAMICCL_TOPO", "(unset)", false},
    {"DYNAMICCL_WORKLOAD", "(unset)", false},
    {"DYNAMICCL_TEST", "(unset)", false},
};

const std::string kLong(10000, '7');

// The last "settings:" line and its continuations: variable name -> value in force.
std::map<std::string, std::string> settingsInForce() {
  std::map<std::string, std::string> out;
  const std::vector<std::string> lines = LogCapture::lines();
  size_t first = lines.size();
  for (size_t i = lines.size(); i-- > 0;)
    if (lines[i].find("DynamICCL: settings: ") != std::string::npos) {
      first = i;
      break;
    }
  for (size_t i = first; i < lines.size(); ++i) {
    const bool head = i == first, more = lines[i].find("DynamICCL: settings, continued: ") != std::string::npos;
    if (!head && !more) continue;
    const char* tag = head ? "DynamICCL: settings: " : "DynamICCL: settings, continued: ";
    std::istringstream words(lines[i].substr(lines[i].find(tag) + std::strlen(tag)));
    for (std::string w; words >> w;) {
      const size_t eq = w.find('=');
      if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  return out;
}

size_t linesNaming(const std::string& name) {
  size_t n = 0;
  for (const std::string& l : LogCapture::lines())
    n += l.find(name + "=") != std::string::npos && l.find("DynamICCL: settings") == std::string::npos;
  return n;
}

struct Garbage {
  Variable variable;
  std::string value;
};

std::vector<Garbage> everyGarbage() {
  std::vector<Garbage> out;
  for (const Variable& v : kVariables)
    for (const std::string& value : {std::string(""), std::string("-1"), std::string("1e309"), std::string("abc"),
                                     kLong, std::string("nan")})
      if (!v.isPath || value.empty() || value == kLong) out.push_back({v, value});
  return out;
}

class GarbageValue : public ::testing::TestWithParam<Garbage> {};

TEST_P(GarbageValue, OneLineNamingItAndTheDefaultStands) {
  const Garbage& g = GetParam();
  ScopedEnv env(g.variable.name, g.value.c_str());
  LogCapture::clear();
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  // A bad DYNAMICCL_INPUTS_CHECK leaves the check on, and this process is one rank: a one-rank
  // communicator has no other rank to wait for.
  harness::CommSpec spec;
  if (std::strcmp(g.variable.name, "DYNAMICCL_INPUTS_CHECK") == 0) spec.nRanks = 1;
  auto comm = lib->init(spec);
  ASSERT_TRUE(comm.ok()) << comm.error();
  EXPECT_EQ(linesNaming(g.variable.name), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << ::testing::PrintToString(LogCapture::lines());
  const std::vector<std::string> lines = LogCapture::lines();
  for (const std::string& l : lines)
    if (l.find(std::string(g.variable.name) + "=") != std::string::npos && l.find("DynamICCL: settings") == std::string::npos) {
      EXPECT_NE(l.find(std::string("using ")), std::string::npos) << l;  // says what stands instead
      EXPECT_LT(l.size(), 400u) << "the bad value is truncated";
    }
  EXPECT_EQ(settingsInForce()[g.variable.name], g.variable.inForce);
  // A second communicator with the same environment: read once, nothing logged again.
  LogCapture::clear();
  auto again = lib->init(spec);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(linesNaming(g.variable.name), 0u);
}

std::string garbageName(const ::testing::TestParamInfo<Garbage>& info) {
  const std::string& v = info.param.value;
  std::string what = v.empty() ? "empty" : v == kLong ? "10k_chars" : v == "-1" ? "minus_one" : v == "1e309" ? "huge" : v;
  return std::string(info.param.variable.name) + "_" + what;
}

INSTANTIATE_TEST_SUITE_P(EveryVariable, GarbageValue, ::testing::ValuesIn(everyGarbage()), garbageName);

TEST(Settings, TheSettingsLineListsEveryVariableThisTestCovers) {
  LogCapture::clear();
  auto lib = openPlugin();
  ScopedEnv changed("DYNAMICCL_EPOCH_CALLS", "77");  // another environment: read and logged again
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  std::set<std::string> logged, covered;
  for (const auto& [name, value] : settingsInForce()) logged.insert(name);
  for (const Variable& v : kVariables) covered.insert(v.name);
  EXPECT_EQ(logged, covered);
  EXPECT_EQ(settingsInForce()["DYNAMICCL_EPOCH_CALLS"], "77");
}

TEST(Settings, GoodValuesAreInForce) {
  ScopedEnv workload("DYNAMICCL_WORKLOAD", "intensity=2,batch=8"), topo("DYNAMICCL_TOPO", "nics_per_node=8,nvlink_GBps=0"),
      cap("DYNAMICCL_DB_MAX_MB", "0.25"), budget("DYNAMICCL_BUDGET", "explore=0.2"),
      etcd("DYNAMICCL_ETCD", "http://etcd-a:2379,https://etcd-b:2379/"),
      client("DYNAMICCL_ETCD_CLIENT", "ca=/etc/ssl/ca.pem;timeout_ms=500"), online("DYNAMICCL_ONLINE", "0"),
      profiler("DYNAMICCL_PROFILER", "grace_ms=0"), db("DYNAMICCL_DB", "/tmp/x.db"),
      hook("DYNAMICCL_TEST", "throw=stopEvent+getChunkSize");
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 0u) << ::testing::PrintToString(LogCapture::lines());
  auto inForce = settingsInForce();
  EXPECT_EQ(inForce["DYNAMICCL_WORKLOAD"], "intensity=2,batch=8");
  EXPECT_EQ(inForce["DYNAMICCL_TOPO"], "nvlink_GBps=0,nics_per_node=8");
  EXPECT_EQ(inForce["DYNAMICCL_DB_MAX_MB"], "0.25");
  EXPECT_EQ(inForce["DYNAMICCL_BUDGET"], "explore=0.2,measure=0.01,record=0");  // fields not named keep their defaults
  EXPECT_EQ(inForce["DYNAMICCL_ETCD"], "http://etcd-a:2379,https://etcd-b:2379");
  EXPECT_EQ(inForce["DYNAMICCL_ETCD_CLIENT"], "timeout_ms=500,ttl_s=86400,node_reads=1,ca=(set)");
  EXPECT_EQ(inForce["DYNAMICCL_ONLINE"], "0");
  EXPECT_EQ(inForce["DYNAMICCL_PROFILER"], "records=4096,queue=65536,grace_ms=0");
  EXPECT_EQ(inForce["DYNAMICCL_DB"], "(set)");
  EXPECT_EQ(inForce["DYNAMICCL_TEST"], "throw=getChunkSize+stopEvent");
}

// A grouped setting with one bad, unknown or repeated field is refused whole, in one line naming
// the field; every field keeps its default (a half-read group would be a setting nobody wrote).
TEST(Settings, AGroupWithOneBadFieldIsRefusedWholeInOneLineNamingIt) {
  const struct {
    const char* name;
    const char* value;
    const char* why;
  } cases[] = {
      {"DYNAMICCL_PROFILER", "records=8192,queue=1048577", "queue must be an integer in 2..1048576"},
      {"DYNAMICCL_PROFILER", "records=65537", "records must be an integer in 1..65536"},
      {"DYNAMICCL_BUDGET", "explore=0.6", "explore must be a number in 0..0.5"},
      {"DYNAMICCL_BUDGET", "measure=0.1,measure=0.2", "key \"measure\" given twice"},
      {"DYNAMICCL_ETCD_CLIENT", "timeout_ms=5", "timeout_ms must be an integer in 10..60000"},
      {"DYNAMICCL_ETCD_CLIENT", "ca=/x,user=root", "unknown key \"user\" (auth_file, ca, cert, key, timeout_ms, ttl_s, node_reads)"},
      {"DYNAMICCL_TOPO", "gpu_cc=90,nics_per_node=0", "nics_per_node must be an integer in 1..1000000"},
      {"DYNAMICCL_TOPO", "nic_GBps=0", "nic_GBps must be a number in (0, 1e+06]"},
      {"DYNAMICCL_TEST", "throw=getCollInfo+launch", "throw: expected entry point names"},
      {"DYNAMICCL_WORKLOAD", "batch=2.5", "batch must be an integer"},
  };
  for (const auto& c : cases) {
    ScopedEnv env(c.name, c.value);
    LogCapture::clear();
    auto comm = openPlugin()->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
    ASSERT_EQ(linesNaming(c.name), 1u) << c.name << "=" << c.value << ::testing::PrintToString(LogCapture::lines());
    std::string line;
    for (const std::string& l : LogCapture::lines())
      if (l.find(std::string(c.name) + "=") != std::string::npos && l.find("DynamICCL: settings") == std::string::npos) line = l;
    EXPECT_NE(line.find(c.why), std::string::npos) << line;
    const auto inForce = settingsInForce();
    for (const Variable& v : kVariables) {
      if (std::strcmp(v.name, c.name) == 0) {
        EXPECT_EQ(inForce.at(c.name), v.inForce) << c.value;
      }
    }
  }
}

// A communicator's init under the current environment (changed by `epochCalls`, so read again): its
// one warning, the line naming the variables the plugin does not read.
std::string unknownVariablesLineAtInit(const char* epochCalls) {
  ScopedEnv changed("DYNAMICCL_EPOCH_CALLS", epochCalls);
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  EXPECT_TRUE(comm.ok());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << ::testing::PrintToString(LogCapture::lines());
  std::string line;
  for (const std::string& l : LogCapture::lines())
    if (l.find("unknown environment variables") != std::string::npos) line = l;
  return line;
}

// A DYNAMICCL_* variable the plugin does not read is named in one line: a retired one with what
// replaced it, a near-miss with the setting it resembles; the settings' own names never are.
TEST(Settings, UnknownVariablesAreNamedInOneLineWithTheirReplacement) {
  ScopedEnv coord("DYNAMICCL_COORD", "head:7000"), typo("DYNAMICCL_PROFLE", "/tmp/p.json"),
      other("DYNAMICCL_FROBNICATE", "1"), good("DYNAMICCL_RECORD", "1");
  const std::string line = unknownVariablesLineAtInit("55");
  EXPECT_NE(line.find("DYNAMICCL_COORD (retired"), std::string::npos) << line;
  EXPECT_NE(line.find("DYNAMICCL_ETCD"), std::string::npos) << line;
  EXPECT_NE(line.find("DYNAMICCL_PROFLE (not read; did you mean DYNAMICCL_PROFILE?)"), std::string::npos) << line;
  EXPECT_NE(line.find("DYNAMICCL_FROBNICATE (not read)"), std::string::npos) << line;
  for (const Variable& v : kVariables) EXPECT_EQ(line.find(std::string(v.name) + " ("), std::string::npos) << v.name;
}

// The variables earlier releases read by other names: one line says what replaced each.
TEST(Settings, GroupedVariablesOldNamesSayWhatReplacedThem) {
  ScopedEnv topo("DYNAMICCL_TOPO_NICS", "8"), share("DYNAMICCL_RECORD_SHARE", "1"), ca("DYNAMICCL_ETCD_CA", "/x");
  const std::string line = unknownVariablesLineAtInit("56");
  EXPECT_NE(line.find("DYNAMICCL_TOPO_NICS (now DYNAMICCL_TOPO=nics_per_node=..)"), std::string::npos) << line;
  EXPECT_NE(line.find("DYNAMICCL_RECORD_SHARE (now DYNAMICCL_BUDGET=record=..)"), std::string::npos) << line;
  EXPECT_NE(line.find("DYNAMICCL_ETCD_CA (now DYNAMICCL_ETCD_CLIENT=ca=..)"), std::string::npos) << line;
  EXPECT_EQ(settingsInForce()["DYNAMICCL_BUDGET"], "explore=0.01,measure=0.01,record=0");  // not read under its old name
}

// Every variable the plugin reads is documented once, as one row of docs/SETTINGS.md's table (the
// README links it and holds no row of its own), and every DYNAMICCL_* row there is one it reads (or
// the tools' DYNAMICCL_PLUGIN_PATH).
TEST(Settings, EveryVariableIsOneRowOfTheSettingsTable) {
  LogCapture::clear();
  ScopedEnv changed("DYNAMICCL_EPOCH_CALLS", "57");  // another environment: read and logged again
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  std::map<std::string, int> rows;  // over both files: a row copied into the README counts twice
  for (const char* doc : {"/docs/SETTINGS.md", "/README.md"}) {
    std::ifstream in(std::string(DYNAMICCL_SOURCE_DIR) + doc);
    ASSERT_TRUE(in.good()) << doc;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("| `", 0) == 0) {
        const size_t end = line.find('`', 3);
        if (end != std::string::npos && line.compare(end, 3, "` |") == 0) ++rows[line.substr(3, end - 3)];
      }
  }
  const auto inForce = settingsInForce();
  ASSERT_GE(inForce.size(), 20u);
  for (const auto& [name, value] : inForce) EXPECT_EQ(rows[name], 1) << name;
  for (const auto& [name, n] : rows) {
    if (name.rfind("DYNAMICCL_", 0) == 0 && name != "DYNAMICCL_PLUGIN_PATH") {
      EXPECT_EQ(inForce.count(name), 1u) << name;
    }
  }
}

// One home: the plugin reads its environment only in plugin/settings; the libraries below it none.
TEST(Settings, OnlyTheSettingsUnitReadsTheEnvironment) {
  namespace fs = std::filesystem;
  std::vector<std::string> offenders;
  for (const char* dir : {"plugin", "features", "policy", "store", "coord"})
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(DYNAMICCL_SOURCE_DIR) / dir)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || path.find("/plugin/settings/") != std::string::npos) continue;
      std::ifstream in(path);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const bool plugin = std::string(dir) == "plugin";
      if (text.find(plugin ? "getenv(" : "getenv(\"DYNAMICCL_") != std::string::npos) offenders.push_back(path);
    }
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

long residentKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// The documented maxima cost a modest, bounded amount of memory (the old ones cost 2.4 GB).
TEST(Settings, ProfilerAtItsMaximaStaysUnder200MB) {
  ScopedEnv pools("DYNAMICCL_PROFILER", "records=65536,queue=1048576");
  ScopedEnv record("DYNAMICCL_RECORD", "0");
  auto prof = harness::ProfilerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR));
  ASSERT_TRUE(prof.ok()) << prof.error();
  const long before = residentKiB();
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ((*prof)->init({}, &mask, &ctx), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  const long grown = residentKiB() - before;
  std::printf("profiler at its maxima: %ld KiB resident\n", grown);
  EXPECT_EQ(settingsInForce()["DYNAMICCL_PROFILER"], "records=65536,queue=1048576,grace_ms=2000");
  EXPECT_LT(grown, 200 * 1024) << grown << " KiB";
  EXPECT_GT(grown, 10 * 1024) << "the pools were not allocated at their maxima";
  (*prof)->finalize(ctx);
}

}  // namespace
}  // namespace dynamiccl
