// bench/ir_bench.cpp - interning and graph_rewrite throughput.
//
//   ./build/bench/bench_ir                      all
//   ./build/bench/bench_ir --benchmark_filter=Intern
#include <benchmark/benchmark.h>

#include <random>

#include "ir/traverse.hpp"
#include "symbolic/symbolic.hpp"

using namespace kiln;

// Creates `n` new nodes (a chain of ADDs over fresh constants): every make() is a miss.
static void BM_InternNew(benchmark::State& state) {
  const int64_t n = state.range(0);
  int64_t salt = 0;
  for (auto _ : state) {
    UOp acc = UOp::variable("x", 0, 10);
    for (int64_t i = 0; i < n / 2; ++i) acc = UOp::alu(Ops::ADD, {acc, UOp::cint(dtypes::index, salt + i)});
    salt += n;
    benchmark::DoNotOptimize(acc);
    state.PauseTiming();
    acc = UOp();  // freeing is not interning
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_InternNew)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// Re-creates nodes that exist: every make() is a hit.
static void BM_InternExisting(benchmark::State& state) {
  const int64_t n = state.range(0);
  UOp keep = UOp::variable("x", 0, 10);
  for (int64_t i = 0; i < n / 2; ++i) keep = UOp::alu(Ops::ADD, {keep, UOp::cint(dtypes::index, i)});
  for (auto _ : state) {
    UOp acc = UOp::variable("x", 0, 10);
    for (int64_t i = 0; i < n / 2; ++i) acc = UOp::alu(Ops::ADD, {acc, UOp::cint(dtypes::index, i)});
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_InternExisting)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// ~1M nodes of index arithmetic as codegen produces it (div/mod of linear forms, comparisons,
// reassociation, identities), each expression distinct, all under one SINK.
static UOp index_graph(int64_t target_nodes) {
  std::mt19937_64 rng(42);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::vector<UOp> roots;
  UOp g = UOp::make(Ops::SPECIAL, dtypes::index, {UOp::cint(dtypes::index, 1 << 16)}, Arg{std::string("gidx0")});
  int64_t nodes = 0;
  for (int64_t i = 0; nodes < target_nodes; ++i) {
    UOp r0 = UOp::range(pick(2, 64), i % 7), r1 = UOp::range(4, 7 + i % 5);
    int64_t c = pick(1, 1 << 20);
    UOp lin = (g * 256 + r0 * 4 + r1 + c * 1024) * 1 + 0;
    UOp e = lin.idiv(4) * 4 + lin.mod(4) + (r1 + 3 + 5).idiv(8);
    UOp valid = (r0 + c).lt(UOp::cint(dtypes::index, c + 100)) & r1.lt(UOp::cint(dtypes::index, 4));
    roots.push_back(valid.where(e, UOp::cint(dtypes::index, 0)));
    nodes += 15;  // distinct nodes per expression, measured
  }
  return UOp::sink(roots);
}

// Cold: every iteration rewrites a freshly built graph, so no node carries bounds, keys or
// rewrite results cached by an earlier iteration (as a compiler meeting a new kernel would).
static void BM_GraphRewriteSymbolic(benchmark::State& state) {
  size_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    UOp g = index_graph(state.range(0));
    n = toposort_nodes(g).size();
    state.ResumeTiming();
    UOp out = graph_rewrite(g, symbolic(), nullptr, "bench");
    benchmark::DoNotOptimize(out);
    state.PauseTiming();
    out = UOp();
    g = UOp();
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(n);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_GraphRewriteSymbolic)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(3);

// A million-deep chain of float ops with identities (x*1+0 ...).
static void BM_GraphRewriteDeepChain(benchmark::State& state) {
  UOp acc = UOp::variable("x", 0, 10).cast(dtypes::float32);
  UOp one = UOp::cfloat(dtypes::float32, 1), zero = UOp::cfloat(dtypes::float32, 0), two = UOp::cfloat(dtypes::float32, 2);
  for (int64_t i = 0; i < state.range(0) / 3; ++i) acc = (acc * one + zero) * two;
  size_t n = toposort_nodes(acc).size();
  for (auto _ : state) {
    UOp out = graph_rewrite(acc, symbolic(), nullptr, "bench");
    benchmark::DoNotOptimize(out);
    state.PauseTiming();
    out = UOp();
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(n);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_GraphRewriteDeepChain)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(3);

// The driver alone: the index graph with a matcher that never fires (traversal + memo cost).
static void BM_GraphRewriteNoRules(benchmark::State& state) {
  UOp g = index_graph(state.range(0));
  static const PatternMatcher none{rule(UPat::op(Ops::NOOP), [](const Match&) { return UOp(); })};
  size_t n = toposort_nodes(g).size();
  for (auto _ : state) {
    UOp out = graph_rewrite(g, none, nullptr, "bench");
    benchmark::DoNotOptimize(out);
  }
  state.counters["nodes"] = static_cast<double>(n);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_GraphRewriteNoRules)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(3);
