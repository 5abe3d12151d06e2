// A profile's decisions, made by the real plugin for every measured point of a dataset (NCCL's
// cost table from our model, the cheapest entry after the plugin's edits runs), judged on the
// measured times by sim's replay.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "offline/harness/harness.h"
#include "offline/jobreplay/jobreplay.h"

namespace dynamiccl::jobreplay {
namespace {

// The NCCL release the plugin is loaded as: the plan's, else the one every measured row names.
int ncclVersionOf(const ProfileJudgingPlan& plan, const std::vector<measurements::Measurement>& rows) {
  if (!plan.ncclVersion.empty())
    if (auto v = abi::parseNcclVersion(plan.ncclVersion)) return *v;
  std::set<int> named;
  for (const measurements::Measurement& m : rows)
    if (m.ncclVersion > 0) named.insert(m.ncclVersion);
  return named.size() == 1 ? *named.begin() : 22809;
}

// The plugin probes its host once per process; DYNAMICCL_TOPO makes that probe see the hardware
// the data was measured on, as it would in a job there (a rule measured on it is then verified).
// Set only when every judged shape shares one hardware; ranks per node only where they share that too.
std::vector<std::string> datasetHardwareEnv(const measurements::ReplayData& data) {
  std::set<std::string> facts;
  std::set<int> perNode;
  TopoOverrides shared;
  for (const auto& shape : data.shapes) {
    shared = model::topoOverridesOf(shape->topology);
    perNode.insert(*shared.ranksPerNode);
    shared.ranksPerNode.reset();
    facts.insert(topoOverridesText(shared));
  }
  if (facts.size() != 1) return {};
  if (perNode.size() == 1) shared.ranksPerNode = *perNode.begin();
  return {std::string(kTopoVariable) + "=" + topoOverridesText(shared)};
}

}  // namespace

Expected<ProfileJudgement> judgeProfile(const ProfileJudgingPlan& plan) {
  auto loaded = measurements::loadMeasurements(plan.data);
  if (!loaded) return makeError(loaded.error());
  // The plugin keeps NCCL's default for a profile it cannot read; a replay of that would judge nothing asked.
  if (auto p = policy::loadProfileFile(plan.profile); !p) return makeError("--profile " + plan.profile + ": " + p.error());
  auto data = measurements::buildReplayData(loaded->rows, plan.system);
  if (!data) return makeError(data.error());
  ProfileJudgement out;
  out.data = std::make_shared<const measurements::ReplayData>(std::move(data.value()));
  // The plugin re-reads DYNAMICCL_PROFILE when it changes; set it before the first init.
  harness::ScopedEnv env("DYNAMICCL_PROFILE", plan.profile.c_str());
  // Unverified rules (simulated, learned, another fingerprint) reach NCCL only when opted in, as in a job.
  harness::ScopedEnv trust("DYNAMICCL_TRUST", plan.trust.c_str());
  if (plan.asMeasured) out.hardwareEnv = datasetHardwareEnv(*out.data);
  // Rows measured on RCCL are judged under RCCL's rules, as the plugin would run there.
  out.rcclHost = !out.data->shapes.empty() &&
                 std::all_of(out.data->shapes.begin(), out.data->shapes.end(),
                             [](const auto& s) { return measurements::measuredOnRccl(s->system); });
  if (out.rcclHost) out.hardwareEnv.push_back("DYNAMICCL_HOST=rccl");
  std::vector<std::unique_ptr<harness::ScopedEnv>> hwVars;
  for (const std::string& kv : out.hardwareEnv) {
    const size_t eq = kv.find('=');
    hwVars.push_back(std::make_unique<harness::ScopedEnv>(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str()));
  }
  auto lib = harness::TunerLibrary::open(plan.pluginPath, harness::asRelease(ncclVersionOf(plan, loaded->rows)));
  if (!lib) return makeError(lib.error());
  out.pluginPath = lib.value()->path();
  out.tunerVersion = lib.value()->version();
  const abi::PickRule rule = lib.value()->pickRule();
  ncclTunerConstants_v5_t constants = model::defaultTunerConstants();
  std::map<const measurements::Shape*, std::unique_ptr<harness::TunerComm>> comms;
  std::string initError;
  const sim::DecisionFn decide = [&](const measurements::ReplayPoint& p, const model::CostTable& table) {
    auto& comm = comms[p.shape];
    if (!comm) {
      harness::CommSpec spec;
      spec.nRanks = p.shape->nRanks;
      spec.nNodes = p.shape->nNodes;
      spec.constants = &constants;
      auto c = lib.value()->init(spec);
      if (!c) {
        initError = c.error();
        return sim::Config{Algo::Default, Proto::Default, 0, 0};
      }
      comm = std::move(c.value());
    }
    // As NCCL: the tuner edits a copy of the cost table, then the cheapest entry runs.
    harness::CostTable edited = table;
    int nChannels = 0;
    comm->getCollInfo(int(p.coll), p.bytes, 1, 0, edited, &nChannels);
    bool zero = false;
    for (const auto& row : edited)
      for (float x : row) zero = zero || x == 0.0f;
    if (zero) out.forced.insert(&p);
    const harness::Choice ch = harness::selectLikeNccl(edited, rule, &table);
    return sim::Config{Algo(ch.algo), Proto(ch.proto), nChannels, 0};
  };
  out.summary = sim::replay(*out.data, decide, true, [&](const measurements::ReplayPoint& p) { return out.forced.count(&p) > 0; });
  if (!initError.empty()) return makeError("plugin init failed: " + initError);
  return out;
}

}  // namespace dynamiccl::jobreplay
