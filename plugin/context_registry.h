// Every live tuner context of the process, so other roles (the profiler) can find a communicator's
// context by commId. Touched at init/finalize only, never on the hot path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace dynamiccl::plugin {

struct TunerContext;
struct ProfilerContext;

// Each also links a profiler context to the decision log of a tuner context of the same commId,
// whichever of the two inits comes second (NCCL starts the profiler's first).
void registerContext(TunerContext* context);
void unregisterContext(TunerContext* context);
void registerProfilerContext(ProfilerContext* context);
void unregisterProfilerContext(ProfilerContext* context);  // safe for one never registered
size_t liveContextCount();
// Calls fn for each live context with this commId (several ranks of one process share a commId).
void forEachContextWithCommId(uint64_t commId, const std::function<void(TunerContext&)>& fn);

}  // namespace dynamiccl::plugin
