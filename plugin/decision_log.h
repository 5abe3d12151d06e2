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

// How an observation found (or did not find) the decision for its call, for the store and the
// applied-or-not report.
enum class DecisionJoin : uint8_t {
  Joined,    // the decision of the same call
  NoTuner,   // no tuner context of this communicator in the process (tuner role not this library)
  NotAsked,  // NCCL ran more calls than it asked the tuner about (CUDA-graph replays)
  Lost,      // asked, but the log slot was reused, the size differs, or which call it was is not known
};

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
    const uint64_t call = calls_[coll].load(std::memory_order_relaxed);
    calls_[coll].store(call + 1, std::memory_order_relaxed);  // one writer: plain moves, no locked add
    Slot& s = slots_[coll][call % kSlots];
    // Release payload stores (plain moves on x86): a reader that sees any of them also sees kWriting.
    s.call.store(kWriting, std::memory_order_relaxed);
    s.nBytes.store(nBytes, std::memory_order_release);
    s.chunkBytes.store(chunkBytes, std::memory_order_release);
    s.packed.store(pack(algo, proto, nChannels, source), std::memory_order_release);
    s.call.store(call, std::memory_order_release);
    return call;
  }

  // Worker: the decision of call `call` if its slot still holds it and its size matches.
  bool find(int coll, uint64_t call, uint64_t nBytes, LoggedDecision* out) const {
    const Slot& s = slots_[coll][call % kSlots];
    if (s.call.load(std::memory_order_acquire) != call) return false;
    // Acquire payload loads: one that reads a newer write makes the re-check below see kWriting or later.
    const uint64_t loggedBytes = s.nBytes.load(std::memory_order_acquire);
    const uint64_t chunkBytes = s.chunkBytes.load(std::memory_order_acquire);
    const uint64_t packed = s.packed.load(std::memory_order_acquire);
    if (s.call.load(std::memory_order_relaxed) != call || loggedBytes != nBytes) return false;  // overwritten meanwhile
    *out = unpack(packed);
    out->call = call;
    out->nBytes = loggedBytes;
    out->chunkBytes = chunkBytes;
    return true;
  }

  // Worker: how many calls of this collective the tuner was asked about so far.
  uint64_t callsSoFar(int coll) const { return calls_[coll].load(std::memory_order_relaxed); }

  // Worker: what NCCL ran for a profiled call joined with its decision (the metrics' honoured share).
  // Counted on the profiled calls, not on every call: a counter in record() cost getCollInfo 35 -> 45 ns.
  // NotAsked: the profiler saw a call the tuner was never asked about (a CUDA-graph replay; on RCCL, its
  // direct path where the profiler still sees the kernel).
  enum class Ran : uint8_t { Honoured, NotHonoured, NcclChoice, NotAsked };
  void countProfiled(Ran r) const { profiled_[static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed); }
  uint64_t profiled(Ran r) const { return profiled_[static_cast<int>(r)].load(std::memory_order_relaxed); }
  // The rank NCCL named to this communicator's profiler context here (-1 unknown): the metrics' label.
  void setRank(int rank) const { rank_.store(rank, std::memory_order_relaxed); }
  int rank() const { return rank_.load(std::memory_order_relaxed); }

  // Hot path, when the gate turns profiling on: calls not profiled before this are skipped by the
  // profiler's join (its next start is a call from here on, not the oldest one it never saw).
  void measuredFromNow() {
    for (int c = 0; c < kNumCollectives; ++c)
      measuredFrom_[c].store(calls_[c].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  uint64_t measuredFrom(int coll) const { return measuredFrom_[coll].load(std::memory_order_relaxed); }

  // Set at the link of a profiler context that NCCL told is rank 0 of this communicator: this
  // process leads it (measures for it). Read by the tuner's hot path.
  void setLeaderHere() const { leaderHere_.store(true, std::memory_order_relaxed); }
  bool leaderHere() const { return leaderHere_.load(std::memory_order_relaxed); }

  // One word for algo, proto, source and nChannels (the seqlock's payload; an observation's copy).
  static uint64_t pack(const LoggedDecision& d) { return pack(d.algo, d.proto, d.nChannels, d.source); }
  static LoggedDecision unpack(uint64_t packed, uint64_t call, uint64_t nBytes, uint64_t chunkBytes) {
    LoggedDecision d = unpack(packed);
    d.call = call;
    d.nBytes = nBytes;
    d.chunkBytes = chunkBytes;
    return d;
  }

 private:
  static constexpr uint64_t kWriting = ~uint64_t{0};
  // The seqlock's payload is atomic words (race-free under the memory model); packed: algo, proto,
  // source, nChannels.
  static uint64_t pack(Algo algo, Proto proto, int nChannels, DecisionSource source) {
    return uint64_t{static_cast<uint8_t>(algo)} | uint64_t{static_cast<uint8_t>(proto)} << 8 |
           uint64_t{static_cast<uint8_t>(source)} << 16 | uint64_t{static_cast<uint32_t>(nChannels)} << 32;
  }
  static LoggedDecision unpack(uint64_t p) {
    LoggedDecision d;
    d.algo = static_cast<Algo>(static_cast<int8_t>(p & 0xFF));
    d.proto = static_cast<Proto>(static_cast<int8_t>((p >> 8) & 0xFF));
    d.source = static_cast<DecisionSource>(static_cast<uint8_t>(p >> 16));
    d.nChannels = static_cast<int>(static_cast<uint32_t>(p >> 32));
    return d;
  }
  struct Slot {
    std::atomic<uint64_t> call{kWriting};  // seqlock-style: kWriting while the payload changes
    std::atomic<uint64_t> nBytes{0}, chunkBytes{0}, packed{0};
  };
  std::array<std::atomic<uint64_t>, kNumCollectives> calls_{};
  mutable std::array<std::atomic<uint64_t>, 4> profiled_{};
  mutable std::atomic<int> rank_{-1};
  std::array<std::atomic<uint64_t>, kNumCollectives> measuredFrom_{};
  mutable std::atomic<bool> leaderHere_{false};
  std::array<std::array<Slot, kSlots>, kNumCollectives> slots_{};
};

}  // namespace dynamiccl::plugin
