// Demo step 5: every profile goes through the REAL plugin library (harness, NCCL's cost table from
// NcclReference) for every (collective, size); the decision NCCL would run is looked up in real
// measurements with sim's replay (the lab's simulated demo times it on the simulator: lab/demo).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "offline/harness/harness.h"
#include "offline/model/model.h"
#include "offline/demo/demo_steps.h"
#include "offline/sim/sim.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {

const std::string kTrustNote = std::string("DYNAMICCL_TRUST=") + kReplayTrust +
                               ": the plugin applied the profiles' unverified (simulated, learned) rules; a job "
                               "applies them only when opted in";

// The plugin probes its host once per process; DYNAMICCL_TOPO makes that probe see the demo
// cluster (a learned policy's rules depend on it; it also stands in for a profile's "fingerprint"
// in multi-node communicators). Also keeps online learning and recording off, and opts in to
// unverified rules: the replay judges what the tuned and learned profiles would do if applied.
EnvVars clusterEnv(const model::Topology& t, const std::string& trust) {
  EnvVars env;
  auto set = [&](const char* name, const std::string& v) { env.push_back(std::make_unique<harness::ScopedEnv>(name, v.c_str())); };
  set(kTopoVariable, topoOverridesText(model::topoOverridesOf(t)));
  env.push_back(std::make_unique<harness::ScopedEnv>("DYNAMICCL_ONLINE", nullptr));
  set("DYNAMICCL_RECORD", "0");
  set("DYNAMICCL_TRUST", trust);
  return env;
}

// What NCCL runs after the plugin saw `table`; algo Default when the plugin could not init.
Expected<sim::Config> PluginDecider::decide(const model::Topology& t, Collective coll, uint64_t bytes, const model::CostTable& table) {
  harness::ScopedEnv profile("DYNAMICCL_PROFILE", profilePath_.c_str());
  auto& comm = comms_[{t.nRanks(), t.nNodes}];
  if (!comm) {
    harness::CommSpec spec;
    spec.nRanks = t.nRanks();
    spec.nNodes = t.nNodes;
    spec.minRanksPerNode = spec.maxRanksPerNode = t.nvlDomainGpus ? t.nvlDomainGpus : t.gpusPerNode;
    spec.constants = &constants_;
    auto c = lib_->init(spec);
    if (!c) return makeError("plugin init with " + profilePath_ + ": " + c.error());
    comm = std::move(c.value());
  }
  const harness::Choice ch = comm->decide(int(coll), bytes, table);
  if (ch.algo < 0) return sim::Config{Algo::Default, Proto::Default, 0, 0};
  size_t chunk = 0;  // stays 0 (NCCL's chunk) when the plugin has no getChunkSize or no opinion
  if (comm->hasChunkSize()) comm->getChunkSize(int(coll), bytes, ch.algo, ch.proto, ch.nChannels, &chunk);
  return sim::Config{Algo(ch.algo), Proto(ch.proto), ch.nChannels, chunk};
}


Expected<std::shared_ptr<harness::TunerLibrary>> openPlugin(const std::string& pluginPath) {
  auto lib = harness::TunerLibrary::open(pluginPath);
  if (!lib) return makeError("cannot open the plugin " + pluginPath + ": " + lib.error());
  return lib.value();
}

Expected<JudgedProfiles> judgeOnData(const std::string& csvPath, const std::vector<ProfileToJudge>& profiles,
                                    const std::vector<Collective>& collectives, const std::string& pluginPath,
                                    const std::string& trust, int nRanks) {
  auto loaded = measurements::loadMeasurements(csvPath);
  if (!loaded) return makeError(loaded.error());
  auto data = measurements::buildReplayData(loaded->rows);
  if (!data) return makeError(data.error());
  if (nRanks > 0)
    std::erase_if(data->points, [&](const measurements::ReplayPoint& p) { return p.shape->nRanks != nRanks; });
  if (data->points.empty()) return makeError(csvPath + ": no measured shape with a known topology");
  // One process-wide host fingerprint: the first shape's machine stands in for all.
  const EnvVars env = clusterEnv(data->points.front().shape->topology, trust);
  auto lib = openPlugin(pluginPath);
  if (!lib) return makeError(lib.error());
  JudgedProfiles r;
  r.judge = "measurements of " + csvPath;
  r.trust = trust == kReplayTrust ? kTrustNote
                                  : "DYNAMICCL_TRUST=" + trust + ": only rules verified on this hardware applied";
  for (const ProfileToJudge& prof : profiles) {
    PluginDecider plugin(lib.value(), prof.path);
    std::string error;
    ProfileScore ps{prof.label, {}};
    for (Collective coll : collectives) {
      measurements::ReplayData sub;  // the collective's points; shapes stay owned by `data`
      for (const measurements::ReplayPoint& p : data->points)
        if (p.coll == coll) sub.points.push_back(p);
      const sim::DecisionFn decide = [&](const measurements::ReplayPoint& p, const model::CostTable& table) {
        sim::Config c = p.ncclDefault;
        if (!prof.path.empty()) {
          auto d = plugin.decide(p.shape->topology, coll, p.bytes, table);
          if (!d) error = d.error();
          else if (d->algo != Algo::Default) c = d.value();
        }
        // The row for the CSVs, judged as sim::replay judges it.
        const bool isDefault = p.isDefaultConfig(c);
        const auto forced = p.forced_us.find(p.judgedAs(c));
        const double chosen = isDefault && p.default_us > 0 ? p.default_us : forced != p.forced_us.end() ? forced->second : -1;
        if (chosen > 0 && p.default_us > 0)
          r.points.push_back({prof.label, coll, p.bytes, decisionLabel(c), chosen, p.default_us, p.best_us(), c,
                              p.shape->nRanks});
        return c;
      };
      const sim::ReplaySummary s = sim::replay(sub, decide, false);
      if (!error.empty()) return makeError(error);
      r.unjudged += static_cast<int>(s.unjudged.size());
      ps.perCollective.push_back({coll, s.judged, s.geomeanVsBest, s.worstVsBest, s.geomeanVsDefault, s.worstVsDefault});
    }
    r.scores.push_back(ps);
  }
  return r;
}

}  // namespace dynamiccl::cli::demo
