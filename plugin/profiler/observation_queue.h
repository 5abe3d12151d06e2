// Bounded lock-free queue (Dmitry Vyukov's MPMC ring): producers on NCCL's threads never block or
// allocate; a full queue is reported to the caller, who counts the drop. Used MPSC: NCCL's threads
// produce observations, the one worker thread consumes them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace dynamiccl::plugin {

template <typename T>
class BoundedQueue {
 public:
  // capacity is rounded up to a power of two (at least 2); allocation happens here only.
  explicit BoundedQueue(size_t capacity) {
    size_t c = 2;
    while (c < capacity) c <<= 1;
    mask_ = c - 1;
    cells_ = std::make_unique<Cell[]>(c);
    for (size_t i = 0; i < c; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // False when full: the caller drops and counts. Never spins on a slow consumer.
  bool tryPush(const T& value) {
    size_t pos = enqueuePos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const size_t seq = cell.sequence.load(std::memory_order_acquire);
      const intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueuePos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = enqueuePos_.load(std::memory_order_relaxed);
      }
    }
  }

  bool tryPop(T& out) {
    size_t pos = dequeuePos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const size_t seq = cell.sequence.load(std::memory_order_acquire);
      const intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeuePos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          out = cell.value;
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = dequeuePos_.load(std::memory_order_relaxed);
      }
    }
  }

 private:
  struct Cell {
    std::atomic<size_t> sequence{0};
    T value{};
  };
  static constexpr size_t kLine = 64;  // keep producer and consumer indices on separate cache lines
  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  alignas(kLine) std::atomic<size_t> enqueuePos_{0};
  alignas(kLine) std::atomic<size_t> dequeuePos_{0};
};

}  // namespace dynamiccl::plugin
