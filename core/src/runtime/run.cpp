// runtime/run.cpp - device names and running a schedule item by item.
#include <chrono>
#include <cstring>

#include "runtime/buffer.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/reference.hpp"
#include "runtime/runtime.hpp"
#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln::runtime {

namespace {

bool host_memory(const std::string& d) { return d == kHostDevice || d == kRefDevice; }

void run_copy(const ExecItem& e) {
  const UOp &dst = e.buffers[0], &src = e.buffers[1];
  uint64_t n = buffer_bytes(src);
  KILN_CHECK(buffer_bytes(dst) == n, "copy between buffers of different sizes");
  auto ds = storage_of(dst), ss = storage_of(src);
  if (host_memory(ds->device()) && host_memory(ss->device())) {
    if (n) std::memcpy(ds->host_ptr(), ss->host_ptr(), n);
    return;
  }
  copy_between_devices(*ds, *ss, n);
}

void run_reference(const ExecItem& e) {
  std::vector<HostBuffer> bufs;
  for (const UOp& b : e.buffers) bufs.push_back({storage_of(b)->host_ptr(), buffer_bytes(b)});
  run_reference_kernel(e.ast, bufs, e.var_vals);
}

}  // namespace

void run_schedule(const std::vector<ExecItem>& items) {
  prepare_kernels(items);  // compile what is new, in parallel, before running anything
  for (const ExecItem& e : items) {
    auto t0 = std::chrono::steady_clock::now();
    if (e.is_copy) run_copy(e);
    else if (e.device == kRefDevice) run_reference(e);
    else run_device_kernel(e);
    if (debug_level() >= 2 && (e.is_copy || e.device == kRefDevice)) {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      log_line(cat(e.device, "  ", e.name, "  ", ms, " ms"));
    }
  }
}

}  // namespace kiln::runtime
