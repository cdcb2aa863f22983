// tests/codegen/opt_property_test.cpp - the optimizer never fails a valid program, on any target.
//
// Random kernels (matmuls, linear layers, convolutions (batch 1, strided, grouped, depthwise),
// reductions over any axis, pooling, softmax, elementwise over broadcast, permuted and flipped
// views; odd, prime and size-1 shapes) are lowered for simulated targets: CPU caps with 4/8/16
// float lanes, 1/2/8/64 threads, with and without masked vectors, GPU caps with typical workgroup
// and shared memory limits. For each, the heuristic, the rest of the pass list and the renderers
// (C, LLVM IR, OpenCL C) must succeed, and the heuristic's actions must validate as a given list.
// A share of the CPU cases also runs on cpu:0, lowered for the simulated caps, against the
// reference device. On the CPU targets each kernel is also lowered with a BLOCK and a STAGE added
// wherever they apply, and every other single-kernel program runs that way.
//
// KILN_PROPERTY_SEED=N reruns from the seed a failure printed; KILN_PROPERTY_CASES=N changes the
// number of programs (default 300).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>

#include "c_dialect.hpp"
#include "codegen/pipeline.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "llvm_ir.hpp"
#include "opencl_c.hpp"
#include "codegen/target.hpp"
#include "runtime/program_cache.hpp"
#include "sim_targets.hpp"

using namespace kiln;

namespace {

struct NamedTarget {
  std::string name;
  Target target;
  bool cpu;
};

std::vector<NamedTarget> targets() {
  std::vector<NamedTarget> out;
  // half of them with masked vector accesses (as cpu:0's in-process compiler): the heuristic pads
  // vector axes only there; the cache sizes (L1d/L2 KiB, 0 = unknown) of cores from small to big
  // in turn: the staging rules read them
  const uint64_t caches[][2] = {{0, 0}, {32, 256}, {48, 2048}, {128, 16384}, {64, 512}};
  size_t n = 0;
  for (uint32_t lanes : {4u, 8u, 16u})
    for (uint32_t threads : {1u, 2u, 8u, 64u}) {
      Target t = kiln::testing::simulated_cpu(lanes, threads);
      if (threads == 2 || threads == 8) t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
      // one full-width multiply-add a cycle (Zen 4's AVX-512): the narrow-column convolutions
      if (lanes == 16 && threads == 8) t.vector_registers = 32, t.fma_pipes = 1;
      const uint64_t* c = caches[n++ % std::size(caches)];
      t.l1d_bytes = c[0] << 10, t.l2_bytes = c[1] << 10;
      out.push_back({"cpu lanes=" + std::to_string(lanes) + " threads=" + std::to_string(threads) +
                         (t.has(KILN_TARGET_HAS_MASKED_VECTORS) ? " masked" : "") + (t.fma_pipes == 1 ? " fma1" : "") +
                         " caches=" + std::to_string(c[0]) +
                         "K/" + std::to_string(c[1]) + "K",
                     t, true});
    }
  out.push_back({"gpu 256/256/64 shared 48K lanes 4", gpu_caps(256, 64, 256, 48 << 10, 4), false});
  out.push_back({"gpu 1024/1024/64 shared 64K lanes 1", gpu_caps(1024, 64, 1024, 64 << 10, 1), false});
  out.push_back({"gpu 64/64/64 shared 16K lanes 8", gpu_caps(64, 64, 64, 16 << 10, 8), false});
  out.push_back({"gpu 128/128/1 no shared lanes 16", gpu_caps(128, 1, 128, 0, 16), false});
  return out;
}

int64_t pick(std::mt19937_64& rng, std::initializer_list<int64_t> from) {
  return *(from.begin() + std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng));
}
int64_t size(std::mt19937_64& rng) { return pick(rng, {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 64, 97, 128, 256}); }
// Sizes just off the vector widths and tiles (primes, one above or below a power of two).
int64_t odd_size(std::mt19937_64& rng) { return pick(rng, {1, 7, 15, 17, 33, 63, 100, 127, 129}); }

using Input = std::function<Tensor(const Shape&)>;

// One random program over inputs made by `input`; `what` describes it for failure messages.
Tensor random_program(std::mt19937_64& rng, const Input& input, std::string& what) {
  auto dims = [&](int n) {
    Shape s;
    for (int i = 0; i < n; ++i) s.push_back(size(rng));
    return s;
  };
  auto str = [](const Shape& s) {
    std::string o = "(";
    for (size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
    return o + ")";
  };
  switch (std::uniform_int_distribution<int>(0, 11)(rng)) {
    case 0: {  // matmul, sometimes against a transposed operand, sometimes batched
      int64_t m = size(rng), k = size(rng), n = size(rng) * pick(rng, {1, 8, 16});
      bool transposed = rng() % 2, batched = rng() % 4 == 0;
      Shape a{m, k}, b = transposed ? Shape{n, k} : Shape{k, n};
      if (batched) a.insert(a.begin(), 3), b.insert(b.begin(), 3);
      what = "matmul " + str(a) + " @ " + str(b) + (transposed ? ".T" : "");
      Tensor bt = input(b);
      return input(a).matmul(transposed ? bt.transpose() : bt);
    }
    case 1: {  // conv2d: plain, strided, padded, depthwise
      int64_t n = pick(rng, {1, 2}), cin = pick(rng, {1, 3, 4, 8}), h = pick(rng, {5, 7, 8, 13, 16}), w = pick(rng, {5, 8, 11, 16});
      int k = static_cast<int>(pick(rng, {1, 2, 3})), stride = static_cast<int>(pick(rng, {1, 2})), pad = static_cast<int>(pick(rng, {0, 1}));
      bool depthwise = rng() % 3 == 0;
      int64_t cout = depthwise ? cin : pick(rng, {1, 4, 8, 16});
      what = "conv2d " + str({n, cin, h, w}) + " k" + std::to_string(k) + " s" + std::to_string(stride) + " p" +
             std::to_string(pad) + (depthwise ? " depthwise" : "");
      return input({n, cin, h, w}).conv2d(input({cout, depthwise ? 1 : cin, k, k}), std::nullopt, stride, pad, 1,
                                           depthwise ? static_cast<int>(cin) : 1);
    }
    case 2: {  // a reduction over random axes of a (maybe permuted) tensor
      int nd = static_cast<int>(pick(rng, {1, 2, 3, 4}));
      Shape s = dims(nd);
      Tensor x = input(s);
      if (nd > 1 && rng() % 2) x = x.transpose(0, nd - 1);
      std::vector<int> axes;
      for (int i = 0; i < nd; ++i)
        if (rng() % 2) axes.push_back(i);
      if (axes.empty()) axes.push_back(nd - 1);
      bool keep = rng() % 2;
      int op = static_cast<int>(rng() % 3);
      what = std::string(op == 0 ? "sum" : op == 1 ? "max" : "mean") + " of " + str(s) + " over " + std::to_string(axes.size()) + " axes";
      return op == 0 ? x.sum(axes, keep) : op == 1 ? x.max(axes, keep) : x.mean(axes, keep);
    }
    case 3: {  // elementwise over a broadcast and a permuted or flipped operand
      Shape s = dims(static_cast<int>(pick(rng, {1, 2, 3})));
      Shape b = s;
      for (int64_t& d : b)
        if (rng() % 2) d = 1;
      Tensor x = input(s), y = input(b);
      if (s.size() == 2 && s[0] == s[1] && rng() % 2) x = x.transpose();
      if (rng() % 2) x = x.flip({0});
      what = "elementwise " + str(s) + " with " + str(b);
      return ((x * y + 1.0).relu() - y.exp() * 0.5).maximum(x);
    }
    case 4: {  // softmax over the last axis
      Shape s = dims(static_cast<int>(pick(rng, {1, 2, 3})));
      what = "softmax " + str(s);
      return input(s).softmax(-1);
    }
    case 5: {  // pooling
      Shape s{pick(rng, {1, 2}), pick(rng, {1, 3, 8}), pick(rng, {4, 7, 8, 16}), pick(rng, {4, 9, 16})};
      int k = static_cast<int>(pick(rng, {2, 3})), stride = static_cast<int>(pick(rng, {0, 1, 2}));
      bool avg = rng() % 2;
      what = std::string(avg ? "avg" : "max") + "_pool2d " + str(s) + " k" + std::to_string(k) + " s" + std::to_string(stride);
      return avg ? input(s).avg_pool2d(k, stride) : input(s).max_pool2d(k, stride);
    }
    case 6: {  // a normalisation: (x - mean) / std over the last axis, times a broadcast weight
      Shape s = dims(2);
      what = "layernorm " + str(s);
      Tensor x = input(s);
      Tensor c = x - x.mean({1}, true);
      return c / ((c * c).mean({1}, true) + 1e-5).sqrt() * input({1, s[1]});
    }
    case 8: {  // a reduce over a leading or middle axis (out[j] = sum_i x[i, j]), maybe batched
      int64_t a = odd_size(rng), b = odd_size(rng), c = pick(rng, {1, 3});
      what = "sum over a leading axis of " + str({c, a, b});
      return input({c, a, b}).sum({1});
    }
    case 9: {  // linear: x @ W.T + b (both operands contiguous along K), batch 1 or odd
      int64_t m = pick(rng, {1, 2, odd_size(rng)}), k = odd_size(rng), n = odd_size(rng);
      what = "linear " + str({m, k}) + " x " + str({n, k}) + ".T";
      return input({m, k}).linear(input({n, k}), input({n}));
    }
    case 10: {  // batch-1 convolution over an odd width, plain, strided, grouped or depthwise
      int64_t c = pick(rng, {8, 16}), h = pick(rng, {7, 9, 14}), w = pick(rng, {7, 17, 33});
      int stride = static_cast<int>(pick(rng, {1, 2})), groups = static_cast<int>(pick(rng, {1, 2, c}));
      what = "conv2d " + str({1, c, h, w}) + " 3x3 s" + std::to_string(stride) + " groups " + std::to_string(groups);
      return input({1, c, h, w}).conv2d(input({c, c / groups, 3, 3}), std::nullopt, stride, 1, 1, groups);
    }
    case 11: {  // a permuted (transposed) input into a contiguous output, odd sizes
      int64_t a = odd_size(rng), b = odd_size(rng);
      what = "transposed copy of " + str({a, b});
      return input({a, b}).transpose() * 2.0 + 1.0;
    }
    default: {  // a reduction of a product (a dot of broadcast views): matmul-like with odd shapes
      int64_t m = size(rng), k = size(rng);
      what = "dot rows " + str({m, k});
      Tensor x = input({m, k});
      return (x * input({1, k})).sum({1});
    }
  }
}

UOp kernel_body(const ExecItem& e) { return e.ast; }

// The heuristic blocks and stages only large matmuls: `opts` (a heuristic's plan) with a BLOCK
// (of the first reduce axis that takes one, in the smallest blocks) and a STAGE (the first output
// axis and input that validate) appended where they apply, if either does.
std::optional<std::vector<Opt>> with_cache_actions(const UOp& ast, std::vector<Opt> opts, const Target& t) {
  auto has = [&](OptOp op) { return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; }); };
  if (has(OptOp::STAGE)) return opts;
  const size_t given = opts.size();
  UOp k = apply_opts(kernel_for_opts(ast, t, &opts), opts, t);  // (the kernel as the optimiser sees the list)
  auto try_add = [&](const Opt& o) {
    if (!opt_problem(k, o, &t).empty()) return false;
    k = apply_opt(k, o, &t);
    opts.push_back(o);
    return true;
  };
  for (const UOp& r : toposort(k)) {
    if (has(OptOp::BLOCK) || r.op() != Ops::RANGE || range_type(r) != AxisType::REDUCE) continue;
    for (int64_t d = 2; d < const_size(r) && !try_add({OptOp::BLOCK, range_axis(r), d}); ++d) {}
  }
  for (const UOp& r : toposort(k)) {
    if (has(OptOp::STAGE) || r.op() != Ops::RANGE || range_type(r) != AxisType::LOOP) continue;
    for (const UOp& p : toposort(k))
      if (p.op() == Ops::PARAM && try_add({OptOp::STAGE, range_axis(r), p.arg_int()})) break;
  }
  if (opts.size() == given) return std::nullopt;
  return opts;
}

uint64_t seed_from_env(const char* var, uint64_t otherwise) {
  const char* v = std::getenv(var);
  return v && *v ? std::strtoull(v, nullptr, 10) : otherwise;
}

}  // namespace

// Every random kernel lowers and renders on every simulated target; the heuristic's actions
// re-validate as a given list.
TEST(OptProperty, HeuristicsNeverFailAValidProgram) {
  const uint64_t seed = seed_from_env("KILN_PROPERTY_SEED", std::random_device{}());
  const int64_t cases = static_cast<int64_t>(seed_from_env("KILN_PROPERTY_CASES", 300));
  SCOPED_TRACE("KILN_PROPERTY_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<NamedTarget> all = targets();
  Input ref = [](const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); };
  int64_t kernels = 0, staged = 0;
  for (int64_t c = 0; c < cases; ++c) {
    std::string what;
    Tensor out = random_program(rng, ref, what);
    for (const ExecItem& e : out.schedule()) {
      if (e.is_copy) continue;
      for (const NamedTarget& t : all) {
        SCOPED_TRACE(what + " (" + e.name + ") on " + t.name);
        try {
          ProgramSpec p = to_program(kernel_body(e), t.target);
          kiln_lir l = p.lir.view();
          if (t.cpu) {
            ASSERT_FALSE(cpu::CDialect().render(l).empty());
            ASSERT_FALSE(cpu::render_llvm_ir(l).empty());
            if (auto opts = with_cache_actions(e.ast, p.opts, t.target)) {  // blocked and staged too
              ProgramSpec staged_p = to_program(kernel_body(e), t.target, &*opts);
              kiln_lir sl = staged_p.lir.view();
              ASSERT_FALSE(cpu::CDialect().render(sl).empty());
              ASSERT_FALSE(cpu::render_llvm_ir(sl).empty());
              ++staged;
            }
          } else {
            ASSERT_FALSE(opencl::OpenclDialect(0, opencl::HalfSupport::storage).render_kernel(l).empty());
          }
          apply_opts(kernel_for_opts(e.ast, t.target), p.opts, t.target);  // (the kernel as the optimiser sees it)
        } catch (const std::exception& ex) {
          FAIL() << ex.what();
        }
        ++kernels;
      }
    }
  }
  EXPECT_GT(kernels, cases * 16) << "every program has at least one kernel, each lowered for 16 targets";
  EXPECT_GT(staged, cases) << "matmuls, convolutions and reductions block or stage on the CPU targets";
}

// The CPU cases, lowered for simulated caps (vector widths and thread counts this host may not
// have), run on cpu:0 and match the reference device.
TEST(OptProperty, SimulatedCpuCapsComputeTheReference) {
  const uint64_t seed = seed_from_env("KILN_PROPERTY_SEED", std::random_device{}());
  SCOPED_TRACE("KILN_PROPERTY_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<NamedTarget> all = targets();
  const int64_t cases = static_cast<int64_t>(seed_from_env("KILN_PROPERTY_CASES", 300)) / 5;
  int64_t staged_runs = 0;
  for (int64_t c = 0; c < cases; ++c) {
    const NamedTarget& t = all[rng() % 12];  // the CPU targets come first
    uint64_t data_seed = rng();
    auto make = [&](const std::string& device) {
      std::mt19937_64 data(data_seed);
      return [data, device](const Shape& s) mutable { return random_input(data, s, device); };
    };
    std::mt19937_64 shape_rng = rng;  // both programs draw the same shapes
    std::string what;
    Tensor want = random_program(shape_rng, make("ref"), what);
    Tensor got = random_program(rng, make("cpu:0"), what);
    SCOPED_TRACE(what + " on " + t.name);
    std::vector<float> w = want.to_vector<float>();
    // every other single-kernel program runs with a BLOCK and a STAGE added to the heuristic's plan
    std::optional<std::vector<Opt>> staged;
    std::vector<ExecItem> items = got.schedule();
    if (c % 2 && std::count_if(items.begin(), items.end(), [](const ExecItem& e) { return !e.is_copy; }) == 1)
      for (const ExecItem& e : items)
        if (!e.is_copy) staged = with_cache_actions(e.ast, to_program(e.ast, t.target).opts, t.target);
    if (staged) ++staged_runs;
    runtime::set_target_override(&t.target);
    runtime::set_opts_override(every_kernel(staged ? &*staged : nullptr));
    std::vector<float> g;
    try {
      g = got.to_vector<float>();
    } catch (const std::exception& ex) {
      runtime::set_opts_override({});
      runtime::set_target_override(nullptr);
      FAIL() << ex.what();
    }
    runtime::set_opts_override({});
    runtime::set_target_override(nullptr);
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 1e-3 * std::max(1.0f, std::fabs(w[i]))) << "element " << i;
  }
  EXPECT_GT(staged_runs, 0) << "some programs ran blocked or staged";
}

namespace {

// A random valid action list for `ast`: actions proposed at random (often a PADTO followed by an
// UPCAST or UNROLL of its amount, as a heuristic pads an odd axis for a vector), kept when they
// validate.
std::vector<Opt> random_actions(const UOp& ast, const Target& target, uint64_t seed) {
  std::mt19937_64 rng(seed);
  OptPlan plan(ast, target);
  for (int tries = 0; tries < 12 && plan.opts().size() < 5; ++tries) {
    std::vector<UOp> ranges;
    for (const UOp& u : toposort(plan.ast()))
      if (u.op() == Ops::RANGE && (range_type(u) == AxisType::LOOP || range_type(u) == AxisType::REDUCE)) ranges.push_back(u);
    if (ranges.empty()) break;
    const UOp& r = ranges[rng() % ranges.size()];
    const int64_t axis = range_axis(r), amount = pick(rng, {2, 3, 4, 8, 16});
    const bool loop = range_type(r) == AxisType::LOOP, vector = amount != 3 && rng() % 2;
    switch (rng() % 4) {
      case 0:  // pad for an expansion of the same amount
        if (plan.add({OptOp::PADTO, axis, amount})) plan.add({loop ? OptOp::UPCAST : OptOp::UNROLL, axis, amount, vector});
        break;
      case 1: plan.add({loop ? OptOp::UPCAST : OptOp::UNROLL, axis, amount, vector}); break;
      case 2: plan.add({OptOp::THREAD, axis, pick(rng, {2, 3, 8})}); break;
      default: plan.add({OptOp::PADTO, axis, amount}); break;
    }
  }
  return plan.opts();
}

}  // namespace

// Random valid action lists, PADTO among them, lowered for cpu:0's own target (masked vector
// accesses) and for simulated caps without masked vectors (accesses split into lanes), compute
// what the reference computes.
TEST(OptProperty, RandomActionListsComputeTheReference) {
  const uint64_t seed = seed_from_env("KILN_PROPERTY_SEED", std::random_device{}());
  SCOPED_TRACE("KILN_PROPERTY_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Target unmasked = kiln::testing::simulated_cpu(8, 2);
  const int64_t cases = static_cast<int64_t>(seed_from_env("KILN_PROPERTY_CASES", 300)) / 8;
  int64_t padded = 0;  // kernels that ran with a PADTO
  for (int64_t c = 0; c < cases; ++c) {
    const bool simulated = c % 2;
    const uint64_t data_seed = rng(), opts_seed = rng();
    auto make = [&](const std::string& device) {
      std::mt19937_64 data(data_seed);
      return [data, device](const Shape& s) mutable { return random_input(data, s, device); };
    };
    std::mt19937_64 shape_rng = rng;
    std::string what;
    Tensor want = random_program(shape_rng, make("ref"), what);
    Tensor got = random_program(rng, make("cpu:0"), what);
    std::vector<float> w = want.to_vector<float>();
    std::string actions;  // what the kernels got, for the failure message
    std::mutex mu;
    runtime::set_opts_override([&](const UOp& ast, const Target& t) -> std::optional<std::vector<Opt>> {
      // (made for the kernel the early passes leave, as a given list applies to it: a grouped
      // convolution's channels are two axes there, split_digit_axes; KILN_PROPERTY_SEED=1646648586)
      std::vector<Opt> opts = random_actions(kernel_for_opts(ast, t, nullptr), t, opts_seed ^ ast.key().lo);
      if (opts_seed % 3 == 0)  // a third of the cases also block and stage where they can
        if (std::optional<std::vector<Opt>> more = with_cache_actions(ast, opts, t)) opts = *more;
      std::lock_guard<std::mutex> lock(mu);
      for (const Opt& o : opts) actions += " " + o.str();
      actions += " |";
      padded += std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::PADTO; });
      return opts;
    });
    if (simulated) runtime::set_target_override(&unmasked);
    std::vector<float> g;
    std::string error;
    try {
      g = got.to_vector<float>();
    } catch (const std::exception& ex) {
      error = ex.what();
    }
    runtime::set_opts_override({});
    runtime::set_target_override(nullptr);
    SCOPED_TRACE(what + (simulated ? " on simulated caps without masked vectors" : " on cpu:0") + "; actions:" + actions);
    ASSERT_EQ(error, "");
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 1e-3 * std::max(1.0f, std::fabs(w[i]))) << "element " << i;
  }
  EXPECT_GT(padded, cases / 4) << "the random lists exercise PADTO";
}
