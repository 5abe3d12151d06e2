// The facts the report and the demo's table share: which rule answers a call, which verdict decided a key.
#include "offline/report/report.h"

namespace dynamiccl::report {

bool ruleMatches(const policy::Rule& r, Collective coll, uint64_t bytes, int nRanks, int nNodes) {
  const uint64_t key = r.sizeKey == policy::SizeKey::Bytes ? bytes : bytesPerRank(bytes, nRanks);
  return (!r.collective || *r.collective == coll) && key >= r.minBytes && key <= r.maxBytes && nRanks >= r.minRanks &&
         nRanks <= r.maxRanks && nNodes >= r.minNodes && nNodes <= r.maxNodes;
}

const policy::Rule* ruleFor(const policy::Profile& profile, Collective coll, uint64_t bytes, int nRanks, int nNodes) {
  for (const policy::Rule& r : profile.rules)
    if (ruleMatches(r, coll, bytes, nRanks, nNodes)) return &r;
  return nullptr;
}

int decidingVerdict(const std::vector<store::VerdictRow>& verdicts, Collective coll, uint64_t bytes, int nRanks,
                    int nNodes) {
  auto rank = [](const store::VerdictRow& v) { return v.state == "promoted" ? 2 : v.state == "testing" ? 1 : 0; };
  int shown = -1;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const store::VerdictRow& v = verdicts[i];
    if (parseCollective(v.collective) != coll || bytes < v.min_bytes || bytes > v.max_bytes || v.n_ranks != nRanks ||
        (nNodes != 0 && v.n_nodes != nNodes))
      continue;
    const store::VerdictRow* s = shown < 0 ? nullptr : &verdicts[static_cast<size_t>(shown)];
    if (!s || rank(v) > rank(*s) || (rank(v) == rank(*s) && v.gain > s->gain)) shown = static_cast<int>(i);
  }
  return shown;
}

}  // namespace dynamiccl::report
