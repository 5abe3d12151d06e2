#include "plugin/context_registry.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "plugin/tuner/tuner_context.h"

namespace dynamiccl::plugin {
namespace {
std::mutex gMutex;
std::vector<TunerContext*>& contexts() {
  static auto* v = new std::vector<TunerContext*>();  // never destroyed: NCCL may finalize after exit handlers
  return *v;
}
}  // namespace

void registerContext(TunerContext* context) {
  std::lock_guard lock(gMutex);
  contexts().push_back(context);
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
