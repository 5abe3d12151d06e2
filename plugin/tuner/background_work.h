// Work a communicator's init starts off NCCL's init path: a big profile's parse, and the ranks'
// input check with the preparation it gates. Each thread holds the library (dlopen of itself) until
// a later init or finalize joins it, so NCCL's dlclose after its last communicator never unmaps code
// a thread still runs; at exit the threads still running are detached, to end with the process.
#pragma once

#include <functional>

namespace dynamiccl::plugin {

// On a thread of its own (a parse: one per distinct profile file). Throws std::system_error when no
// thread can be had.
void runInBackground(std::function<void()> work);

// In a pool of at most kInputCheckThreads, whatever the number of communicators, in the order given
// (a pool thread, once made, waits for work for the process's life, holding the library):
// communicators are created in the same order on every rank, so the pool keeps no rank from a check
// the others wait in, as long as one process's ranks of one communicator (NCCL's single-process mode:
// a thread per GPU) all fit in it; more, and that check times out with NCCL's choices on every rank.
// Where no thread can be had, the queue is run in the caller's.
inline constexpr int kInputCheckThreads = 64;
void runInCheckPool(std::function<void()> work);

// Joins the threads whose work is done (init and finalize; never the hot path).
void reapBackgroundWork();

}  // namespace dynamiccl::plugin
