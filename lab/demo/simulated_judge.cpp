// The simulated demo's step 5: every profile through the real plugin library (harness, NCCL's cost
// table from NcclReference) for every (collective, size); the decision NCCL would run is timed on the
// noise-free simulator.
#include <algorithm>
#include <cmath>

#include "lab/demo/demo.h"

namespace dynamiccl::cli::demo {
namespace {

// Fastest configuration of the tuner's search space that NCCL's table allows and the hardware runs.
double bestFeasible_us(const sim::Simulator& s, const model::NcclReference& nccl, Collective coll, uint64_t bytes,
                       const model::CostTable& table, double default_us) {
  static const tune::SpaceDimensions dims = tune::defaultDimensions();
  double best = default_us > 0 ? default_us : 1e300;
  for (const auto& [a, p] : dims.algoProtos) {
    if (table[int(a)][int(p)] < 0) continue;
    for (int ch : dims.channels)
      for (uint64_t chunk : dims.chunks) {
        const sim::Config c = nccl.resolve(sim::Config{a, p, ch, chunk}, bytes);
        if (!s.feasible(coll, c)) continue;
        if (const double t = s.time_us(coll, bytes, c); t > 0) best = std::min(best, t);
      }
  }
  return best;
}

// Geometric means and worst ratios of the points of one profile and collective.
CollectiveScore score(Collective coll, const std::vector<PointResult>& points, const std::string& profile) {
  CollectiveScore s;
  s.coll = coll;
  double logBest = 0, logDefault = 0;
  for (const PointResult& p : points) {
    if (p.profile != profile || p.coll != coll) continue;
    ++s.points;
    logBest += std::log(p.chosen_us / p.best_us);
    logDefault += std::log(p.chosen_us / p.default_us);
    s.worstVsBest = std::max(s.worstVsBest, p.chosen_us / p.best_us);
    s.worstVsDefault = std::max(s.worstVsDefault, p.chosen_us / p.default_us);
  }
  if (s.points) s.geoVsBest = std::exp(logBest / s.points), s.geoVsDefault = std::exp(logDefault / s.points);
  return s;
}

}  // namespace

Expected<JudgedProfiles> judgeOnSimulator(const DemoCluster& cluster, const std::vector<ProfileToJudge>& profiles,
                                         const std::vector<Collective>& collectives,
                                         const std::vector<uint64_t>& sizes, const std::string& pluginPath) {
  const EnvVars env = clusterEnv(cluster.topology);
  auto lib = openPlugin(pluginPath);
  if (!lib) return makeError(lib.error());
  const sim::Simulator simulator(cluster.topology, cluster.params);
  const model::NcclReference& nccl = *cluster.nccl;
  JudgedProfiles r;
  r.judge = "noise-free simulator (simulated times)";
  r.trust = kTrustNote;
  for (const ProfileToJudge& prof : profiles) {
    PluginDecider plugin(lib.value(), prof.path);
    for (Collective coll : collectives)
      for (uint64_t bytes : sizes) {
        const model::CostTable table = nccl.costTable(coll, bytes);
        const sim::Config def = nccl.defaultConfig(coll, bytes);
        const double default_us = simulator.time_us(coll, bytes, def);
        if (default_us <= 0) continue;  // NCCL itself cannot run this collective here
        sim::Config decided = def;
        if (!prof.path.empty()) {
          auto d = plugin.decide(cluster.topology, coll, bytes, table);
          if (!d) return makeError(d.error());
          decided = d->algo == Algo::Default ? def : d.value();
        }
        const double chosen_us = simulator.time_us(coll, bytes, nccl.resolve(decided, bytes));
        if (chosen_us <= 0) {
          ++r.unjudged;  // a decision the hardware cannot run: NCCL would fail, not time it
          continue;
        }
        PointResult p{prof.label, coll, bytes, decisionLabel(decided), chosen_us, default_us, 0, decided,
                      cluster.topology.nRanks()};
        p.best_us = std::min(chosen_us, bestFeasible_us(simulator, nccl, coll, bytes, table, default_us));
        r.points.push_back(p);
      }
  }
  for (const ProfileToJudge& prof : profiles) {
    ProfileScore ps{prof.label, {}};
    for (Collective coll : collectives) ps.perCollective.push_back(score(coll, r.points, prof.label));
    r.scores.push_back(ps);
  }
  return r;
}

}  // namespace dynamiccl::cli::demo
