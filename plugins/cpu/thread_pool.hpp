// plugins/cpu/thread_pool.hpp - the workers that run a kernel's work items in parallel.
//
// run() splits [0, total) into chunks that the calling thread and threads-1 workers claim from an
// atomic counter, and returns when every chunk is done. Between runs workers spin for a short
// while (back-to-back launches then start in well under a microsecond) and then sleep on a futex;
// waking costs a syscall only when someone sleeps. Workers start on the first run, so opening a
// device (`kiln list`) creates no threads. One run at a time: concurrent callers are serialised.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::cpu {

class ThreadPool {
 public:
  using Body = void (*)(const void* ctx, uint64_t begin, uint64_t end);

  explicit ThreadPool(unsigned threads);  // total threads including the caller; >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned threads() const { return threads_; }
  void run(uint64_t total, Body body, const void* ctx);

 private:
  void worker();
  void work();

  const unsigned threads_;
  std::mutex run_mu_;
  std::vector<std::thread> workers_;
  // The job; written by run() before `generation_` is bumped, read by workers after they see it.
  uint64_t total_ = 0, chunk_ = 1;
  Body body_ = nullptr;
  const void* ctx_ = nullptr;
  bool stop_ = false;
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<uint64_t> next_{0};
  alignas(64) std::atomic<uint32_t> pending_{0};  // workers not yet done with the current job
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint32_t> caller_sleeping_{0};
};

}  // namespace kiln::cpu
