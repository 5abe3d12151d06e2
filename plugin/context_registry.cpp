#include "plugin/context_registry.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "plugin/profiler/profiler_api.h"
#include "plugin/tuner/tuner_context.h"

namespace dynamiccl::plugin {
namespace {
std::mutex gMutex;
std::vector<TunerContext*>& contexts() {
  static auto* v = new std::vector<TunerContext*>();  // never destroyed: NCCL may finalize after exit handlers
  return *v;
}
std::vector<ProfilerContext*>& profilerContexts() {
  static auto* v = new std::vector<ProfilerContext*>();
  return *v;
}
// Under gMutex. Every tuner context of one commId decides alike with the same call numbering: any will do.
void link(ProfilerContext& p, const TunerContext& t) {
  if (p.decisionsHeld) return;
  p.decisionsHeld = t.decisions;
  p.decisions.store(p.decisionsHeld.get(), std::memory_order_release);
}
}  // namespace

void registerContext(TunerContext* context) {
  std::lock_guard lock(gMutex);
  contexts().push_back(context);
  if (context->shape.commId == 0) return;
  for (ProfilerContext* p : profilerContexts())
    if (p->commId == context->shape.commId) link(*p, *context);
}

void registerProfilerContext(ProfilerContext* context) {
  std::lock_guard lock(gMutex);
  profilerContexts().push_back(context);
  for (TunerContext* t : contexts())
    if (t->shape.commId == context->commId) return link(*context, *t);
}

void unregisterProfilerContext(ProfilerContext* context) {
  std::lock_guard lock(gMutex);
  auto& v = profilerContexts();
  v.erase(std::remove(v.begin(), v.end(), context), v.end());
}

void unregisterContext(TunerContext* context) {
  std::lock_guard lock(gMutex);
  auto& v = contexts();
  v.erase(std::remove(v.begin(), v.end(), context), v.end());
}

size_t liveContextCount() {
  std::lock_guard lock(gMutex);
  return contexts().size();
}

void forEachContextWithCommId(uint64_t commId, const std::function<void(TunerContext&)>& fn) {
  std::lock_guard lock(gMutex);
  for (TunerContext* c : contexts())
    if (c->shape.commId == commId) fn(*c);
}

}  // namespace dynamiccl::plugin
