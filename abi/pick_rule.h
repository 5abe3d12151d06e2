// NCCL's pick rule: which cost-table entry NCCL runs once the tuner has returned, and how it treats
// the tuner's channel count, per NCCL release. One home for the plugin (hot path: SSE2) and the
// offline model, tuner, simulator and harness (scalar); header-only, no allocation.
#pragma once

#include <cfloat>
#include <cstdint>
#include <optional>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "abi/nccl_abi.h"

namespace dynamiccl::abi {

// Which release's rule (NCCL_FACTS.md; docs/NCCL_VERSIONS.md):
// - 2.28 (and older): strict minimum below 3.6e9 over entries >= 0, ties to the lowest slot; the
//   tuner's nChannels replaces NCCL's count (an upper bound the scheduler still clips).
// - 2.30: as 2.28 but the minimum starts at FLT_MAX (costs up to FLT_MAX can win).
// - 2.31 (and 2.32, unchanged): only slots NCCL filled before the tuner ran are candidates; among them
//   the lowest cost, negatives included (-1 written into a valid slot selects it), ties to the HIGHEST
//   slot (NCCL walks a list built front-first), below FLT_MAX; nChannels is a cap: min(tuner's, NCCL's own).
enum class PickRule : uint8_t { Nccl2_28, Nccl2_30, Nccl2_31 };
inline constexpr PickRule kNewestPickRule = PickRule::Nccl2_31;  // an unknown NCCL gets the newest rules

inline constexpr int kCostSlots = DYNAMICCL_NCCL_NUM_ALGORITHMS * DYNAMICCL_NCCL_NUM_PROTOCOLS;
inline constexpr float kPickCap_us = 3600000000.0f;  // 2.28's starting minimum: an hour never wins
inline constexpr int kNoPick = -1;                   // no entry counts (IGNORE, negative, NaN or capped)
inline constexpr uint32_t kAllSlots = (uint32_t{1} << kCostSlots) - 1;
static_assert(kCostSlots <= 31, "a slot mask is one uint32_t");

constexpr float pickCap(PickRule r) { return r == PickRule::Nccl2_28 ? kPickCap_us : FLT_MAX; }

// Slots NCCL filled before the tuner ran (entries >= 0): 2.31's candidates.
inline uint32_t filledSlots(const float* cost) {
  uint32_t m = 0;
  for (int i = 0; i < kCostSlots; ++i) m |= uint32_t{cost[i] >= 0.0f} << i;
  return m;
}

// The rule's raw choice, for ncclChoice below and the tests that compare the two builds of it.
// cost: the contiguous float[7][3] after the tuner; candidates: filledSlots() of the table before the
// tuner (read by 2.31 only). Returns the slot algo * 3 + proto, or kNoPick.
inline int pickLowestCostScalar(const float* cost, PickRule rule, uint32_t candidates) {
  int best = kNoPick;
  float least = pickCap(rule);
  if (rule == PickRule::Nccl2_31) {
    for (int i = kCostSlots - 1; i >= 0; --i)
      if (((candidates >> i) & 1u) && cost[i] < least) least = cost[i], best = i;
    return best;
  }
  for (int i = 0; i < kCostSlots; ++i)
    if (cost[i] >= 0.0f && cost[i] < least) least = cost[i], best = i;
  return best;
}

#if defined(__SSE2__)
// The same rules in SSE2 (x86-64's baseline): no chain of 21 dependent compares on the hot path.
inline int pickLowestCostSse2(const float* cost, PickRule rule, uint32_t candidates) {
  static_assert(kCostSlots == 21, "five full vectors and one lane");
  const float capValue = pickCap(rule);
  const bool byMask = rule == PickRule::Nccl2_31;
  const __m128 cap = _mm_set1_ps(capValue), zero = _mm_setzero_ps();
  const __m128i laneBits = _mm_setr_epi32(1, 2, 4, 8);
  __m128 v[6];
  for (int k = 0; k < 5; ++k) v[k] = _mm_loadu_ps(cost + 4 * k);
  v[5] = _mm_setr_ps(cost[20], capValue, capValue, capValue);
  for (int k = 0; k < 6; ++k) {  // entries that do not count become the cap (NaN compares false: too)
    __m128& x = v[k];
    __m128 counts;
    if (byMask) {
      const uint32_t nibble = ((candidates & kAllSlots) >> (4 * k)) & 0xFu;
      const __m128i bits = _mm_and_si128(_mm_set1_epi32(static_cast<int>(nibble)), laneBits);
      counts = _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(bits, laneBits)), _mm_cmpord_ps(x, x));
    } else {
      counts = _mm_cmpge_ps(x, zero);
    }
    x = _mm_or_ps(_mm_and_ps(counts, x), _mm_andnot_ps(counts, cap));
  }
  __m128 m = _mm_min_ps(_mm_min_ps(_mm_min_ps(v[0], v[1]), _mm_min_ps(v[2], v[3])), _mm_min_ps(v[4], v[5]));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));  // every lane: the minimum
  if (!(_mm_cvtss_f32(m) < capValue)) return kNoPick;
  uint32_t holders = 0;
  for (int k = 0; k < 6; ++k) holders |= static_cast<uint32_t>(_mm_movemask_ps(_mm_cmpeq_ps(v[k], m))) << (4 * k);
  holders &= kAllSlots;  // padding lanes hold the cap, which never is the minimum here
  return byMask ? 31 - __builtin_clz(holders) : __builtin_ctz(holders);  // 2.31: the highest slot holding it
}
#endif

// The raw rule, the fastest way this build has.
inline int pickLowestCost(const float* cost, PickRule rule, uint32_t candidates) {
#if defined(__SSE2__)
  return pickLowestCostSse2(cost, rule, candidates);
#else
  return pickLowestCostScalar(cost, rule, candidates);
#endif
}

// What NCCL runs for this table: the one answer for every caller (tuner, online path, harness,
// replay, show, simulator). table: the contiguous float[7][3] as NCCL selects from it (after the
// tuner, or untouched for NCCL's own choice); filledBefore: the table as NCCL filled it before the
// tuner ran (nullptr: `table` is that table). Under 2.31 only the slots filled then are candidates, so
// an IGNORE (-1) entry never counts as NCCL's choice. Returns algo * 3 + proto, or kNoPick.
inline int ncclChoice(const float* table, PickRule rule, const float* filledBefore = nullptr) {
  const uint32_t candidates = rule == PickRule::Nccl2_31 ? filledSlots(filledBefore ? filledBefore : table) : kAllSlots;
  return pickLowestCost(table, rule, candidates);
}

// What NCCL runs where only `algo` may run (NCCL_ALGO naming it alone; a tuner that forces the
// algorithm and leaves the protocol to NCCL): the same rule over that algorithm's row alone.
// Returns the slot, or kNoPick when NCCL can run none of its protocols.
inline int ncclChoiceWithin(const float* table, PickRule rule, int algo) {
  float row[kCostSlots];
  for (int i = 0; i < kCostSlots; ++i) row[i] = i / DYNAMICCL_NCCL_NUM_PROTOCOLS == algo ? table[i] : -1.0f;
  return ncclChoice(row, rule);
}

// Channels NCCL runs for a call: tunerChannels is what the tuner wrote (0: untouched), ncclChannels
// NCCL's own size-based count. Before 2.31 the tuner's value replaced NCCL's (the scheduler still
// clips it to the communicator's channels); from 2.31 it only lowers NCCL's count.
constexpr int channelsRun(PickRule rule, int tunerChannels, int ncclChannels) {
  if (tunerChannels <= 0) return ncclChannels;
  if (rule == PickRule::Nccl2_31) return tunerChannels < ncclChannels ? tunerChannels : ncclChannels;
  return tunerChannels;
}
constexpr bool channelsAreCap(PickRule rule) { return rule == PickRule::Nccl2_31; }

// NCCL's version code (major * 10000 + minor * 100 + patch, as ncclGetVersion gives it since 2.9).
// Selection rules: 2.28 up to 2.29, 2.30, then 2.31's (2.32 keeps them).
constexpr PickRule pickRuleFor(int versionCode) {
  return versionCode >= 23100 ? PickRule::Nccl2_31 : versionCode >= 23000 ? PickRule::Nccl2_30 : PickRule::Nccl2_28;
}
// The newest tuner interface a release probes first: v7 from 2.32.6, v6 from 2.30.3, v5 from 2.28.3,
// v4 from 2.24.3, v3 from 2.22.3, else v2 (NCCL_FACTS.md). The harness loads a library as that release.
constexpr int tunerProbeFrom(int versionCode) {
  return versionCode >= 23206 ? 7 : versionCode >= 23003 ? 6 : versionCode >= 22803 ? 5 : versionCode >= 22403 ? 4
         : versionCode >= 22203 ? 3 : 2;
}
constexpr const char* pickRuleName(PickRule r) {
  return r == PickRule::Nccl2_28 ? "2.28" : r == PickRule::Nccl2_30 ? "2.30" : "2.31";
}

// "2.31", "2.31.2" or a version code such as "23102"; nullopt for anything else (2.0 .. 9.99.99).
inline std::optional<int> parseNcclVersion(std::string_view s) {
  int parts[3] = {0, 0, 0}, n = 0, digits = 0;
  for (char ch : s) {
    if (ch == '.') {
      if (digits == 0 || ++n > 2) return std::nullopt;
      digits = 0;
    } else if (ch >= '0' && ch <= '9') {
      if (++digits > 5) return std::nullopt;
      parts[n] = parts[n] * 10 + (ch - '0');
    } else {
      return std::nullopt;
    }
  }
  if (digits == 0) return std::nullopt;
  if (n == 0) return parts[0] >= 20000 && parts[0] <= 99999 ? std::optional<int>(parts[0]) : std::nullopt;
  if (parts[0] < 2 || parts[0] > 9 || parts[1] > 99 || parts[2] > 99) return std::nullopt;
  return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

// The rule for a version text (see parseNcclVersion); nullopt when it is not one.
inline std::optional<PickRule> parsePickRule(std::string_view s) {
  const std::optional<int> code = parseNcclVersion(s);
  return code ? std::optional<PickRule>(pickRuleFor(*code)) : std::nullopt;
}

}  // namespace dynamiccl::abi
