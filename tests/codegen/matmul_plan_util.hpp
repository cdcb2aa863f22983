// tests/codegen/matmul_plan_util.hpp - what the matmul plan tests share: a kernel of a tensor,
// running a program on cpu:0 under simulated caps and given actions, comparing with the reference
// device or a host loop, and a simulated AVX2 core.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "codegen/pipeline.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "llvm_ir.hpp"
#include "runtime/program_cache.hpp"
#include "sim_targets.hpp"

namespace kiln::matmul_plan {

inline UOp kernel_of(const Tensor& out) {
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy) return e.ast;
  return {};
}

inline Tensor ref(const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); }

// PARAM slots as the scheduler numbers a matmul's: the output, A, B.
inline constexpr int64_t kOut = 0, kA = 1, kB = 2;
// A matmul kernel's axes: rows (0), columns (1), the reduce (2).
inline const Opt stage_b{OptOp::STAGE, 0, kB};

inline std::string problem(const UOp& k, const Opt& o, const Target& t) { return opt_problem(k, o, &t); }

using Program = std::function<Tensor(const std::function<Tensor(const Shape&)>&)>;

// `program` on `device` with seeded random inputs; on cpu:0 lowered for `caps`, with `opts`
// instead of the heuristic's when given.
inline std::vector<float> run_chosen(const Program& program, const std::string& device, const Target* caps,
                                     const runtime::OptsOverride& chooser) {
  std::mt19937_64 rng(7);
  Tensor out = program([&](const Shape& s) { return random_input(rng, s, device); });
  runtime::set_target_override(caps);
  runtime::set_opts_override(chooser);
  std::vector<float> got;
  std::string error;
  try {
    got = out.to_vector<float>();
  } catch (const std::exception& e) {
    error = e.what();
  }
  runtime::set_opts_override({});
  runtime::set_target_override(nullptr);
  EXPECT_EQ(error, "");
  return got;
}
inline std::vector<float> run(const Program& program, const std::string& device, const Target* caps = nullptr,
                              const std::vector<Opt>* opts = nullptr) {
  return run_chosen(program, device, caps, every_kernel(opts));
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-3 * std::max(1.0f, std::fabs(want[i]))) << "element " << i;
}

// On cpu:0 (caps, opts) as on the reference device.
inline void expect_reference(const Program& program, const Target& caps, const std::vector<Opt>* opts = nullptr) {
  expect_near(run(program, "cpu:0", &caps, opts), run(program, "ref"));
}
// The same with `opts` for the kernels that reduce only (the others get the heuristic's: a 16-bit
// result's widening for the comparison is a kernel of its own).
inline void expect_reference_reducing(const Program& program, const Target& caps, const std::vector<Opt>& opts) {
  runtime::OptsOverride reducing = [opts](const UOp& ast, const Target&) -> std::optional<std::vector<Opt>> {
    for (const UOp& u : toposort(ast))
      if (u.op() == Ops::REDUCE) return opts;
    return std::nullopt;
  };
  expect_near(run_chosen(program, "cpu:0", &caps, reducing), run(program, "ref"));
}

// A matmul on cpu:0 against a host loop (the reference device is slow at these sizes); with
// `a_transposed`, A is stored K x M and read as its transpose (A.T @ B); with `b_transposed`, B is
// stored N x K (@ B.T).
inline void expect_matmul(int64_t m, int64_t k, int64_t n, const Target& caps, bool a_transposed = false, bool b_transposed = false) {
  const Shape a_shape = a_transposed ? Shape{k, m} : Shape{m, k}, b_shape = b_transposed ? Shape{n, k} : Shape{k, n};
  Program mm = [&](const auto& in) {
    Tensor a = in(a_shape), b = in(b_shape);
    return (a_transposed ? a.transpose() : a).matmul(b_transposed ? b.transpose() : b);
  };
  std::vector<float> a, b;
  run([&](const auto& in) {
    Tensor ta = in(a_shape), tb = in(b_shape);
    a = ta.template to_vector<float>(), b = tb.template to_vector<float>();
    return ta;
  }, "ref");
  std::vector<float> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j)
        want[i * n + j] += a[a_transposed ? q * m + i : i * k + q] * b[b_transposed ? j * k + q : q * n + j];
  expect_near(run(mm, "cpu:0", &caps), want);
}

inline bool has_stage(const std::vector<Opt>& opts) {
  return std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::STAGE; });
}

// A simulated AVX2 core (8 lanes, masked vector accesses, 2 threads) with a 32 KiB L1d and the
// given L2.
inline Target avx2_with_l2(uint64_t l2) {
  Target t = kiln::testing::simulated_cpu(8, 2);
  t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  t.l1d_bytes = 32 << 10, t.l2_bytes = l2;
  return t;
}

}  // namespace kiln::matmul_plan
