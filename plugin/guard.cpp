#include "plugin/guard.h"

#include <array>
#include <stdexcept>
#include <string>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {
constexpr std::array<std::string_view, static_cast<size_t>(Entry::kCount)> kNames = {
    "init", "getCollInfo", "getChunkSize", "finalize", "profilerInit",
    "startEvent", "stopEvent", "recordEventState", "profilerFinalize"};
std::array<std::atomic<bool>, static_cast<size_t>(Entry::kCount)> gLogged{};
}  // namespace

std::string_view entryName(Entry e) { return kNames[static_cast<size_t>(e)]; }

std::optional<Entry> entryFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<Entry>(i);
  return std::nullopt;
}

void throwForTest(Entry e) {
  throw std::runtime_error("DYNAMICCL_TEST=throw=" + std::string(entryName(e)));
}

void logEscapedException(Entry e, const char* what) noexcept {
  try {
    if (firstTime(gLogged[static_cast<size_t>(e)]))
      logWarn("%s: internal error caught (%s); returned success, NCCL's own choice stands",
              entryName(e).data(), what ? what : "?");
  } catch (...) {
  }
}

}  // namespace dynamiccl::plugin
