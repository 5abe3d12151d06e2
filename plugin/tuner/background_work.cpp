#include "plugin/tuner/background_work.h"

#include <dlfcn.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace dynamiccl::plugin {
namespace {

// This library, loaded once more: a thread in flight holds it. nullptr if it cannot be had.
void* pinThisLibrary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&pinThisLibrary), &info) == 0 || !info.dli_fname) return nullptr;
  return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

class BackgroundThreads {
 public:
  // Made by the first use; never destroyed while a thread runs (NCCL may finalize after exit handlers).
  static BackgroundThreads* get() { return instance_.load(std::memory_order_acquire); }
  static BackgroundThreads& make() {
    std::lock_guard lock(makeMutex_);
    if (!get()) instance_.store(new BackgroundThreads(), std::memory_order_release);
    return *get();
  }
  void start(std::function<void()> work) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard lock(mutex_);
    running_.reserve(running_.size() + 1);  // the push below cannot throw once the thread runs
    void* pin = pinThisLibrary();
    std::thread t;
    try {
      t = std::thread([work = std::move(work), done] {
        try {
          work();
        } catch (...) {  // work says what failed; nothing escapes a thread (std::terminate)
        }
        done->store(true, std::memory_order_release);
      });
    } catch (...) {
      if (pin) dlclose(pin);
      throw;
    }
    running_.push_back({std::move(t), std::move(done), pin});
  }
  void enqueue(std::function<void()> work) {
    {
      std::lock_guard lock(queueMutex_);
      queue_.push_back(std::move(work));
      if (poolThreads_ >= kInputCheckThreads) return;  // a running pool thread takes it
      ++poolThreads_;
    }
    try {
      start([this] { drainQueue(); });
    } catch (...) {  // no thread to be had: the queue is run here, as work was before it had threads
      drainQueue();
    }
  }
  // Joins the threads whose work is done (each has only its return left) and lets go of the library
  // they held. exiting: the others are detached, to end with the process rather than hold its exit.
  void reap(bool exiting = false) {
    std::vector<Running> finished;
    {
      std::lock_guard lock(mutex_);
      for (size_t i = running_.size(); i-- > 0;) {
        if (running_[i].done->load(std::memory_order_acquire)) {
          finished.push_back(std::move(running_[i]));
        } else if (exiting) {
          running_[i].thread.detach();
        } else {
          continue;
        }
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    for (Running& r : finished) {
      r.thread.join();
      // NCCL holds the library too while it calls us: never the last reference. At exit it is kept.
      if (r.pin && !exiting) dlclose(r.pin);
    }
  }

 private:
  void drainQueue() {
    for (;;) {
      std::function<void()> work;
      {
        std::lock_guard lock(queueMutex_);
        if (queue_.empty()) {
          --poolThreads_;
          return;
        }
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        work();
      } catch (...) {  // work says what failed; the next still runs
      }
    }
  }
  struct Running {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
    void* pin = nullptr;
  };
  static inline std::atomic<BackgroundThreads*> instance_{nullptr};
  static inline std::mutex makeMutex_;
  std::mutex mutex_;
  std::vector<Running> running_;
  std::mutex queueMutex_;
  std::deque<std::function<void()>> queue_;
  int poolThreads_ = 0;
};

// At exit, or when the library is unloaded (then no thread runs: each holds it).
struct ExitReaper {
  ~ExitReaper() {
    if (BackgroundThreads* p = BackgroundThreads::get()) p->reap(true);
  }
} gExitReaper;

}  // namespace

void runInBackground(std::function<void()> work) { BackgroundThreads::make().start(std::move(work)); }

void runInCheckPool(std::function<void()> work) { BackgroundThreads::make().enqueue(std::move(work)); }

void reapBackgroundWork() {
  if (BackgroundThreads* p = BackgroundThreads::get()) p->reap();
}

}  // namespace dynamiccl::plugin
