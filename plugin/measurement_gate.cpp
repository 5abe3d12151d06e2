#include "plugin/measurement_gate.h"

namespace dynamiccl::plugin {

void MeasurementGate::attach(int* mask, int bits, bool alwaysOn) {
  if (!mask) return;
  bits_.store(bits, std::memory_order_relaxed);
  if (alwaysOn) {
    alwaysOn_.store(true, std::memory_order_relaxed);
    __atomic_fetch_or(mask, bits, __ATOMIC_RELAXED);
  }
  mask_.store(mask, std::memory_order_release);
}

MeasurementGate& measurementGate() {
  static auto* g = new MeasurementGate();  // never destroyed: NCCL may call after exit handlers
  return *g;
}

}  // namespace dynamiccl::plugin
