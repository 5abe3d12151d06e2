#include "plugin/context_registry.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace dynamiccl::plugin {
namespace {
std::mutex gMutex;
std::atomic<bool> gProfilerRoleStarted{false};
std::vector<TunerView*>& contexts() {
  static auto* v = new std::vector<TunerView*>();  // never destroyed: NCCL may finalize after exit handlers
  return *v;
}
std::vector<DecisionLink*>& profilerContexts() {
  static auto* v = new std::vector<DecisionLink*>();
  return *v;
}
// Under gMutex. Every tuner context of one commId decides alike with the same call numbering: any will do.
void link(DecisionLink& p, const TunerView& t) {
  if (p.decisionsHeld) return;
  p.decisionsHeld = t.decisions;
  if (p.rank == 0) p.decisionsHeld->setLeaderHere();
  if (p.rank >= 0 && p.decisionsHeld->rank() < 0) p.decisionsHeld->setRank(p.rank);
  p.decisions.store(p.decisionsHeld.get(), std::memory_order_release);
}
}  // namespace

void registerContext(TunerView* context) {
  std::lock_guard lock(gMutex);
  contexts().push_back(context);
  if (context->shape.commId == 0) return;
  for (DecisionLink* p : profilerContexts())
    if (p->commId == context->shape.commId) link(*p, *context);
}

void registerProfilerContext(DecisionLink* context) {
  std::lock_guard lock(gMutex);
  profilerContexts().push_back(context);
  for (TunerView* t : contexts())
    if (t->shape.commId == context->commId) return link(*context, *t);
}

void unregisterProfilerContext(DecisionLink* context) {
  std::lock_guard lock(gMutex);
  auto& v = profilerContexts();
  v.erase(std::remove(v.begin(), v.end(), context), v.end());
}

void unregisterContext(TunerView* context) {
  std::lock_guard lock(gMutex);
  auto& v = contexts();
  v.erase(std::remove(v.begin(), v.end(), context), v.end());
}

void forEachContextWithCommId(uint64_t commId, const std::function<void(const TunerView&)>& fn) {
  std::lock_guard lock(gMutex);
  for (TunerView* c : contexts())
    if (c->shape.commId == commId) fn(*c);
}

void noteProfilerRoleStarted() { gProfilerRoleStarted.store(true, std::memory_order_relaxed); }
bool profilerRoleStarted() { return gProfilerRoleStarted.load(std::memory_order_relaxed); }

}  // namespace dynamiccl::plugin
