// The process's settings, read from the environment at init and cached until the environment changes.
#include <algorithm>
#include <cstdlib>
#include <mutex>
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
  // NCCL's logger cuts a line at 1024 bytes: the dump goes in lines of whole variables.
  const std::string dump = settingsDump(s);
  for (size_t at = 0, n = 0; at < dump.size(); ++n) {
    size_t end = std::min(dump.size(), at + kSettingsLineChars);
    if (end < dump.size())  // at a space before the limit; a longer word is cut at the limit
      if (const size_t space = dump.rfind(' ', end); space != std::string::npos && space > at) end = space;
    logInfo("settings%s: %s", n ? ", continued" : "", dump.substr(at, end - at).c_str());
    at = end + (end < dump.size() && dump[end] == ' ');
  }
  gTestThrowMask.store(s.testThrowMask, std::memory_order_relaxed);
  c.settings = std::make_shared<const Settings>(std::move(s));
  return c.settings;
}

}  // namespace dynamiccl::plugin
