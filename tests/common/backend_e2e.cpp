// tests/common/backend_e2e.cpp - the checks of backend_e2e.hpp.
#include "backend_e2e.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "error_check.hpp"
#include "runtime/beam.hpp"
#include "runtime/prepared.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/instantiate.hpp"
#include "schedule/schedule.hpp"
#include "plugin/registry.hpp"
#include "support/env.hpp"

namespace kiln::testing {

namespace {

// Whether cpu:0 can be the second opinion. It must, unless KILN_TEST_CPU_PEER=optional (the GPU
// device check, on a machine whose glibc may be too old for the bundled LLVM the cpu backend
// needs): then a missing cpu backend is said once and the reference executor alone decides.
bool cpu_peer() {
  static const bool ok = [] {
    const char* optional = std::getenv("KILN_TEST_CPU_PEER");
    if (!optional || std::string(optional) != "optional") return true;
    const BackendRecord* r = Registry::get().backend("cpu");
    if (r && r->ok()) return true;
    std::printf("[   NOTE   ] cpu:0 is unavailable (%s): results are checked against the reference executor only\n",
                r ? r->reason.c_str() : "no cpu backend");
    return false;
  }();
  return ok;
}

}  // namespace

void expect_matches_reference(const OpCase& c, const std::string& device, double rtol_floor, double atol_floor) {
  HostArray got = run_case(c, device);
  HostArray want = expected(c);
  double rtol = std::max(c.rtol, rtol_floor), atol = std::max(c.atol, atol_floor);
  EXPECT_EQ(compare(got, want, rtol, atol), "") << c.name << " on " << device << (c.bounded ? " vs its float64 bound" : " vs the reference executor");
  if (device.rfind("cpu", 0) == 0 || !cpu_peer()) return;
  // every other backend is also held to the cpu backend's answer (each may sit on either side of
  // the reference, hence twice the tolerance)
  HostArray cpu = run_case(c, "cpu:0");
  EXPECT_EQ(compare(got, cpu, 2 * rtol, 2 * atol), "") << c.name << " on " << device << " vs cpu:0";
}

void check_beam_matches_reference(const std::string& device, size_t stride) {
  const std::string saved = knob(TextKnob::beam_dir);
  set_knob(TextKnob::beam_dir, "off");
  SearchLimits short_search;
  short_search.max_rounds = 1;
  short_search.max_per_round = 6;
  runtime::set_beam_limits(short_search);
  set_knob(Knob::beam, 1);
  runtime::clear_program_cache();
  const std::vector<OpCase> cases = op_corpus();
  for (size_t i = 0; i < cases.size(); i += stride) {
    SCOPED_TRACE("KILN_BEAM=1: " + cases[i].name);
    HostArray got = run_case(cases[i], device), want = expected(cases[i]);
    EXPECT_EQ(compare(got, want, std::max(cases[i].rtol, 2e-6), std::max(cases[i].atol, 1e-6)), "") << cases[i].name;
  }
  set_knob(Knob::beam, 0);
  runtime::set_beam_limits({});
  runtime::clear_program_cache();
  set_knob(TextKnob::beam_dir, saved);
}

void check_jit_matches_eager(const std::string& device, size_t stride) {
  const std::vector<OpCase> cases = op_corpus();
  size_t replayed = 0;
  for (size_t i = 0; i < cases.size(); i += stride) {
    const OpCase& c = cases[i];
    SCOPED_TRACE("jit: " + c.name);
    Jit jit([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{c.build(in)}; });
    for (int call = 1; call <= 4; ++call) {
      std::vector<HostArray> inputs = c.inputs;
      if (call >= 3)  // other values in new buffers (floats only: integer inputs may be indices)
        for (HostArray& a : inputs)
          if (a.dtype.is_float())
            for (double& v : a.v) v = v * 0.5 + 0.125 * call;
      std::vector<Tensor> eager_in, jit_in;
      for (const HostArray& a : inputs) {
        eager_in.push_back(upload(a, device));
        jit_in.push_back(upload(a, device));
      }
      Tensor::realize_all(eager_in);  // (uploads are copies; a Jit realizes its inputs before it captures)
      Tensor eager = c.build(eager_in);
      if (call == 2 && eager.schedule().empty()) {
        EXPECT_NE(kiln::testing::error_of([&] { jit(jit_in); }).find("ran no kernel"), std::string::npos);
        break;
      }
      HostArray want = download(eager), got = download(jit(jit_in)[0]);
      EXPECT_EQ(compare(got, want, 0, 0), "") << "call " << call;
      if (call == 4) {
        EXPECT_TRUE(jit.captured());
        ++replayed;
      }
    }
  }
  EXPECT_GT(replayed, 0u);
}

void check_odd_sizes(const std::string& device) {
  for (int64_t n : {1, 3, 17, 1000003}) {
    HostArray a = make_array({n}, dtypes::float32, 1), b = make_array({n}, dtypes::float32, 2);
    std::vector<OpCase> cases = {
        {"ew", {a, b}, [](const std::vector<Tensor>& t) { return ((t[0] + 1.0) * t[1]).relu(); }, nullptr},
        {"sum", {a}, [](const std::vector<Tensor>& t) { return t[0].sum(); }, nullptr, 1e-4},
        {"max", {a}, [](const std::vector<Tensor>& t) { return t[0].max(); }, nullptr},
        {"exp", {a}, [](const std::vector<Tensor>& t) { return t[0].exp(); }, nullptr},
    };
    for (const OpCase& c : cases) {
      if (n == 1000003 && c.name == "exp") continue;  // the reference executor is slow; exp is covered above
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      expect_matches_reference(c, device);
    }
  }
  HostArray m = make_array({17, 33}, dtypes::float32, 3), w = make_array({33, 5}, dtypes::float32, 4);
  expect_matches_reference({"odd_matmul", {m, w}, [](const std::vector<Tensor>& t) { return t[0].matmul(t[1]); }, nullptr},
                           device);
  expect_matches_reference({"odd_softmax", {m}, [](const std::vector<Tensor>& t) { return t[0].softmax(0); }, nullptr},
                           device);
  // columns padded to whole vectors (61 -> 64) and rows to the tile (19 -> 20): the padded lanes
  // read the last real column or row (clamped, pad_range) and are never stored; A.T's rows too
  HostArray a = make_array({19, 37}, dtypes::float32, 5), at = make_array({37, 19}, dtypes::float32, 6),
            b = make_array({37, 61}, dtypes::float32, 7);
  expect_matches_reference({"padded_matmul", {a, b}, [](const std::vector<Tensor>& t) { return t[0].matmul(t[1]); }, nullptr},
                           device);
  expect_matches_reference(
      {"padded_matmul_at", {at, b}, [](const std::vector<Tensor>& t) { return t[0].transpose().matmul(t[1]); }, nullptr}, device);
}

void check_long_reductions(const std::string& device) {
  constexpr int64_t n = 20000003;  // prime: the split pads with the reduce's identity
  Tensor ones = Tensor::ones({n}, dtypes::float32, device);
  EXPECT_NEAR(ones.sum().item<float>(), static_cast<double>(n), 1e-6 * n);
  EXPECT_NEAR(ones.mean().item<float>(), 1.0, 1e-6);
  std::vector<float> rows = Tensor::ones({3, n / 3}, dtypes::float32, device).sum({1}).to_vector<float>();
  std::vector<float> cols = Tensor::ones({n / 3, 3}, dtypes::float32, device).sum({0}).to_vector<float>();
  for (float v : rows) EXPECT_EQ(v, static_cast<float>(n / 3)) << "a long reduce over the last axis";
  for (float v : cols) EXPECT_EQ(v, static_cast<float>(n / 3)) << "a long reduce over the first axis";
  // float32 pairwise summation (numpy) is off by about eps * log2(n) relative; a single running
  // sum of n values by up to eps * n (and here stops near 2^24)
  manual_seed(13);
  Tensor x = Tensor::rand({n}, dtypes::float32, device).realize();
  double want = 0;
  for (float v : x.to_vector<float>()) want += v;
  double got = x.sum().item<float>();
  EXPECT_LE(std::abs(got - want), 0x1p-23 * std::log2(static_cast<double>(n)) * want) << "got " << got << ", want " << want;
}

void check_every_dtype_and_axis(const std::string& device, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) {
    HostArray a = make_array({3, 4, 5}, d, 5, -20, 20), b = make_array({4, 5}, d, 6, -20, 20);
    SCOPED_TRACE(d.name());
    expect_matches_reference({"add", {a, b}, [](const std::vector<Tensor>& t) { return t[0] + t[1]; }, nullptr}, device);
    expect_matches_reference({"lt", {a, b}, [](const std::vector<Tensor>& t) { return t[0].lt(t[1]); }, nullptr}, device);
    for (int axis : {0, 1, 2})
      expect_matches_reference({"sum", {a}, [axis](const std::vector<Tensor>& t) { return t[0].sum({axis}); }, nullptr},
                               device);
    expect_matches_reference(
        {"max_t", {a}, [](const std::vector<Tensor>& t) { return t[0].transpose(0, 2).max({1}); }, nullptr}, device);
    // whole vectors: bool lanes are -1 for true in C-style vectors, which reverses their order
    // (a bool lt rendered as the lanes' signed < was inverted, and a max picked false)
    HostArray c = make_array({20}, d, 8, -20, 20), e = make_array({20}, d, 9, -20, 20);  // (4 lanes)
    expect_matches_reference({"lt_vec", {c, e}, [](const std::vector<Tensor>& t) { return t[0].lt(t[1]); }, nullptr}, device);
    expect_matches_reference({"max_vec", {c, e}, [](const std::vector<Tensor>& t) { return t[0].maximum(t[1]); }, nullptr}, device);
  }
  // half types: computed natively where the target has them, else emulated (stored as bits)
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    HostArray a = make_array({7, 9}, dtypes::float32, 7, -50, 50);
    SCOPED_TRACE(d.name());
    expect_matches_reference({"half", {a}, [d](const std::vector<Tensor>& t) {
                                return ((t[0].cast(d) * t[0].cast(d)) + 1.0).sum({1}).cast(dtypes::float32);
                              }, nullptr, 1e-2},
                             device);
  }
}

void check_empty_tensors(const std::string& device) {
  // unspecified contents: only the sizes are checked until something writes the buffer
  EXPECT_EQ(Tensor::empty({4}, dtypes::float32, device).to_vector<float>().size(), 4u);
  EXPECT_EQ(Tensor::empty({4}, dtypes::float32, device).realize().to_vector<float>().size(), 4u);
  EXPECT_EQ(Tensor::empty({2, 3}, dtypes::int32, device).reshape({3, 2}).to_vector<int32_t>().size(), 6u);
  EXPECT_EQ(Tensor::empty({8}, dtypes::float32, device).shrink({{2, 5}}).to_vector<float>().size(), 3u);
  EXPECT_EQ((Tensor::empty({5}, dtypes::float32, device) * 0.0 + 2.0).to_vector<float>(), std::vector<float>(5, 2.0f));
  EXPECT_EQ(Tensor::empty({3}, dtypes::float32, device).to("ref").to_vector<float>().size(), 3u);
  EXPECT_EQ(Tensor::empty({0}, dtypes::float32, device).to_vector<float>().size(), 0u);
  Tensor e = Tensor::empty({4}, dtypes::float32, device);
  e.assign(Tensor::arange(0, 4, 1, dtypes::float32, device)).realize();
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(e.shrink({{1, 3}}).to_vector<float>(), (std::vector<float>{1, 2}));
}

void check_user_guarded_division(const std::string& device) {
  constexpr int32_t kMin = INT32_MIN;
  Tensor x = Tensor::from_vector(std::vector<int32_t>{kMin, 7, -7, 5}, {4}, device);
  Tensor y = Tensor::from_vector(std::vector<int32_t>{-1, 0, 2, 0}, {4}, device);
  Tensor mask = Tensor::from_vector(std::vector<uint8_t>{0, 0, 0, 1}, {4}, device).cast(dtypes::bool_);
  Tensor one = scalar_like(y, 1);
  Tensor safe = Tensor::where(y.eq(scalar_like(y, 0)), one, y);  // divisors -1, 1, 2, 1
  EXPECT_EQ(x.idiv(safe).to_vector<int32_t>(), (std::vector<int32_t>{kMin, 7, -3, 5}));
  EXPECT_EQ(x.mod(safe).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, -1, 0}));
  Tensor masked = Tensor::where(mask, one, y);  // divisors -1, 0, 2, 1
  EXPECT_EQ(x.idiv(masked).to_vector<int32_t>(), (std::vector<int32_t>{kMin, 0, -3, 5}));
  EXPECT_EQ(x.mod(masked).to_vector<int32_t>(), (std::vector<int32_t>{0, 7, -1, 0}));
}

void check_concurrent_reads(const std::string& device, int iterations) {
  constexpr int kThreads = 4;
  std::vector<float> want(64), want3(64);
  for (int i = 0; i < 64; ++i) want[i] = 2.0f * i + 1, want3[i] = 3 * want[i] - 1;
  auto lazy = [&] { return Tensor::arange(0, 64, 1, dtypes::float32, device) * 2.0 + 1.0; };
  std::atomic<int> wrong{0};
  auto run = [&](auto&& body) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
    for (std::thread& t : threads) t.join();
  };
  for (int it = 0; it < iterations; ++it) {
    Tensor x = lazy();
    run([&](int t) {
      if (x.to_vector<float>() != want) ++wrong;
      if ((x + t).sum().item<float>() != 4096.0f + 64 * t) ++wrong;  // the sum of 2i + 1 over i < 64 is 64^2
    });
  }
  run([&](int) {
    for (int it = 0; it < iterations; ++it) {
      Tensor y = lazy();
      Tensor z = y * 3.0 - 1.0;
      if (z.to_vector<float>() != want3 || y.to_vector<float>() != want) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0) << "reads on " << device << " from " << kThreads << " threads gave wrong values";
}

void check_variable_launches(const std::string& device, int64_t max, bool symbolic_sizes) {
  Variable n("n", 1, max);
  Tensor data = Tensor::arange(0, static_cast<double>(max), 1, dtypes::float32, device).realize();
  bool symbolic = false;
  for (int64_t v : {max / 3, max, int64_t{1}, max / 4 + 1}) {
    SCOPED_TRACE(v);
    Tensor y = (data.shrink(0, n.bind(v)) * 3).contiguous() + 1;
    std::vector<float> want;
    for (int64_t i = 0; i < v; ++i) want.push_back(static_cast<float>(i * 3 + 1));
    LinearResult lr = create_linear_with_vars(UOp::sink({y.uop()}));  // before y is realized
    EXPECT_EQ(y.to_vector<float>(), want);
    int with_vars = 0;
    for (const runtime::PreparedItem& it : lr.prepared->prepare(lr.linear, lr.var_vals)) {
      if (!it.kernel->var_slots.empty()) {
        ++with_vars;
        // (the kernel's other argument is the host scalar 3, lifted: docs/architecture.md, "Scalars")
        const std::vector<std::string>& names = it.kernel->kernel->spec.var_names;
        auto at = std::find(names.begin(), names.end(), "n");
        ASSERT_NE(at, names.end());
        EXPECT_EQ(it.values[static_cast<size_t>(at - names.begin())], v) << "the value in the kernel's slot";
      }
      if (it.kernel->static_dims) continue;
      symbolic = true;
      EXPECT_GE(int64_t{it.global[0]} * it.local[0], v) << "the launch covers the bound size";
    }
    EXPECT_GT(with_vars, 0);
  }
  if (symbolic_sizes) {
    EXPECT_TRUE(symbolic) << "a launch size that depends on the variable";
  }
}

}  // namespace kiln::testing
