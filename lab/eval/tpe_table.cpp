#include "lab/eval/tpe_table.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "offline/files/files.h"
#include "offline/sim/sim.h"
#include "offline/tune/tune.h"
#include "learned/learned.h"

namespace dynamiccl::eval {

Expected<policy::DecisionTable> tpeTable(const train::SimSystem& sys, int budget) {
  const std::string paramsPath =
      (std::filesystem::temp_directory_path() / ("dynamiccl-policy-eval-" + std::to_string(::getpid()) + ".json")).string();
  if (auto s = files::writeFile(paramsPath, sim::paramsToJson(sys.simulator().params())); !s)
    return makeError(s.error());
  auto backend = tune::makeSimulatorBackend({train::simPresetOf(sys.topology()), sys.topology().nNodes, 7, paramsPath});
  std::filesystem::remove(paramsPath);
  if (!backend) return makeError(backend.error());
  tune::TuneRequest req;
  req.collectives = {Collective::Broadcast, Collective::Reduce, Collective::AllGather, Collective::ReduceScatter,
                     Collective::AllReduce};
  for (int b = train::kEvalMinBucket; b <= train::kEvalMaxBucket; ++b) req.sizes.push_back(learned::policyProbeBytes(b));
  req.search.budgetIterations = budget;
  auto result = tune::tune(**backend, req);
  if (!result) return makeError(result.error());
  std::vector<tune::TunedInterval> all;
  for (const tune::CollectiveResult& cr : result->collectives) {
    const auto iv = tune::smoothDecisions(cr.keys, tune::SmoothingOptions{});
    all.insert(all.end(), iv.begin(), iv.end());
  }
  const policy::Profile profile = tune::toProfile(all, "tpe " + sys.topology().name, result->nRanks, result->nNodes);
  return policy::DecisionTable::compile(profile, CommShape{.commId = 0, .nRanks = result->nRanks, .nNodes = result->nNodes});
}

}  // namespace dynamiccl::eval
