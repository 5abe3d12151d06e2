// Staging a boundary's record for the hot path, and freeing the records no reader can still hold.
#include <algorithm>
#include <mutex>
#include <vector>

#include "plugin/online/epoch_agent.h"
#include "learner/learner.h"

namespace dynamiccl::plugin {
namespace {

// Records and tables 3+ boundaries older than the newest are past use, except the one in force.
void reclaim(OnlineComm& c, uint64_t newest) {
  auto& recs = c.records;
  const learner::OnlineTable* current = c.current.load();
  const uint64_t horizon = newest > 3 * c.epochCalls ? newest - 3 * c.epochCalls : 0;
  std::vector<const learner::OnlineTable*> dropped;
  std::erase_if(recs, [&](const std::unique_ptr<StagedRecord>& r) {
    if (r->boundary >= horizon || r->table == current) return false;
    if (r->table) dropped.push_back(r->table);
    return true;
  });
  std::erase_if(c.tables, [&](const std::unique_ptr<learner::OnlineTable>& t) {
    return std::find(dropped.begin(), dropped.end(), t.get()) != dropped.end();
  });
}

}  // namespace

const StagedRecord* stageRecord(OnlineComm& c, uint64_t boundary, const std::string& bytes) {
  auto rec = std::make_unique<StagedRecord>();
  rec->boundary = boundary;
  if (bytes == coord::kFrozenRecord) {
    rec->frozen = true;
  } else if (auto t = learner::OnlineTable::deserialize(bytes); t.ok()) {
    rec->table = t->get();
    std::lock_guard lock(c.mutex);
    c.tables.push_back(std::move(t.value()));
  } else {
    rec->frozen = true;  // unreadable for every rank alike: freeze
  }
  const StagedRecord* raw = rec.get();
  {
    // Publish before reclaiming, under the mutex tick() reads under: no reader can still hold a
    // record reclaim frees (found by TSan: a use-after-free when the agent lagged 3 epochs).
    std::lock_guard lock(c.mutex);
    c.records.push_back(std::move(rec));
    c.staged.store(raw, std::memory_order_release);
    reclaim(c, boundary);
  }
  return raw;
}

}  // namespace dynamiccl::plugin
