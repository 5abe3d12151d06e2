// One immutable version of the online table: per (collective, size bucket) the exploited
// candidates and the scheduled exploration arms. Built off the hot path; the hot path only picks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "features/features.h"
#include "policy/policy.h"
#include "learner/online_schedule.h"

namespace dynamiccl::learner {
using namespace dynamiccl::policy;  // the rule table's vocabulary: Decision, Candidates, DecisionTable


inline constexpr int kOnlineMaxArms = 8;
inline constexpr uint32_t kOnlineKeys = kNumCollectives * SizeBucket::kCount;
inline constexpr size_t kOnlineMaxRecordBytes = 1u << 20;  // a published table never exceeds this

constexpr uint32_t onlineKey(int coll, uint64_t nBytes) {
  return static_cast<uint32_t>(coll) * SizeBucket::kCount + static_cast<uint32_t>(SizeBucket::of(nBytes));
}

struct OnlineEntry {
  Candidates exploit;  // count 0: the static table answers (unless an exploration arm is drawn)
  uint8_t nArms = 0;
  std::array<uint32_t, kOnlineMaxArms> cumulativeThreshold{};  // in a measured call, draw < threshold[i]: explore arm i
  std::array<Candidates, kOnlineMaxArms> arms{};               // arm decision first, exploit after
  // The key's own share of calls measured (a key still searching measures what its trials need; the
  // others the table's share); false: the table's.
  bool ownMeasureThreshold = false;
  uint32_t measureThreshold = 0;
};

// The schedule's key for whether a call is measured: no real key has it.
inline constexpr uint32_t kMeasureSlotKey = kOnlineKeys;
inline constexpr uint32_t kMeasureEveryCall = UINT32_MAX;

// Whether call k is one the leader profiles (a measurement slot): a pure function, so every rank
// knows which calls may explore, and the leader can set NCCL's mask for a call before NCCL reads it.
constexpr bool measuredCall(uint64_t commId, uint64_t callIndex, uint64_t version, uint32_t threshold) {
  return threshold == kMeasureEveryCall ||
         static_cast<uint32_t>(scheduleDraw(commId, kMeasureSlotKey, callIndex, version)) < threshold;
}

class OnlineTable {
 public:
  OnlineTable() : entries_(kOnlineKeys) {}
  uint64_t version() const { return version_; }
  void setVersion(uint64_t v) { version_ = v; }
  // Calls whose measure draw is below this are measured (and only they explore); kMeasureEveryCall: all.
  // The table's, for keys without their own.
  uint32_t measureThreshold() const { return measureThreshold_; }
  void setMeasureThreshold(uint32_t t) { measureThreshold_ = t; }
  uint32_t measureThresholdOf(uint32_t key) const {
    return key < kOnlineKeys && entries_[key].ownMeasureThreshold ? entries_[key].measureThreshold : measureThreshold_;
  }
  bool measures(uint64_t commId, uint64_t callIndex) const {
    return measuredCall(commId, callIndex, version_, measureThreshold_);
  }
  // Whether call k of `key` is measured (a key outside the table: the table's share).
  bool measures(uint64_t commId, uint64_t callIndex, uint32_t key) const {
    return measuredCall(commId, callIndex, version_, measureThresholdOf(key));
  }
  OnlineEntry& entry(uint32_t key) { return entries_[key]; }
  const OnlineEntry& entry(uint32_t key) const { return entries_[key]; }

  // Hot path: nullptr when the static table should answer. Pure in (commId, coll, nBytes, k, version).
  const Candidates* pick(int coll, uint64_t nBytes, uint64_t commId, uint64_t callIndex) const {
    const uint32_t key = onlineKey(coll, nBytes);
    const OnlineEntry& e = entries_[key];
    if (!e.exploit.count && !e.nArms) return nullptr;
    if (e.nArms && measures(commId, callIndex, key)) {  // a trial nobody measures would cost and teach nothing
      const uint32_t draw = static_cast<uint32_t>(scheduleDraw(commId, key, callIndex, version_));
      for (int i = 0; i < e.nArms; ++i)
        if (draw < e.cumulativeThreshold[i]) return &e.arms[i];
    }
    return e.exploit.count ? &e.exploit : nullptr;
  }

  // The wire form the leader publishes: bounded, versioned, checked field by field when read.
  std::string serialize() const;
  static Expected<std::unique_ptr<OnlineTable>> deserialize(const std::string& bytes);

 private:
  uint64_t version_ = 0;
  uint32_t measureThreshold_ = kMeasureEveryCall;
  std::vector<OnlineEntry> entries_;  // kOnlineKeys, allocated once
};

}  // namespace dynamiccl::learner
