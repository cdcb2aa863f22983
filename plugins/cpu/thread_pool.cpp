// plugins/cpu/thread_pool.cpp - spin-then-futex workers.
#include "thread_pool.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_CPU_PAUSE() _mm_pause()
#else
#define KILN_CPU_PAUSE() ((void)0)
#endif

namespace kiln::cpu {
namespace {

// How long an idle thread spins before it sleeps: long enough to cover the gap between two
// launches issued back to back, short enough not to burn a core when the host is idle.
constexpr auto kSpin = std::chrono::microseconds(50);

// std::atomic::wait/notify would do, but a raw futex lets us skip the wake syscall reliably
// when nobody sleeps (tracked by sleepers_/caller_sleeping_).
void futex_wait(std::atomic<uint32_t>& a, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>& a) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// Spins until pred() or the spin budget is used up; returns pred().
template <typename Pred>
bool spin_until(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (pred()) return true;
      KILN_CPU_PAUSE();
    }
    if (std::chrono::steady_clock::now() > deadline) return pred();
  }
}

}  // namespace

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex needs a plain 32-bit word");

ThreadPool::ThreadPool(unsigned threads) : threads_(std::max(1u, threads)) {}

ThreadPool::~ThreadPool() {
  if (workers_.empty()) return;
  stop_ = true;
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(generation_);
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work() {
  for (;;) {
    uint64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= total_) return;
    body_(ctx_, begin, std::min(begin + chunk_, total_));
  }
}

void ThreadPool::worker() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    if (g == seen && !spin_until([&] { return (g = generation_.load(std::memory_order_acquire)) != seen; })) {
      // seq_cst pairs with run(): either we see the new generation or run() sees us sleeping.
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while ((g = generation_.load(std::memory_order_seq_cst)) == seen) futex_wait(generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = g;
    if (stop_) return;
    work();
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeping_.load(std::memory_order_seq_cst))
      futex_wake(pending_);
  }
}

void ThreadPool::run(uint64_t total, Body body, const void* ctx) {
  std::lock_guard<std::mutex> lock(run_mu_);
  unsigned helpers = static_cast<unsigned>(std::min<uint64_t>(threads_, total)) - 1;
  if (helpers == 0) {  // not worth waking anyone
    body(ctx, 0, total);
    return;
  }
  if (workers_.empty())
    for (unsigned i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker(); });
  uint32_t n_workers = static_cast<uint32_t>(workers_.size());
  total_ = total;
  // Several chunks per thread balance uneven work items; at least one item per chunk.
  chunk_ = std::max<uint64_t>(1, total / (uint64_t{threads_} * 4));
  body_ = body;
  ctx_ = ctx;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(n_workers, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst)) futex_wake(generation_);
  work();
  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    caller_sleeping_.store(1, std::memory_order_seq_cst);
    for (uint32_t p; (p = pending_.load(std::memory_order_seq_cst)) != 0;) futex_wait(pending_, p);
    caller_sleeping_.store(0, std::memory_order_relaxed);
  }
}

}  // namespace kiln::cpu
