#include "plugin/metrics/comm_metrics.h"

#include <mutex>

#include "plugin/online_comm.h"

namespace dynamiccl::plugin {

CommMetrics snapshotMetrics(const CommShape& shape, const DecisionLog& decisions, std::string_view library,
                            OnlineComm* online) {
  CommMetrics m;
  m.commId = shape.commId;
  m.nRanks = shape.nRanks;
  m.nNodes = shape.nNodes;
  m.library = std::string(library);
  m.rank = decisions.rank();
  for (int c = 0; c < kNumCollectives; ++c) {
    m.calls[c] = decisions.callsSoFar(c);
  }
  m.profiledHonoured = decisions.profiled(DecisionLog::Ran::Honoured);
  m.profiledNotHonoured = decisions.profiled(DecisionLog::Ran::NotHonoured);
  m.profiledNcclChoice = decisions.profiled(DecisionLog::Ran::NcclChoice);
  if (!online) return m;
  OnlineComm& c = *online;
  m.online = true;
  m.foreignRecords = c.foreignRecords->load(std::memory_order_relaxed);
  m.otherRecords = c.otherRecords.load(std::memory_order_relaxed);
  m.leader = c.isLeader.load(std::memory_order_relaxed);
  std::lock_guard lock(c.mutex);  // tables and records a version may point to are freed only under it
  if (const learner::OnlineTable* t = c.current.load(std::memory_order_acquire)) m.version = t->version();
  const StagedRecord* staged = c.staged.load(std::memory_order_acquire);  // freed only under this mutex
  m.frozen = (staged && staged->frozen) || c.keptAt.load(std::memory_order_relaxed) != 0;
  if (!m.leader || !c.learner) return m;
  const learner::MeasurementPlan& plan = c.learner->measurementPlan();
  m.measuredCalls = c.learner->counters().observations;
  m.measureShare = plan.rate;
  m.measureCostShare = plan.costShare;
  m.exploreCostShare = plan.exploreShare;
  m.gainShare = plan.gainShare;
  m.collectiveTime_us = plan.time_us;
  m.keys = plan.keys;
  m.searchingKeys = plan.searchingKeys;
  return m;
}

}  // namespace dynamiccl::plugin
