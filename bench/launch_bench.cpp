// bench/launch_bench.cpp - the cost of running a kernel on the cpu backend through the plugin ABI
// (Registry -> Device::launch -> SDK trampoline -> cpu runtime), of getting a kernel to run, and of
// running a cached schedule of 32 tiny kernels (realize, the schedule items, the prepared items),
// and of one small eager matmul call (graph building included).
//
//   ./build/bench/bench_launch                         # cpu backend from the build tree
//   KILN_BACKENDS=<manifest> ./build/bench/bench_launch
//
// The kernels are hand-written C, so the backend runs with compiler = "clang-15"
// (bench/cpu_clang.toml, used unless KILN_CONFIG names another config).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/jit.hpp"
#include "kiln/tensor.hpp"
#include "plugin/registry.hpp"
#include "runtime/prepared.hpp"
#include "runtime/runtime.hpp"
#include "runtime/instantiate.hpp"
#include "schedule/schedule.hpp"

namespace {

using namespace kiln;

const uint32_t kOne[3] = {1, 1, 1};

struct Setup {
  std::shared_ptr<Device> device;
  std::shared_ptr<Program> empty, axpy;
  kiln_buffer* bufs[3] = {};
};

Setup& setup() {
  static Setup* s = [] {
    auto* s = new Setup();
    setenv("KILN_CONFIG", KILN_BENCH_CPU_CLANG_CONFIG, /*overwrite=*/0);
    s->device = Registry::get().open("cpu");
    const char* empty = "#include <stdint.h>\nvoid empty(void* const* b, const int64_t* v, int32_t x, int32_t y, int32_t z) {}\n";
    s->empty = s->device->load(s->device->compile(empty, "empty"), "empty");
    const char* axpy = R"(
#include <stdint.h>
void axpy(void* const* b, const int64_t* v, int32_t g0, int32_t g1, int32_t g2) {
  float* out = (float*)b[0]; const float* x = (const float*)b[1]; const float* y = (const float*)b[2];
  int64_t n = v[0], base = (int64_t)g0 * n;
  for (int64_t i = 0; i < n; i++) out[base + i] = 2.0f * x[base + i] + y[base + i];
}
)";
    s->axpy = s->device->load(s->device->compile(axpy, "axpy"), "axpy");
    // Real data: untouched mmap'd memory would read the shared zero page and flatter the numbers.
    std::vector<float> fill((uint64_t{16} << 20) / 4, 1.5f);
    for (kiln_buffer*& b : s->bufs) {
      b = s->device->alloc(uint64_t{16} << 20);
      s->device->copy_in(b, 0, fill.data(), uint64_t{16} << 20);
    }
    return s;
  }();
  return *s;
}

// The number the runtime cares about: one empty work item, no waiting (< 5 us is the goal).
void BM_LaunchEmpty(benchmark::State& state) {
  Setup& s = setup();
  for (auto _ : state) s.device->launch(*s.empty, {}, {}, {}, kOne, kOne, false);
}
BENCHMARK(BM_LaunchEmpty);

// With timing (two clock reads) and three buffers, two values and offsets, as real kernels have.
void BM_LaunchEmptyWaitWithArgs(benchmark::State& state) {
  Setup& s = setup();
  uint64_t offsets[3] = {0, 64, 128};
  int64_t values[2] = {1, 2};
  for (auto _ : state) benchmark::DoNotOptimize(s.device->launch(*s.empty, s.bufs, offsets, values, kOne, kOne, true));
}
BENCHMARK(BM_LaunchEmptyWaitWithArgs);

// Dispatch over the thread pool: N empty work items (workers spinning between launches).
void BM_LaunchEmptyParallel(benchmark::State& state) {
  Setup& s = setup();
  uint32_t global[3] = {static_cast<uint32_t>(state.range(0)), 1, 1};
  for (auto _ : state) s.device->launch(*s.empty, {}, {}, {}, global, kOne, false);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LaunchEmptyParallel)->Arg(2)->Arg(64)->Arg(4096);

// A memory-bound kernel: 16 MiB per buffer, rows of 4096 floats over the pool.
void BM_LaunchAxpy16MiB(benchmark::State& state) {
  Setup& s = setup();
  const int64_t n = 4096;
  int64_t values[1] = {n};
  uint32_t global[3] = {static_cast<uint32_t>((uint64_t{16} << 20) / 4 / n), 1, 1};
  for (auto _ : state) s.device->launch(*s.axpy, s.bufs, {}, values, global, kOne, true);
  state.SetBytesProcessed(state.iterations() * int64_t{3} * (int64_t{16} << 20));
}
BENCHMARK(BM_LaunchAxpy16MiB)->UseRealTime();

// First-call latency: compile (clang-15 subprocess) + load (in-plugin ELF loader or dlopen).
void BM_CompileAndLoad(benchmark::State& state) {
  Setup& s = setup();
  int i = 0;
  for (auto _ : state) {
    std::string src = "#include <stdint.h>\nvoid k" + std::to_string(i) +
                      "(void* const* b, const int64_t* v, int32_t x, int32_t y, int32_t z) { ((float*)b[0])[x] = " +
                      std::to_string(i) + ".0f; }\n";
    std::string name = "k" + std::to_string(i++);
    benchmark::DoNotOptimize(s.device->load(s.device->compile(src, name), name));
  }
}
BENCHMARK(BM_CompileAndLoad)->Unit(benchmark::kMillisecond)->Iterations(20)->UseRealTime();

// Allocate 64 MiB and touch every page (huge pages make the first touch ~8x cheaper).
void BM_Alloc64MiBFirstTouch(benchmark::State& state) {
  Setup& s = setup();
  static std::string zeros(uint64_t{64} << 20, '\0');
  for (auto _ : state) {
    kiln_buffer* b = s.device->alloc(uint64_t{64} << 20);
    s.device->copy_in(b, 0, zeros.data(), zeros.size());
    s.device->free(b);
  }
}
BENCHMARK(BM_Alloc64MiBFirstTouch)->Unit(benchmark::kMillisecond)->UseRealTime();

// A cached schedule of 32 tiny kernels: 32 chained elementwise ops on 16 floats, each its own
// kernel (contiguous()), realized again and again. Every realize after the first hits the schedule
// and program caches, so what is left is building the graph, instantiating the cached schedule
// and dispatching 32 items. Items/s is per kernel: its inverse is the per-item cost.
Tensor chain32(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 32; ++i) y = (y + 1).contiguous();
  return y;
}

// Whether `device` can be used here (the opencl entries skip without an OpenCL driver).
bool usable(benchmark::State& state, const char* device) {
  if (std::string(device) == "ref") return true;  // (the reference executor is always there)
  for (const std::string& d : kiln::devices())
    if (d == device) return true;
  state.SkipWithError((std::string(device) + " is not a device here").c_str());
  return false;
}

void BM_RealizeCached32(benchmark::State& state, const char* device) {
  setup();  // the clang-15 config, like the other benchmarks
  if (!usable(state, device)) return;
  Tensor x = Tensor::ones({16}, dtypes::float32, device).realize();
  chain32(x).realize();  // compiles the 32 kernels once
  for (auto _ : state) benchmark::DoNotOptimize(chain32(x).realize());
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK_CAPTURE(BM_RealizeCached32, cpu, "cpu:0");
BENCHMARK_CAPTURE(BM_RealizeCached32, ref, "ref");
BENCHMARK_CAPTURE(BM_RealizeCached32, opencl, "opencl:0");

// Running the 32 items of one schedule again (no graph building, no scheduling): dispatch alone.
void BM_RunSchedule32(benchmark::State& state, const char* device) {
  setup();
  Tensor x = Tensor::ones({16}, dtypes::float32, device).realize();
  std::vector<ExecItem> items = chain32(x).schedule();
  runtime::run_schedule(items);
  for (auto _ : state) runtime::run_schedule(items);
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK_CAPTURE(BM_RunSchedule32, cpu, "cpu:0");
BENCHMARK_CAPTURE(BM_RunSchedule32, ref, "ref");

// The same 32 items prepared once (what realize runs for a cached schedule, and a JIT replays):
// running them is 32 launches with the handles they hold.
void BM_RunPrepared32(benchmark::State& state, const char* device) {
  setup();
  Tensor x = Tensor::ones({16}, dtypes::float32, device).realize();
  LinearResult lr = create_linear_with_vars(UOp::sink({chain32(x).uop()}));
  std::vector<runtime::PreparedItem> items = lr.prepared->prepare(lr.linear, lr.var_vals);
  runtime::run_items(items);
  for (auto _ : state) runtime::run_items(items);
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK_CAPTURE(BM_RunPrepared32, cpu, "cpu:0");
BENCHMARK_CAPTURE(BM_RunPrepared32, ref, "ref");

// The same 32 kernels through a kiln::Jit: each iteration is one replay on the input buffer
// (checks, binding, 32 launches, the output tensor). Compare with BM_RealizeCached32 (eager) and
// BM_RunPrepared32 (launches alone): their difference is the replay's own cost.
void BM_JitReplay32(benchmark::State& state, const char* device) {
  setup();
  if (!usable(state, device)) return;
  Tensor x = Tensor::ones({16}, dtypes::float32, device).realize();
  Jit jit([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{chain32(in[0])}; });
  jit({x});
  jit({x});  // captured
  for (auto _ : state) benchmark::DoNotOptimize(jit({x}));
  state.SetItemsProcessed(state.iterations() * 32);
  // wait for the replays still queued (outside the timing): PoCL compiles a kernel's work-group
  // function on its own thread at first launch, and one still compiling when the process exits
  // crashed there (cold caches, a loaded machine; docs/devices.md, "Known problems")
  benchmark::DoNotOptimize(jit({x})[0].to_vector<float>());
}
BENCHMARK_CAPTURE(BM_JitReplay32, cpu, "cpu:0");
BENCHMARK_CAPTURE(BM_JitReplay32, opencl, "opencl:0");

// A small matmul called eagerly, as a user's loop calls one (the tensors made, the graph built,
// the schedule and program caches hit, one kernel launched and waited for): the host cost per
// call that decides small shapes (the kernel itself is a few microseconds at 16 x 16).
void BM_EagerMatmul16(benchmark::State& state) {
  setup();
  Tensor a = Tensor::ones({16, 16}, dtypes::float32, "cpu:0").realize();
  Tensor b = Tensor::ones({16, 16}, dtypes::float32, "cpu:0").realize();
  a.matmul(b).realize();  // compiles once
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(b).realize());
}
BENCHMARK(BM_EagerMatmul16);

}  // namespace
