// The tuner's recent decisions per collective, so the profiler's worker can join an observation to
// the decision made for the same call. Written by the hot path without locks (one writer per
// communicator context), read by the worker; a slot is trusted only if its call index and size match.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "features/features.h"

namespace dynamiccl::plugin {

enum class DecisionSource : uint8_t { NcclDefault = 0, Table = 1, Online = 2 };

struct LoggedDecision {
  uint64_t call = 0;  // this collective's call index on the communicator (NCCL's seqNumber for lone calls)
  uint64_t nBytes = 0;
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int nChannels = 0;
  uint64_t chunkBytes = 0;
  DecisionSource source = DecisionSource::NcclDefault;
};

class DecisionLog {
 public:
  static constexpr uint32_t kSlots = 64;

  // Hot path: a few stores, no lock, no allocation. Returns the call index it logged.
  uint64_t record(int coll, uint64_t nBytes, Algo algo, Proto proto, int nChannels, uint64_t chunkBytes,
                  DecisionSource source) {
    const uint64_t call = calls_[coll]++;
    Slot& s = slots_[coll][call % kSlots];
    s.call.store(kWriting, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.decision = LoggedDecision{call, nBytes, algo, proto, nChannels, chunkBytes, source};
    s.call.store(call, std::memory_order_release);
    return call;
  }

  // Worker: the decision of call `call` if its slot still holds it and its size matches.
  bool find(int coll, uint64_t call, uint64_t nBytes, LoggedDecision* out) const {
    const Slot& s = slots_[coll][call % kSlots];
    if (s.call.load(std::memory_order_acquire) != call) return false;
    const LoggedDecision d = s.decision;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.call.load(std::memory_order_relaxed) != call || d.nBytes != nBytes) return false;  // overwritten meanwhile
    *out = d;
    return true;
  }

 private:
  static constexpr uint64_t kWriting = ~uint64_t{0};
  struct Slot {
    std::atomic<uint64_t> call{kWriting};  // seqlock-style: kWriting while the payload changes
    LoggedDecision decision;
  };
  std::array<uint64_t, kNumCollectives> calls_{};
  std::array<std::array<Slot, kSlots>, kNumCollectives> slots_{};
};

}  // namespace dynamiccl::plugin
