// Profiles made separately (one per communicator shape, per cluster, per dataset) become one: their
// rules side by side, in the order given. Two rules that answer the same call differently are a
// conflict, refused with a line naming both, since the first would silently shadow the second.
#include <algorithm>

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

}  // namespace

Expected<Profile> mergeProfiles(const std::vector<Profile>& profiles) {
  Profile out;
  out.name = "merged";
  for (const Profile& p : profiles) {
    const std::string name = p.source.empty() ? p.name : p.source;
    if (p.network) return makeError(name + ": a learned profile's network cannot be merged (merge rules profiles)");
    if (p.userRules) return makeError(name + ": NVIDIA CSV rules are the user's own: write them into one file by hand");
    if (p.hardware && out.hardware && policy::clusterHardwareToJson(*p.hardware) != policy::clusterHardwareToJson(*out.hardware))
      return makeError(name + " declares another cluster (" + clusterHardwareToJson(*p.hardware) + ") than an earlier "
                       "profile (" + clusterHardwareToJson(*out.hardware) + "): one profile is for one cluster");
    if (p.hardware) out.hardware = p.hardware;
  }
  for (size_t i = 0; i < profiles.size(); ++i)
    for (const Rule& r : profiles[i].rules) {
      for (size_t j = 0; j < i; ++j)
        for (const Rule& earlier : profiles[j].rules)
          if (sameCalls(earlier, r) && !(earlier.decision == r.decision))
            return makeError("conflict: " + where(profiles[j], earlier) + " and " + where(profiles[i], r) +
                             " answer the same calls differently; keep one (or narrow a rule) and merge again");
      out.rules.push_back(r);
    }
  return out;
}

}  // namespace dynamiccl::policy
