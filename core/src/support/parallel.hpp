// support/parallel.hpp - f(0..n-1) on the machine's cores (codegen and compiles of many kernels).
#pragma once
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

// Runs f(0..n-1) on up to `hardware_concurrency` threads (the caller's among them); the first
// exception is rethrown after every call has finished.
template <typename F>
void parallel_for(size_t n, F&& f) {
  unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(n)));
  std::atomic<size_t> next{0};
  std::exception_ptr first_error;
  std::mutex err_mu;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace kiln
