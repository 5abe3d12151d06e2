// Compiling profile rules into per-communicator size intervals (done at init, off the hot path).
#include "policy/decision_table.h"

#include <algorithm>
#include <map>
#include <set>

namespace dynamiccl::policy {
namespace {

uint64_t saturatingMulAdd(uint64_t a, uint64_t b, uint64_t c) {
  if (b != 0 && a > (UINT64_MAX - c) / b) return UINT64_MAX;
  return a * b + c;
}

// A rule reduced to what matters once the communicator's shape is known.
struct ShapedRule {
  const Rule* rule;
  uint64_t lo, hi;  // byte interval, inclusive
};

// Orders Candidates so equal answers share one entry (a map, not a scan: profiles have 60k rules).
struct CandidatesLess {
  bool operator()(const Candidates& a, const Candidates& b) const {
    if (a.count != b.count) return a.count < b.count;
    for (int i = 0; i < a.count; ++i) {
      if (a.decisions[i] != b.decisions[i]) return a.decisions[i] < b.decisions[i];
      if (a.admits[i] != b.admits[i]) return a.admits[i] < b.admits[i];
    }
    return false;
  }
};

std::vector<ShapedRule> shapeRules(const Profile& profile, const CommShape& shape) {
  std::vector<ShapedRule> shaped;
  shaped.reserve(profile.rules.size());
  for (const Rule& r : profile.rules) {
    if (shape.nNodes < r.minNodes || shape.nNodes > r.maxNodes) continue;
    if (shape.nRanks < r.minRanks || shape.nRanks > r.maxRanks) continue;
    ShapedRule s{&r, r.minBytes, r.maxBytes};
    if (r.sizeKey == SizeKey::BytesPerRank) {
      const uint64_t n = static_cast<uint64_t>(std::max(shape.nRanks, 1));
      s.lo = saturatingMulAdd(r.minBytes, n, 0);
      s.hi = r.maxBytes == UINT64_MAX ? UINT64_MAX : saturatingMulAdd(r.maxBytes, n, n - 1);
    }
    shaped.push_back(s);
  }
  return shaped;
}

// The answer of the rules covering an interval, in rule order, at most Candidates::kMax.
Candidates answerOf(const std::set<uint32_t>& active, const std::vector<ShapedRule>& shaped) {
  Candidates c;
  for (auto it = active.begin(); it != active.end() && c.count < Candidates::kMax; ++it) {
    const Decision& d = shaped[*it].rule->decision;
    const GuardMask admits = shaped[*it].rule->admits;
    // A repeat is redundant only if an earlier copy already admits whatever this one does.
    bool dup = false;
    for (int i = 0; i < c.count; ++i) dup |= c.decisions[i] == d && (c.admits[i] & admits) == admits;
    if (!dup) {
      c.decisions[c.count] = d;
      c.admits[c.count++] = admits;
    }
  }
  return c;
}

// Kept between lines so a compile allocates them once.
struct SweepScratch {
  std::vector<std::pair<uint64_t, int64_t>> events;  // (cut, +1+i: rule i starts / -1-i: rule i ended)
  std::set<uint32_t> active;                          // rules covering the current interval, in rule order
};

// Elementary intervals start at every rule's lo and just past every rule's hi: one sweep over the
// sorted cuts, keeping the set of covering rules (n log n, not rules x intervals). Calls
// segment(hi, answer) for each interval, ascending, the last one ending at UINT64_MAX.
template <class Segment>
void sweepIntervals(const std::vector<ShapedRule>& shaped, const std::vector<uint32_t>& applicable,
                    SweepScratch& scratch, Segment&& segment) {
  auto& events = scratch.events;
  events.clear();
  for (uint32_t i : applicable) {
    events.emplace_back(shaped[i].lo, 1 + static_cast<int64_t>(i));
    if (shaped[i].hi != UINT64_MAX) events.emplace_back(shaped[i].hi + 1, -1 - static_cast<int64_t>(i));
  }
  std::sort(events.begin(), events.end());
  scratch.active.clear();
  size_t e = 0;
  uint64_t lo = 0;
  for (;;) {
    for (; e < events.size() && events[e].first == lo; ++e) {
      if (events[e].second > 0) scratch.active.insert(static_cast<uint32_t>(events[e].second - 1));
      else scratch.active.erase(static_cast<uint32_t>(-events[e].second - 1));
    }
    const uint64_t hi = e < events.size() ? events[e].first - 1 : UINT64_MAX;
    segment(hi, answerOf(scratch.active, shaped));
    if (hi == UINT64_MAX) break;
    lo = hi + 1;
  }
}

}  // namespace

DecisionTable DecisionTable::compile(const Profile& profile, const CommShape& shape) {
  DecisionTable t;
  const std::vector<ShapedRule> shaped = shapeRules(profile, shape);
  t.ruleCount_ = shaped.size();

  // numPipeOps values named by some rule get a class of their own; all others share class 0.
  for (const ShapedRule& s : shaped)
    if (s.rule->numPipeOps > 0 && t.pipeClassOf_[s.rule->numPipeOps] == 0)
      t.pipeClassOf_[s.rule->numPipeOps] = static_cast<uint8_t>(t.numPipeClasses_++);

  t.candidates_.push_back(Candidates{});  // index 0: no rule applies
  std::map<Candidates, uint32_t, CandidatesLess> candidateIndex;
  const size_t lines = static_cast<size_t>(kNumCollectives) * t.numPipeClasses_ * 2;
  t.buckets_.resize(lines * SizeBucket::kCount);
  // A line has at most two segments a rule plus one: room for all of them from the start, so 60k
  // rules' segments are written once into fresh memory (growing by doubling copied them and faulted
  // the copies in again). Room never written costs no memory.
  size_t mostSegments = lines;
  for (const ShapedRule& s : shaped)
    mostSegments += 2 * (s.rule->collective ? 1 : kNumCollectives) * (s.rule->numPipeOps > 0 ? 1 : t.numPipeClasses_) *
                    (s.rule->regBuff == -1 ? 2 : 1);
  t.segmentHi_.reserve(mostSegments);
  t.segmentCandidates_.reserve(mostSegments);
  std::vector<uint32_t> applicable;  // indexes into shaped, in rule order
  applicable.reserve(shaped.size());
  SweepScratch scratch;
  scratch.events.reserve(2 * shaped.size());
  for (int coll = 0; coll < kNumCollectives; ++coll)
    for (int pc = 0; pc < t.numPipeClasses_; ++pc)
      for (int reg = 0; reg < 2; ++reg) {
        applicable.clear();
        for (uint32_t i = 0; i < shaped.size(); ++i) {
          const Rule& r = *shaped[i].rule;
          if (r.collective && static_cast<int>(*r.collective) != coll) continue;
          if (r.numPipeOps > 0 ? t.pipeClassOf_[r.numPipeOps] != pc : false) continue;
          if (r.regBuff != -1 && r.regBuff != reg) continue;
          applicable.push_back(i);
        }
        const size_t line = (static_cast<size_t>(coll) * t.numPipeClasses_ + pc) * 2 + reg;
        const size_t firstSegment = t.segmentHi_.size();
        sweepIntervals(shaped, applicable, scratch, [&](uint64_t hi, const Candidates& c) {
          uint32_t idx = 0;
          if (c.count) {
            auto [it, added] = candidateIndex.try_emplace(c, static_cast<uint32_t>(t.candidates_.size()));
            if (added) t.candidates_.push_back(c);
            idx = it->second;
          }
          // Neighbours with the same answer merge into one segment.
          if (t.segmentHi_.size() > firstSegment && t.segmentCandidates_.back() == idx) {
            t.segmentHi_.back() = hi;
          } else {
            t.segmentHi_.push_back(hi);
            t.segmentCandidates_.push_back(idx);
          }
        });
        t.indexBuckets(line, firstSegment);
      }
  return t;
}

void DecisionTable::indexBuckets(size_t line, size_t firstSegment) {
  // Buckets and segments both ascend.
  size_t first = firstSegment;
  for (int b = 0; b < SizeBucket::kCount; ++b) {
    const uint64_t lowest = SizeBucket::lowest(b);
    const uint64_t highest = b + 1 < SizeBucket::kCount ? SizeBucket::lowest(b + 1) - 1 : UINT64_MAX;
    while (segmentHi_[first] < lowest) ++first;
    size_t last = first;
    while (segmentHi_[last] < highest) ++last;
    BucketRange& range = buckets_[line * SizeBucket::kCount + b];
    range = {static_cast<uint32_t>(first), static_cast<uint32_t>(last)};
    if (last - first + 1 >= kSubIndexFrom && b - 1 >= kSubBits) {
      range.sub = static_cast<uint32_t>(subFirst_.size());
      size_t at = first;
      for (uint64_t k = 0; k < kSubRanges; ++k) {
        const uint64_t sliceLowest = lowest + (k << (b - 1 - kSubBits));
        while (segmentHi_[at] < sliceLowest) ++at;
        subFirst_.push_back(static_cast<uint32_t>(at));
      }
      subFirst_.push_back(static_cast<uint32_t>(last));
    }
  }
}

}  // namespace dynamiccl::policy
