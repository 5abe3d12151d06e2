// Profiles made separately (one per communicator shape, per cluster, per dataset) become one: their
// rules side by side, in the order given. Two rules that answer the same call differently are a
// conflict, refused with a line naming both, since the first would silently shadow the second.
//
// Near-linear: a profile's rules are checked against an index of the earlier profiles' rules, grouped
// by scope (everything but the sizes). Per scope, the byte axis is cut into spans each answered by one
// decision or by several; a rule conflicts with a scope where a span its sizes touch is answered by
// anything but its own decision. Scopes are found through their rank ranges (an interval tree), so
// rules pinned to their communicator shape, as tune writes them, meet only their own scope's.
#include <algorithm>
#include <map>
#include <optional>

#include "policy/profile.h"

namespace dynamiccl::policy {
namespace {

bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 <= b1 && b0 <= a1; }
bool overlaps(int a0, int a1, int b0, int b1) { return a0 <= b1 && b0 <= a1; }

// Whether some call may match both rules (sizes in different units are taken to overlap).
bool sameCalls(const Rule& a, const Rule& b) {
  if (a.collective && b.collective && *a.collective != *b.collective) return false;
  const bool sizes = a.sizeKey != b.sizeKey || overlaps(a.minBytes, a.maxBytes, b.minBytes, b.maxBytes);
  return sizes && overlaps(a.minNodes, a.maxNodes, b.minNodes, b.maxNodes) &&
         overlaps(a.minRanks, a.maxRanks, b.minRanks, b.maxRanks) &&
         (a.numPipeOps < 0 || b.numPipeOps < 0 || a.numPipeOps == b.numPipeOps) &&
         (a.regBuff < 0 || b.regBuff < 0 || a.regBuff == b.regBuff);
}

std::string where(const Profile& p, const Rule& r) {
  return (p.source.empty() ? p.name : p.source) + " " + (r.origin.empty() ? "(a rule)" : r.origin);
}

// Which calls a rule answers, apart from their sizes.
struct Scope {
  int collective = -1;  // -1: every collective
  SizeKey sizeKey = SizeKey::Bytes;
  int minNodes = 0, maxNodes = 0, minRanks = 0, maxRanks = 0, numPipeOps = -1, regBuff = -1;
  auto operator<=>(const Scope&) const = default;
};

Scope scopeOf(const Rule& r) {
  return {r.collective ? static_cast<int>(*r.collective) : -1, r.sizeKey, r.minNodes, r.maxNodes, r.minRanks,
          r.maxRanks, r.numPipeOps, r.regBuff};
}

// Whether some call may lie in both scopes, sizes aside (sameCalls without them).
bool sameCallsBesidesSizes(const Scope& a, const Scope& b) {
  return (a.collective < 0 || b.collective < 0 || a.collective == b.collective) &&
         overlaps(a.minNodes, a.maxNodes, b.minNodes, b.maxNodes) && overlaps(a.minRanks, a.maxRanks, b.minRanks, b.maxRanks) &&
         (a.numPipeOps < 0 || b.numPipeOps < 0 || a.numPipeOps == b.numPipeOps) &&
         (a.regBuff < 0 || b.regBuff < 0 || a.regBuff == b.regBuff);
}

// Sizes [lo, hi] answered by one decision (several: nullopt). Spans are sorted and disjoint; runEnd
// is the last span of the run of spans (gaps between them allowed) that one decision answers.
struct Span {
  uint64_t lo = 0, hi = 0;
  std::optional<Decision> only;
  size_t runEnd = 0;
};

// One scope's rules from the earlier profiles.
struct ScopeRules {
  Scope scope;
  std::vector<const Rule*> rules;
  std::vector<Span> spans;
  std::optional<Decision> only;  // every rule's decision, where they all answer alike

  void index() {
    struct Event {
      uint64_t at;
      int delta;
      const Decision* decision;
    };
    std::vector<Event> events;
    events.reserve(2 * rules.size());
    for (const Rule* r : rules) {
      events.push_back({r->minBytes, +1, &r->decision});
      if (r->maxBytes != UINT64_MAX) events.push_back({r->maxBytes + 1, -1, &r->decision});  // else it never ends
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
    std::map<Decision, int> active;
    spans.clear();
    for (size_t e = 0; e < events.size();) {
      const uint64_t lo = events[e].at;
      for (; e < events.size() && events[e].at == lo; ++e)
        if ((active[*events[e].decision] += events[e].delta) == 0) active.erase(*events[e].decision);
      if (active.empty()) continue;
      const std::optional<Decision> answer = active.size() == 1 ? std::optional(active.begin()->first) : std::nullopt;
      const uint64_t hi = e < events.size() ? events[e].at - 1 : UINT64_MAX;
      if (!spans.empty() && spans.back().hi + 1 == lo && spans.back().only == answer) spans.back().hi = hi;
      else spans.push_back({lo, hi, answer, 0});
    }
    for (size_t s = spans.size(); s-- > 0;)
      spans[s].runEnd = s + 1 < spans.size() && spans[s].only && spans[s + 1].only == spans[s].only ? spans[s + 1].runEnd : s;
    only = rules.front()->decision;
    for (const Rule* r : rules)
      if (!(r->decision == *only)) only.reset();
  }

  // Whether some rule here answers a call of r (its scope overlapping) other than r does.
  bool conflictsWith(const Rule& r) const {
    if (r.sizeKey != scope.sizeKey) return !(only && *only == r.decision);  // sizes in other units overlap
    const auto first = std::lower_bound(spans.begin(), spans.end(), r.minBytes,
                                        [](const Span& s, uint64_t lo) { return s.hi < lo; });
    if (first == spans.end() || first->lo > r.maxBytes) return false;
    if (!(first->only && *first->only == r.decision)) return true;
    const size_t next = first->runEnd + 1;
    return next < spans.size() && spans[next].lo <= r.maxBytes;
  }
};

// The earlier profiles' rules by scope, and the scopes by rank range: a static interval tree over
// the scopes sorted by their first rank, holding the largest last rank of each subtree.
class EarlierRules {
 public:
  void add(const std::vector<Rule>& rules) {
    std::vector<size_t> touched;
    for (const Rule& r : rules) {
      const Scope s = scopeOf(r);
      auto [it, fresh] = byScope_.try_emplace(s, scopes_.size());
      if (fresh) scopes_.push_back({s, {}, {}, std::nullopt});
      scopes_[it->second].rules.push_back(&r);
      touched.push_back(it->second);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (size_t t : touched) scopes_[t].index();
    byRanks_.resize(scopes_.size());
    for (size_t i = 0; i < scopes_.size(); ++i) byRanks_[i] = i;
    std::sort(byRanks_.begin(), byRanks_.end(),
              [&](size_t a, size_t b) { return scopes_[a].scope.minRanks < scopes_[b].scope.minRanks; });
    maxRanks_.assign(4 * byRanks_.size(), 0);
    if (!byRanks_.empty()) build(1, 0, byRanks_.size());
  }

  // The scopes some call of s may also lie in.
  std::vector<const ScopeRules*> overlapping(const Scope& s) const {
    std::vector<const ScopeRules*> out;
    const size_t end = static_cast<size_t>(
        std::partition_point(byRanks_.begin(), byRanks_.end(), [&](size_t i) { return scopes_[i].scope.minRanks <= s.maxRanks; }) -
        byRanks_.begin());
    if (end > 0) collect(1, 0, byRanks_.size(), end, s, out);
    return out;
  }

 private:
  int build(size_t node, size_t lo, size_t hi) {
    if (hi - lo == 1) return maxRanks_[node] = scopes_[byRanks_[lo]].scope.maxRanks;
    const size_t mid = (lo + hi) / 2;
    return maxRanks_[node] = std::max(build(2 * node, lo, mid), build(2 * node + 1, mid, hi));
  }
  // Scopes among the first `end` (by first rank) whose last rank reaches s's first and that overlap s.
  void collect(size_t node, size_t lo, size_t hi, size_t end, const Scope& s, std::vector<const ScopeRules*>& out) const {
    if (lo >= end || maxRanks_[node] < s.minRanks) return;
    if (hi - lo == 1) {
      if (sameCallsBesidesSizes(scopes_[byRanks_[lo]].scope, s)) out.push_back(&scopes_[byRanks_[lo]]);
      return;
    }
    const size_t mid = (lo + hi) / 2;
    collect(2 * node, lo, mid, end, s, out);
    collect(2 * node + 1, mid, hi, end, s, out);
  }

  std::vector<ScopeRules> scopes_;
  std::map<Scope, size_t> byScope_;
  std::vector<size_t> byRanks_;
  std::vector<int> maxRanks_;  // the tree, node 1 its root
};

// The first rule of profiles[i], in order, that some earlier profile's rule answers differently, and
// the first such earlier rule; the message names both.
Status conflicts(const std::vector<Profile>& profiles, size_t i, const EarlierRules& earlier) {
  std::map<Scope, std::vector<const ScopeRules*>> near;  // per scope of this profile
  for (const Rule& r : profiles[i].rules) {
    const Scope s = scopeOf(r);
    auto it = near.find(s);
    if (it == near.end()) it = near.emplace(s, earlier.overlapping(s)).first;
    if (std::none_of(it->second.begin(), it->second.end(), [&](const ScopeRules* e) { return e->conflictsWith(r); }))
      continue;
    for (size_t j = 0; j < i; ++j)
      for (const Rule& e : profiles[j].rules)
        if (sameCalls(e, r) && !(e.decision == r.decision))
          return makeError("conflict: " + where(profiles[j], e) + " and " + where(profiles[i], r) +
                           " answer the same calls differently; keep one (or narrow a rule) and merge again");
  }
  return Ok{};
}

}  // namespace

Expected<Profile> mergeProfiles(const std::vector<Profile>& profiles) {
  Profile out;
  out.name = "merged";
  for (const Profile& p : profiles) {
    const std::string name = p.source.empty() ? p.name : p.source;
    if (!p.policySection.empty()) return makeError(name + ": a learned profile's network cannot be merged (merge rules profiles)");
    if (p.userRules) return makeError(name + ": NVIDIA CSV rules are the user's own: write them into one file by hand");
    if (p.hardware && out.hardware && policy::clusterHardwareToJson(*p.hardware) != policy::clusterHardwareToJson(*out.hardware))
      return makeError(name + " declares another cluster (" + clusterHardwareToJson(*p.hardware) + ") than an earlier "
                       "profile (" + clusterHardwareToJson(*out.hardware) + "): one profile is for one cluster");
    if (p.hardware) out.hardware = p.hardware;
  }
  EarlierRules earlier;
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (i > 0)
      if (auto s = conflicts(profiles, i, earlier); !s) return makeError(s.error());
    earlier.add(profiles[i].rules);
    out.rules.insert(out.rules.end(), profiles[i].rules.begin(), profiles[i].rules.end());
  }
  return out;
}

}  // namespace dynamiccl::policy
