// The process's settings, read from the environment at init and cached until the environment changes.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

#include "plugin/guard.h"
#include "plugin/log.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {
namespace {

constexpr size_t kSettingsLineChars = 800;

struct Cache {
  std::mutex mutex;
  std::vector<std::string> names;  // every variable the last parse asked for, in order
  std::string values;              // what each was then ('\1' for unset)
  std::shared_ptr<const Settings> settings;
};
Cache& cache() {
  static auto* c = new Cache();  // never destroyed: NCCL may finalize after exit handlers
  return *c;
}

void append(std::string& values, const char* v) {
  values += v ? v : "\1";
  values += '\0';
}

// Variables earlier releases read, and what does their work now.
struct Retired {
  const char* name;
  const char* instead;
};
constexpr Retired kRetired[] = {
    {"DYNAMICCL_COORD", "retired with the TCP coordinator: DYNAMICCL_ETCD or DYNAMICCL_COORD_DIR"},
    {"DYNAMICCL_TOPO_GPU_CC", "now DYNAMICCL_TOPO=gpu_cc=.."},
    {"DYNAMICCL_TOPO_NVLINK_GBPS", "now DYNAMICCL_TOPO=nvlink_GBps=.."},
    {"DYNAMICCL_TOPO_NICS", "now DYNAMICCL_TOPO=nics_per_node=.."},
    {"DYNAMICCL_TOPO_NIC_GBPS", "now DYNAMICCL_TOPO=nic_GBps=.."},
    {"DYNAMICCL_TOPO_RANKS_PER_NODE", "now DYNAMICCL_TOPO=ranks_per_node=.."},
    {"DYNAMICCL_PROFILER_RECORDS", "now DYNAMICCL_PROFILER=records=.."},
    {"DYNAMICCL_PROFILER_QUEUE", "now DYNAMICCL_PROFILER=queue=.."},
    {"DYNAMICCL_PROFILER_GRACE_MS", "now DYNAMICCL_PROFILER=grace_ms=.."},
    {"DYNAMICCL_EXPLORE_BUDGET", "now DYNAMICCL_BUDGET=explore=.."},
    {"DYNAMICCL_MEASURE_SHARE", "now DYNAMICCL_BUDGET=measure=.."},
    {"DYNAMICCL_RECORD_SHARE", "now DYNAMICCL_BUDGET=record=.."},
    {"DYNAMICCL_ETCD_AUTH_FILE", "now DYNAMICCL_ETCD_CLIENT=auth_file=.."},
    {"DYNAMICCL_ETCD_CA", "now DYNAMICCL_ETCD_CLIENT=ca=.."},
    {"DYNAMICCL_ETCD_CERT", "now DYNAMICCL_ETCD_CLIENT=cert=.."},
    {"DYNAMICCL_ETCD_KEY", "now DYNAMICCL_ETCD_CLIENT=key=.."},
    {"DYNAMICCL_ETCD_TIMEOUT_MS", "now DYNAMICCL_ETCD_CLIENT=timeout_ms=.."},
    {"DYNAMICCL_ETCD_TTL_S", "now DYNAMICCL_ETCD_CLIENT=ttl_s=.."},
    {"DYNAMICCL_TEST_THROW", "now DYNAMICCL_TEST=throw=a+b"},
    {"DYNAMICCL_COORD_DELAY_MS", "now DYNAMICCL_TEST=coord_delay_ms=.."},
};

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Every DYNAMICCL_* variable set that readSettings never asked for (`asked`: the names it asked,
// so a setting added there is known here too), with its replacement or the setting it nearly spells.
std::string unknownVariablesLine(const std::vector<std::string>& asked, char** environment) {
  std::string line;
  for (char** e = environment; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (!name.starts_with("DYNAMICCL_") || std::find(asked.begin(), asked.end(), name) != asked.end()) continue;
    std::string why = "not read";
    for (const Retired& r : kRetired)
      if (name == r.name) why = r.instead;
    if (why == "not read") {
      const std::string* nearest = nullptr;
      size_t best = 3;  // a typo: at most two letters off
      for (const std::string& known : asked)
        if (const size_t d = editDistance(name, known); d < best) best = d, nearest = &known;
      if (nearest) why = "not read; did you mean " + *nearest + "?";
    }
    line += (line.empty() ? "" : ", ") + std::string(name) + " (" + why + ")";
  }
  return line.empty() ? line : "unknown environment variables ignored: " + line;
}

}  // namespace

std::shared_ptr<const Settings> currentSettings() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  if (c.settings) {
    std::string now;
    for (const std::string& n : c.names) append(now, std::getenv(n.c_str()));
    if (now == c.values) return c.settings;
  }
  c.names.clear();
  c.values.clear();
  std::vector<std::string> bad;
  Settings s = readSettings(
      [&](const char* name) {
        const char* v = std::getenv(name);
        c.names.emplace_back(name);
        append(c.values, v);
        return v;
      },
      [&](const std::string& line) { bad.push_back(line); });
  for (const std::string& line : bad) logWarn("%s", line.c_str());
  if (const std::string unknown = unknownVariablesLine(c.names, environ); !unknown.empty())
    logWarn("%s", unknown.substr(0, 1000).c_str());
  // NCCL's logger cuts a line at 1024 bytes: the dump goes in lines of whole variables.
  const std::string dump = settingsDump(s);
  for (size_t at = 0, n = 0; at < dump.size(); ++n) {
    size_t end = std::min(dump.size(), at + kSettingsLineChars);
    if (end < dump.size())  // at a space before the limit; a longer word is cut at the limit
      if (const size_t space = dump.rfind(' ', end); space != std::string::npos && space > at) end = space;
    logInfo("settings%s: %s", n ? ", continued" : "", dump.substr(at, end - at).c_str());
    at = end + (end < dump.size() && dump[end] == ' ');
  }
  gTestThrowMask.store(s.test.throwMask, std::memory_order_relaxed);
  c.settings = std::make_shared<const Settings>(std::move(s));
  return c.settings;
}

}  // namespace dynamiccl::plugin
