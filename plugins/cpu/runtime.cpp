// plugins/cpu/runtime.cpp - resolving kernels and running their work items.
#include "runtime.hpp"

#include <time.h>

#include <cstring>
#include <vector>

#include "allocator.hpp"

namespace kiln::cpu {
namespace {

struct Grid {
  KernelFn fn;
  void* const* bufs;
  const int64_t* vals;
  uint64_t g0, g1;
};

void run_items(const void* ctx, uint64_t begin, uint64_t end) {
  const Grid& g = *static_cast<const Grid*>(ctx);
  uint64_t x = begin % g.g0, rest = begin / g.g0, y = rest % g.g1, z = rest / g.g1;
  for (uint64_t i = begin; i < end; ++i) {
    g.fn(g.bufs, g.vals, static_cast<int32_t>(x), static_cast<int32_t>(y), static_cast<int32_t>(z));
    if (++x == g.g0) {
      x = 0;
      if (++y == g.g1) y = 0, ++z;
    }
  }
}

double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

[[noreturn]] void invalid(const std::string& what) { throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, what}; }

}  // namespace

std::unique_ptr<CpuProgram> load_program(std::string_view binary, std::string_view entry) {
  auto p = std::make_unique<CpuProgram>();
  p->entry = std::string(entry);
  p->image = load_image(binary);
  p->fn = reinterpret_cast<KernelFn>(p->image->symbol(entry));
  if (!p->fn) invalid("the kernel binary does not define the entry function '" + p->entry + "'");
  if (const void* sig = p->image->symbol("kiln_nargs_" + p->entry)) {
    uint32_t counts[2];
    std::memcpy(counts, sig, sizeof counts);
    p->n_buffers = counts[0];
    p->n_values = counts[1];
  }
  return p;
}

double launch_program(ThreadPool& pool, CpuProgram& p, const sdk::Launch& l) {
  if (l.local[0] != 1 || l.local[1] != 1 || l.local[2] != 1)
    invalid("kernel '" + p.entry + "': the cpu backend has no workgroups, local sizes must be 1,1,1 (got " +
            std::to_string(l.local[0]) + "," + std::to_string(l.local[1]) + "," + std::to_string(l.local[2]) + ")");
  if (p.n_buffers >= 0 && l.buffers.size() != static_cast<uint64_t>(p.n_buffers))
    invalid("kernel '" + p.entry + "' takes " + std::to_string(p.n_buffers) + " buffers, the launch passed " +
            std::to_string(l.buffers.size()));
  if (p.n_values >= 0 && l.values.size() != static_cast<uint64_t>(p.n_values))
    invalid("kernel '" + p.entry + "' takes " + std::to_string(p.n_values) + " values, the launch passed " +
            std::to_string(l.values.size()));
  for (uint32_t g : l.global)
    if (g > 0x7fffffffu) invalid("kernel '" + p.entry + "': a global size exceeds the int32 work-item index range");

  // Base pointers on the stack for the usual case; kernels with more buffers are rare.
  void* stack_ptrs[32];
  std::vector<void*> heap_ptrs;
  void** ptrs = stack_ptrs;
  if (l.buffers.size() > 32) {
    heap_ptrs.resize(l.buffers.size());
    ptrs = heap_ptrs.data();
  }
  for (size_t i = 0; i < l.buffers.size(); ++i) {
    if (!l.buffers[i]) invalid("kernel '" + p.entry + "': buffer " + std::to_string(i) + " is NULL");
    const CpuBuffer& b = static_cast<const CpuBuffer&>(*l.buffers[i]);
    uint64_t off = l.offset(i);
    if (off > b.size)
      throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "kernel '" + p.entry + "': offset " + std::to_string(off) +
                                                     " of buffer " + std::to_string(i) + " is past its " +
                                                     std::to_string(b.size) + " bytes"};
    ptrs[i] = b.data + off;
  }
  uint64_t total = uint64_t{l.global[0]} * l.global[1] * l.global[2];
  double start = l.wait ? now() : 0;
  if (total == 1) {
    p.fn(ptrs, l.values.data(), 0, 0, 0);
  } else if (total > 1) {
    Grid grid{p.fn, ptrs, l.values.data(), l.global[0], l.global[1]};
    pool.run(total, &run_items, &grid);
  }
  return l.wait ? now() - start : 0;
}

}  // namespace kiln::cpu
