// Which calls NCCL profiles. NCCL re-reads the profiler's activation mask (one process-wide int) at
// every API call, so a call is profiled only if our bits are set when the application enqueues it.
// The profiler role hands over the mask at init; a leader's tuner sets the bits, after deciding call
// k, for whether call k+1 is one it measures. NCCL 2.31 charges 4-13% of a call's time for a profiled
// call (docs/MEASUREMENT_COST.md): by default nothing is profiled that decides nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "features/features.h"

namespace dynamiccl::plugin {

class MeasurementGate {
 public:
  // Profiler init: NCCL's mask and the bits this profiler version asks for. alwaysOn: set them now and
  // keep them (profiler v1-v3, whose init names no rank, so no leader is known; DYNAMICCL_BUDGET=record=1).
  void attach(int* mask, int bits, bool alwaysOn);

  // Hot path: whether the next call this process enqueues is profiled. Returns true when it turns the
  // bits on (the caller then notes where its measured calls resume). No lock, no syscall; an atomic
  // read-modify-write only when the state changes.
  bool set(bool on) {
    int* m = mask_.load(std::memory_order_relaxed);
    if (!m || alwaysOn_.load(std::memory_order_relaxed)) return false;
    const int bits = bits_.load(std::memory_order_relaxed);
    const bool isOn = (__atomic_load_n(m, __ATOMIC_RELAXED) & bits) == bits;
    if (on == isOn) return false;
    if (on) __atomic_fetch_or(m, bits, __ATOMIC_RELAXED);
    else __atomic_fetch_and(m, ~bits, __ATOMIC_RELAXED);
    return on;
  }
  bool alwaysOn() const { return alwaysOn_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int*> mask_{nullptr};
  std::atomic<int> bits_{0};
  std::atomic<bool> alwaysOn_{false};
};

// The process's gate: one mask per process (NCCL's), shared by every communicator.
MeasurementGate& measurementGate();

}  // namespace dynamiccl::plugin
