#include "plugin/online/online_start.h"

#include <atomic>

#include "plugin/log.h"
#include "plugin/online/epoch_agent.h"
#include "plugin/online/online_backend.h"

namespace dynamiccl::plugin {
namespace {
std::atomic<bool> gWarnedNoBackend{false};
std::atomic<bool> gLoggedOnline{false};
std::atomic<bool> gWarnedNoProfiler{false};
}  // namespace

std::shared_ptr<OnlineComm> startOnline(const CommShape& shape, const policy::DecisionTable& staticTable,
                                        const Settings& settings) {
  if (settings.online == OnlineSwitch::Off || staticTable.empty()) return nullptr;  // no profile: nothing changes
  // Opt-in: learning changes a job's decisions.
  if (settings.online != OnlineSwitch::On) return nullptr;
  // Without the profiler role no rank measures, no leader ever publishes, and every rank would wait
  // out DYNAMICCL_EPOCH_TIMEOUT_MS inside getCollInfo at the first boundary: refuse instead.
  if (!settings.profilerIsUs) {
    if (firstTime(gWarnedNoProfiler))
      logWarn("DYNAMICCL_ONLINE=1 refused: NCCL_PROFILER_PLUGIN does not name this library, so no rank can "
              "measure; static profile only");
    return nullptr;
  }
  auto backend = openOnlineBackend(settings, shape);
  if (!backend.ok()) {
    if (firstTime(gWarnedNoBackend))
      logWarn("online updates off (%s); static profile only", backend.error().c_str());
    return nullptr;
  }
  policy::OnlineConfig config;
  config.epochCalls = settings.epochCalls;
  config.exploreTimeShare = settings.exploreBudget;
  auto c = std::make_shared<OnlineComm>();
  c->commId = shape.commId;
  c->epochCalls = config.epochCalls;
  c->boundaryTimeout_ms = settings.epochTimeout_ms;
  c->store = std::move(backend.value());
  c->learner = std::make_unique<policy::OnlineLearner>(config, [table = staticTable](int coll, int bucket) {
    return table.lookup(coll, SizeBucket::lowest(bucket), 1, 0);
  });
  if (firstTime(gLoggedOnline))
    logInfo("online updates on: epoch %llu calls, exploration budget %.3f of time, backend %s",
            static_cast<unsigned long long>(c->epochCalls), config.exploreTimeShare, c->store->describe().c_str());
  addToEpochAgent(c);
  return c;
}

void stopOnline(const std::shared_ptr<OnlineComm>& comm) {
  if (comm) removeFromEpochAgent(comm);
}

}  // namespace dynamiccl::plugin
