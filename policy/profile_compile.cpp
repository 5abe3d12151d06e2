#include "policy/profile_compile.h"

#include <algorithm>
#include <map>

namespace dynamiccl::policy {
namespace {

// Unverified rules are candidates for in-job verification; a refuted one is not worth re-testing.
bool isCandidate(const RuleStanding& st, bool userRules) { return !st.verified && !userRules && !st.refuted; }

}  // namespace

PolicyTable compileProfile(const Profile& profile, const CommShape& shape, const StandingInputs& standing,
                           const std::vector<Rule>* generated) {
  PolicyTable out;
  std::vector<RuleStanding> standings;
  standings.reserve(profile.rules.size());
  size_t applying = 0, unverifiedCount = 0, refuted = 0, otherRelease = 0;
  const Rule *firstRefuted = nullptr, *firstOtherRelease = nullptr;
  std::map<std::string, size_t> reasons;
  for (const Rule& r : profile.rules) {
    standings.push_back(ruleStanding(r.evidence, standing));
    const RuleStanding& st = standings.back();
    applying += st.applies;
    const bool unverified = isCandidate(st, profile.userRules);
    unverifiedCount += unverified;
    // Another release's rules have a line of their own (otherReleaseRules): counted here, not repeated.
    const std::string why = st.otherRelease ? "measured under another NCCL release (its own line)" : st.why;
    if (unverified && (reasons.size() < 16 || reasons.count(why))) ++reasons[why];
    if (st.refuted && !refuted++) firstRefuted = &r;
    if (st.otherRelease && !otherRelease++) firstOtherRelease = &r;
  }
  auto note = [&](size_t n, const Rule* first, size_t index, const char* what) {
    return std::to_string(n) + " rule(s) " + what + " (" + (first->origin.empty() ? "rules[" + std::to_string(index) + "]" : first->origin) +
           ": " + standings[index].why + ")";
  };
  if (refuted)
    out.refutedRules = note(refuted, firstRefuted, static_cast<size_t>(firstRefuted - profile.rules.data()),
                            "whose own evidence shows no gain beyond its interval are not applied at any trust level");
  if (otherRelease)
    out.otherReleaseRules = note(otherRelease, firstOtherRelease,
                                 static_cast<size_t>(firstOtherRelease - profile.rules.data()),
                                 "measured under another NCCL release's selection rules are unverified here");
  // A table of all of the profile's rules is compiled from the profile itself: no copy of 60k rules.
  auto compileSubset = [&](bool learned, size_t count, auto&& keeps) {
    if (!learned && count == profile.rules.size()) return DecisionTable::compile(profile, shape);
    Profile subset;
    if (learned) subset.rules = *generated;  // learned rules first, as before
    subset.rules.reserve(subset.rules.size() + count);
    for (size_t i = 0; i < profile.rules.size(); ++i)
      if (keeps(standings[i])) subset.rules.push_back(profile.rules[i]);
    return DecisionTable::compile(subset, shape);
  };
  // Learned rules are never verified: candidates, applied only when trusted.
  out.table = compileSubset(generated && standing.trust == Trust::All, applying,
                            [](const RuleStanding& st) { return st.applies; });
  if (!generated && applying == profile.rules.size() && unverifiedCount == applying) {
    out.unverified = out.table;  // the same rules: compiled once
  } else {
    out.unverified = compileSubset(generated != nullptr, unverifiedCount,
                                   [&](const RuleStanding& st) { return isCandidate(st, profile.userRules); });
  }
  std::vector<std::pair<size_t, std::string>> byCount;
  for (const auto& [why, n] : reasons) byCount.emplace_back(n, why);
  std::sort(byCount.begin(), byCount.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [n, why] : byCount) out.unverifiedWhy += (out.unverifiedWhy.empty() ? "" : "; ") + std::to_string(n) + " " + why;
  return out;
}

}  // namespace dynamiccl::policy
