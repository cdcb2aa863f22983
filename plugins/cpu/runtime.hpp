// plugins/cpu/runtime.hpp - loaded kernels and launches.
//
// Kernel calling convention (what the C renderer emits and what tests hand-write):
//
//   void <entry>(void* const* bufs, const int64_t* vals, int32_t gidx0, int32_t gidx1, int32_t gidx2);
//
// bufs[i] is buffer i's base pointer plus its launch offset, vals the integer variables. A launch
// calls it once per work item (g0, g1, g2) over global[0] * global[1] * global[2] items (local
// sizes must be 1: the cpu has no workgroups); items are spread over the thread pool in chunks of
// consecutive linear index (g0 fastest), so one item should be a sizeable piece of work (a row, a
// tile). A single-item launch runs inline on the calling thread.
//
// Optional signature: a kernel may define
//   const unsigned int kiln_nargs_<entry>[2] = {<number of buffers>, <number of values>};
// and launches with other counts are then rejected with INVALID_ARGUMENT. Without it the counts
// cannot be checked.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "image.hpp"
#include "kiln/sdk.hpp"
#include "thread_pool.hpp"

namespace kiln::cpu {

using KernelFn = void (*)(void* const* bufs, const int64_t* vals, int32_t gidx0, int32_t gidx1, int32_t gidx2);

class CpuProgram final : public sdk::Program {
 public:
  std::unique_ptr<Image> image;
  KernelFn fn = nullptr;
  std::string entry;
  int64_t n_buffers = -1, n_values = -1;  // from kiln_nargs_<entry>; -1 = unknown
};

// Loads either binary format; throws INVALID_ARGUMENT when `entry` is not defined in it.
std::unique_ptr<CpuProgram> load_program(std::string_view binary, std::string_view entry);

// Returns the elapsed seconds when launch.wait (the launch is synchronous either way).
double launch_program(ThreadPool& pool, CpuProgram& program, const sdk::Launch& launch);

}  // namespace kiln::cpu
