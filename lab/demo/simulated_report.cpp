// The simulated demo's output: the printed score table and summary.json (what its test reads).
#include <nlohmann/json.hpp>

#include <cstdio>

#include "lab/demo/demo.h"
#include "offline/files/files.h"

namespace dynamiccl::cli::demo {
namespace {

std::string name(Collective c) { return std::string(collectiveName(c)); }

}  // namespace

void printScoreTable(const JudgedProfiles& r, const TunedProfile& tuned) {
  std::printf("\n  Decisions through the real plugin, judged on the %s (ratio of times; < 1 is faster):\n",
              r.judge.c_str());
  if (!r.trust.empty()) std::printf("  %s\n", r.trust.c_str());
  std::printf("  %-13s %-14s %6s | %-8s %-7s | %-8s %-7s\n", "profile", "collective", "points", "vs best", "worst",
              "vs NCCL", "worst");
  std::printf("  %-13s %-14s %6s | %-8s %-7s | %-8s %-7s\n", "", "", "", "geomean", "", "geomean", "");
  for (const ProfileScore& ps : r.scores)
    for (const CollectiveScore& s : ps.perCollective)
      std::printf("  %-13s %-14s %6d | %8.3f %7.3f | %8.3f %7.3f\n", ps.label.c_str(), name(s.coll).c_str(), s.points,
                  s.geoVsBest, s.worstVsBest, s.geoVsDefault, s.worstVsDefault);
  if (r.unjudged) std::printf("  (%d decisions could not be judged: configuration not measured / not runnable)\n", r.unjudged);
  std::printf("  tuner: %lld %s iterations, %.1f%% of the exhaustive grid's %lld\n\n",
              static_cast<long long>(tuned.spentIterations), tuned.simulated ? "simulated" : "measured (replayed)",
              100.0 * double(tuned.spentIterations) / double(std::max<int64_t>(1, tuned.gridIterations)),
              static_cast<long long>(tuned.gridIterations));
}

Status writeSummaryJson(const JudgedProfiles& r, const TunedProfile& tuned, const std::string& path) {
  nlohmann::json doc;
  doc["judge"] = r.judge;
  doc["trust"] = r.trust;
  doc["tuner"] = {{"spent_iterations", tuned.spentIterations}, {"grid_iterations", tuned.gridIterations},
                  {"rules", tuned.profile.rules.size()}, {"nRanks", tuned.nRanks}, {"nNodes", tuned.nNodes}};
  doc["unjudged"] = r.unjudged;
  nlohmann::json profiles = nlohmann::json::array();
  for (const ProfileScore& ps : r.scores) {
    nlohmann::json colls = nlohmann::json::array();
    for (const CollectiveScore& s : ps.perCollective)
      colls.push_back({{"collective", name(s.coll)}, {"points", s.points}, {"geomean_vs_best", s.geoVsBest},
                       {"worst_vs_best", s.worstVsBest}, {"geomean_vs_default", s.geoVsDefault},
                       {"worst_vs_default", s.worstVsDefault}});
    profiles.push_back({{"profile", ps.label}, {"collectives", colls}});
  }
  doc["profiles"] = profiles;
  return files::writeFile(path, doc.dump(2) + "\n");
}

}  // namespace dynamiccl::cli::demo
