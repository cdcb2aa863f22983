// bench/workloads.hpp - the workloads of `kiln bench`, in named sets.
//
// The "default" set is the eight workloads of ../shared/bench/tinygrad_bench.py (same programs,
// shapes and FLOP/byte counts), so a kiln line and a tinygrad line compare directly; "sizes"
// sweeps matmul over sizes that divide nothing; "extra" holds workloads outside the eight
// (bench/sets.cpp; bench/peers.py runs the same in numpy, torch and tinygrad). Each workload has
// a plain C++ float64 reference.
//
// Timing follows the tinygrad script: inputs are realized and the device opened before the clock
// starts; `first` is the first realize of the output with empty caches (schedule, programs,
// binaries in memory and, with fresh_cache, on disk) and only the inputs' memory allocated, as
// in a fresh process, so it includes scheduling, codegen, compilation, first-touch of fresh
// output memory and the run (median of first_runs repetitions, as the tinygrad script takes the
// median of 3 processes); `steady`
// is the median of eager calls (graph built, scheduled and run each time) after warm-up.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::bench {

// The machine limit a workload's rate is held to (bench/peak.hpp measures each).
enum class Roof {
  fma,   // FLOPs per call; the rate is GFLOPS, against the peak FMA rate
  copy,  // bytes read + written (minimum) per call; GB/s, against the copy bandwidth
  read,  // bytes read (minimum) per call, the output negligible; GB/s, against the read bandwidth
};
const char* unit(Roof roof);  // "GFLOPS" or "GB/s"

struct Workload {
  std::string name;
  Roof roof = Roof::fma;
  double amount = 0;  // FLOPs or bytes per call, as `roof` says
  // Creates the inputs on `device` (seeded; not yet realized).
  std::function<std::vector<Tensor>(const std::string& device)> inputs;
  // The program under test: builds the lazy output from the inputs.
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  // The expected output from host copies of the inputs, computed in float64.
  std::function<std::vector<double>(const std::vector<std::vector<float>>&)> reference;
  // Optional: what the program also writes (a training step's parameter updates, as assigns),
  // realized in one schedule with the output; built from the inputs like `fn`.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> writes = {};
  // Optional: the program on 16-bit inputs (`kiln bench --dtype float16|bfloat16`: the memory-bound
  // workloads in half the bytes, the matmuls), where it may differ from fn in what it accumulates
  // into (a sum of 16M halves is float32, as torch's x.sum(dtype=torch.float32): float16 overflows
  // at 65504). Empty: the workload runs in float32 only (the convolutions and the MLP, for now).
  std::function<Tensor(const std::vector<Tensor>&)> half_fn = {};
};

// The workload with its inputs in the 16-bit float d (bytes and tolerance scaled to it), named
// "NAME d"; nullopt where the workload has no half_fn.
std::optional<Workload> in_dtype(const Workload& w, DType d);
// The check's tolerance for results in d: float32's, or 8 units in the last place at 1 for the
// 16-bit floats (their results are rounded once per op).
double tolerance_for(DType d, double float32_tolerance);

struct WorkloadSet {
  std::string name, about;
  std::vector<Workload> workloads;
  bool sweep = false;  // one program over sizes: rates compare with each other (`kiln bench` prints % of the best)
};

// "default", "sizes", "extra", in that order.
const std::vector<WorkloadSet>& workload_sets();
const WorkloadSet* find_set(const std::string& name);  // nullptr when there is none of that name
// Every set's workloads in set order, each name once (a workload in two sets is the first's).
std::vector<const Workload*> all_workloads();

// The default set, in the tinygrad script's order: elementwise, sum, matmul256, matmul512,
// matmul1024, softmax, mlp, conv2d.
const std::vector<Workload>& workloads();

struct Options {
  int first_runs = 3;        // `first` is the median of this many first calls, each from scratch
  bool fresh_cache = true;   // each first call gets an empty on-disk compile cache (temporary)
  int warmup = 3;
  int iters = 10;
  bool check = true;         // compare the first result with the reference
  double tolerance = 1e-4;   // max |got - want| / max(1, max |want|)
  bool jit = false;          // also time the steady calls through a kiln::Jit (Result::jit_ms)
};

struct Result {
  std::string name, unit;
  double first_ms = 0, steady_ms = 0, rate = 0;  // rate in `unit` at steady_ms
  double schedule_ms = 0;       // building + scheduling the graph (no run), schedule cache hit
  double schedule_miss_ms = 0;  // the same with an empty schedule cache
  size_t kernels = 0;                            // kernels launched by one call
  bool checked = false, ok = false;
  double error = 0;  // the relative error above, when checked
  // with Options::jit: the steady calls replayed by a kiln::Jit (captured on its second call), and
  // whether a replay's output equals an eager call's bit for bit
  double jit_ms = 0;
  bool jit_same = false;
};

// Replay cost of a kiln::Jit on `device`: 32 chained kernels of 16 elements each (launch overhead
// dominates), timed as replays and as eager realizes of the same graph; microseconds per kernel.
struct JitOverhead {
  double replay_us = 0, eager_us = 0;
};
JitOverhead jit_overhead(const std::string& device);

// Runs one workload on `device`. Throws kiln::Error when the program fails to build or run.
Result run(const Workload& w, const std::string& device, const Options& options);

// Realizes the workload's program once with KILN_BEAM=width (its inputs made with the heuristics),
// so each of its kernels is beam-searched, or found in the search cache (runtime/beam.hpp).
void search(const Workload& w, const std::string& device, int width);

}  // namespace kiln::bench
