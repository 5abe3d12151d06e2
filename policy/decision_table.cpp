// Compiling profile rules into per-communicator size intervals (done at init, off the hot path).
#include "policy/decision_table.h"

#include <algorithm>

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

bool sameCandidates(const Candidates& a, const Candidates& b) {
  if (a.count != b.count) return false;
  for (int i = 0; i < a.count; ++i)
    if (!(a.decisions[i] == b.decisions[i]) || a.admits[i] != b.admits[i]) return false;
  return true;
}

}  // namespace

DecisionTable DecisionTable::compile(const Profile& profile, const CommShape& shape) {
  DecisionTable t;
  std::vector<ShapedRule> shaped;
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
  t.ruleCount_ = shaped.size();

  // numPipeOps values named by some rule get a class of their own; all others share class 0.
  for (const ShapedRule& s : shaped)
    if (s.rule->numPipeOps > 0 && t.pipeClassOf_[s.rule->numPipeOps] == 0)
      t.pipeClassOf_[s.rule->numPipeOps] = static_cast<uint8_t>(t.numPipeClasses_++);

  t.candidates_.push_back(Candidates{});  // index 0: no rule applies
  const size_t lines = static_cast<size_t>(kNumCollectives) * t.numPipeClasses_ * 2;
  t.bucketStart_.resize(lines * SizeBucket::kCount);
  std::vector<const ShapedRule*> applicable;
  std::vector<uint64_t> cuts;
  for (int coll = 0; coll < kNumCollectives; ++coll)
    for (int pc = 0; pc < t.numPipeClasses_; ++pc)
      for (int reg = 0; reg < 2; ++reg) {
        applicable.clear();
        for (const ShapedRule& s : shaped) {
          const Rule& r = *s.rule;
          if (r.collective && static_cast<int>(*r.collective) != coll) continue;
          if (r.numPipeOps > 0 ? t.pipeClassOf_[r.numPipeOps] != pc : false) continue;
          if (r.regBuff != -1 && r.regBuff != reg) continue;
          applicable.push_back(&s);
        }
        // Elementary intervals start at every rule's lo and just past every rule's hi.
        cuts.assign(1, 0);
        for (const ShapedRule* s : applicable) {
          cuts.push_back(s->lo);
          if (s->hi != UINT64_MAX) cuts.push_back(s->hi + 1);
        }
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

        const size_t line = (static_cast<size_t>(coll) * t.numPipeClasses_ + pc) * 2 + reg;
        const size_t firstSegment = t.segments_.size();
        for (size_t k = 0; k < cuts.size(); ++k) {
          const uint64_t lo = cuts[k];
          const uint64_t hi = k + 1 < cuts.size() ? cuts[k + 1] - 1 : UINT64_MAX;
          Candidates c;
          for (const ShapedRule* s : applicable) {
            if (lo < s->lo || lo > s->hi || c.count == Candidates::kMax) continue;
            const Decision& d = s->rule->decision;
            const GuardMask admits = s->rule->admits;
            // A repeat is redundant only if an earlier copy already admits whatever this one does.
            bool dup = false;
            for (int i = 0; i < c.count; ++i) dup |= c.decisions[i] == d && (c.admits[i] & admits) == admits;
            if (!dup) {
              c.decisions[c.count] = d;
              c.admits[c.count++] = admits;
            }
          }
          uint32_t idx = 0;
          if (c.count) {
            auto it = std::find_if(t.candidates_.begin(), t.candidates_.end(),
                                   [&](const Candidates& x) { return sameCandidates(x, c); });
            idx = static_cast<uint32_t>(it - t.candidates_.begin());
            if (it == t.candidates_.end()) t.candidates_.push_back(c);
          }
          // Neighbours with the same answer merge into one segment.
          if (t.segments_.size() > firstSegment && t.segments_.back().candidates == idx) t.segments_.back().hi = hi;
          else t.segments_.push_back(Segment{hi, idx});
        }
        for (int b = 0; b < SizeBucket::kCount; ++b) {
          const uint64_t lowest = SizeBucket::lowest(b);
          size_t i = firstSegment;
          while (t.segments_[i].hi < lowest) ++i;
          t.bucketStart_[line * SizeBucket::kCount + b] = static_cast<uint32_t>(i);
        }
      }
  return t;
}

}  // namespace dynamiccl::policy
