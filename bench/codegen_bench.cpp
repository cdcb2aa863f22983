// bench/codegen_bench.cpp - codegen time per kernel (AST -> optimised, linearized LIR), the part of
// a first call kiln owns besides scheduling; the compiler is not included (issue goal: < 5 ms).
//
//   ./build/bench/bench_codegen                              # every workload of kiln bench
//   ./build/bench/bench_codegen --benchmark_filter=mlp
//   KILN_DEVICE=opencl:0 ./build/bench/bench_codegen         # another target
//
// One iteration lowers every kernel of the workload once; the counter ms_per_kernel is the
// figure to compare with the goal.
#include <benchmark/benchmark.h>

#include <chrono>

#include "codegen/pipeline.hpp"
#include "plugin/device.hpp"
#include "plugin/registry.hpp"
#include "workloads.hpp"

namespace {

using namespace kiln;

std::string device_name() {
  const std::string& d = Registry::get().settings().device;  // KILN_DEVICE, as the registry read it
  return d.empty() ? "cpu:0" : d;
}

void BM_Codegen(benchmark::State& state, const bench::Workload* w) {
  std::string device = device_name();
  const Target& target = Registry::get().open(device)->target();
  // inputs as buffers of the workload's shapes (as kiln bench realizes them before timing), so
  // the kernels are the workload's own, not fused with the random-number kernels of its inputs
  std::vector<Tensor> inputs;
  for (const Tensor& t : w->inputs(device)) inputs.push_back(Tensor::empty(t.shape(), t.dtype(), device));
  std::vector<UOp> asts;
  for (const ExecItem& e : w->fn(inputs).schedule())
    if (!e.is_copy) asts.push_back(e.ast);
  double ms = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    for (const UOp& ast : asts) benchmark::DoNotOptimize(to_program(ast, target));
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["kernels"] = static_cast<double>(asts.size());
  state.counters["ms_per_kernel"] = ms / static_cast<double>(state.iterations() * asts.size());
}

const bool registered = [] {
  for (const bench::Workload& w : bench::workloads())
    benchmark::RegisterBenchmark(("BM_Codegen/" + w.name).c_str(), BM_Codegen, &w)->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
