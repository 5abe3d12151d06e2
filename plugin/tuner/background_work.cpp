#include "plugin/tuner/background_work.h"

#include <dlfcn.h>

#include <atomic>
#include <condition_variable>
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
    std::unique_lock lock(queueMutex_);
    queue_.push_back(std::move(work));
    // Every queued check has a thread of its own (up to the cap): one process's ranks of one
    // communicator wait for each other.
    const bool grow = queue_.size() + busy_ > poolThreads_ && poolThreads_ < static_cast<size_t>(kInputCheckThreads);
    if (grow) ++poolThreads_;
    lock.unlock();
    queueReady_.notify_one();
    if (!grow) return;
    try {
      start([this] { serveQueue(); });
    } catch (...) {  // no thread to be had: what is queued runs here, as work did before it had threads
      lock.lock();
      --poolThreads_;
      while (!queue_.empty() && poolThreads_ == 0) {
        std::function<void()> next = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        runQuietly(next);
        lock.lock();
      }
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
  static void runQuietly(const std::function<void()>& work) {
    try {
      work();
    } catch (...) {  // work says what failed; the next still runs
    }
  }
  // A pool thread serves the queue for the process's life (idle, it waits): a thread that ended
  // unjoined in a rank that exits without finalizing is a leak the sanitizers report.
  void serveQueue() {
    std::unique_lock lock(queueMutex_);
    for (;;) {
      queueReady_.wait(lock, [this] { return !queue_.empty(); });
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
      lock.unlock();
      runQuietly(work);
      lock.lock();
      --busy_;
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
  std::condition_variable queueReady_;
  std::deque<std::function<void()>> queue_;
  size_t poolThreads_ = 0, busy_ = 0;
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
