// support/spin_lock.hpp - a test-and-test-and-set lock for critical sections of a few loads.
//
// The intern table's shards are locked on every node creation and hold the lock for a handful of
// probes; an uncontended std::mutex costs a library call each way, this costs one exchange and one
// store. A waiter spins politely, then yields in case the holder was descheduled (or is growing
// its table).
#pragma once
#include <atomic>
#include <thread>

namespace kiln {

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64) pause();
        else std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace kiln
