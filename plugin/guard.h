// The one exception boundary of both roles: every exported entry point runs through guarded(), so
// no exception ever crosses into NCCL. An exception is logged once per entry point and the call
// returns success: an error returned to NCCL would fail the user's call, while success with nothing
// written leaves NCCL's own choice in place (every edit of NCCL's outputs comes after the last
// thing that can throw).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>

#include "abi/abi.h"

namespace dynamiccl::plugin {

enum class Entry : uint8_t {
  TunerInit,
  GetCollInfo,
  GetChunkSize,
  TunerFinalize,
  ProfilerInit,
  StartEvent,
  StopEvent,
  RecordEventState,
  ProfilerFinalize,
  kCount
};

std::string_view entryName(Entry e);  // "getCollInfo", ... (the names DYNAMICCL_TEST's throw= takes)
std::optional<Entry> entryFromName(std::string_view name);

// Test-only (DYNAMICCL_TEST throw=, set from the settings at init): entry points that throw on entry.
inline constinit std::atomic<uint32_t> gTestThrowMask{0};
[[noreturn]] void throwForTest(Entry e);
inline void testThrowPoint(Entry e) {
  if (gTestThrowMask.load(std::memory_order_relaxed) & (1u << static_cast<unsigned>(e))) [[unlikely]]
    throwForTest(e);
}
void logEscapedException(Entry e, const char* what) noexcept;

template <typename F>
ncclResult_t guarded(Entry e, F&& f) noexcept {
  try {
    // Finalizes throw where they really can (joining a thread), after their context is freed.
    if (e != Entry::TunerFinalize && e != Entry::ProfilerFinalize) testThrowPoint(e);
    return f();
  } catch (const std::exception& ex) {
    logEscapedException(e, ex.what());
  } catch (...) {
    logEscapedException(e, "unknown exception");
  }
  return ncclSuccess;
}

}  // namespace dynamiccl::plugin
