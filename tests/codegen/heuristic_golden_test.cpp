// tests/codegen/heuristic_golden_test.cpp - the hand-coded heuristic's chosen actions over a broad
// corpus of kernels (the bench workloads, odd and prime matmuls, batched matmul, GEMV, dot,
// convolutions of every kind, row kernels, reduces over each axis, elementwise and broadcasts, in
// float32, float16, float64 and int32) on simulated CPUs and GPUs, against a golden file
// (tests/golden/codegen/heuristic_plans.txt). It locks the heuristic's behaviour: a refactor must
// leave every line as it is; a deliberate change to the heuristic rewrites the file
// (KILN_UPDATE_GOLDEN=1) and its diff shows which kernels' plans moved.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "codegen/opt/opt.hpp"
#include "codegen/pipeline.hpp"
#include "golden.hpp"
#include "kiln/kiln.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/schedule.hpp"
#include "sim_targets.hpp"
#include "workloads.hpp"

using namespace kiln;
using kiln::testing::simulated_cpu;
using kiln::testing::simulated_gpu;

namespace {

struct NamedTarget {
  std::string name;
  Target target;
};

// `facts`: the vector unit as the cpu backend fills it for that ISA level (32 registers with
// AVX-512, else 16; two FMA pipes from AVX2 on, else one); without, unknown (Target::vector_regs
// and fma_units assume the same from the width): both must plan alike.
Target cpu(uint32_t lanes, uint32_t threads, bool masked, uint64_t l1d_kib, uint64_t l2_kib, bool facts = false) {
  Target t = simulated_cpu(lanes, threads);
  if (masked) t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  t.l1d_bytes = l1d_kib << 10, t.l2_bytes = l2_kib << 10;
  if (facts) t.vector_registers = lanes >= 16 ? 32 : 16, t.fma_pipes = lanes >= 8 ? 2 : 1;
  return t;
}

// CPUs as the cpu backend reports them (AVX2-like, AVX-512-like, 4-wide, scalar; masked vectors
// with the in-process compiler, none with the C one; several cache sizes, unknown included) and
// GPUs as OpenCL (PoCL-like and discrete) and HIP report them.
std::vector<NamedTarget> targets() {
  return {
      {"avx2 t8 masked 32K/1M", cpu(8, 8, true, 32, 1024, true)},
      {"avx2 t2 masked 32K/512K", cpu(8, 2, true, 32, 512)},
      {"avx2 t4 c 48K/2M", cpu(8, 4, false, 48, 2048, true)},
      {"avx2 t1 masked unknown-caches", cpu(8, 1, true, 0, 0)},
      {"avx512 t8 masked 48K/2M", cpu(16, 8, true, 48, 2048, true)},
      {"avx512 t2 c 32K/1M", cpu(16, 2, false, 32, 1024)},
      {"avx512 t16 masked 64K/16M", cpu(16, 16, true, 64, 16384)},
      {"sse t4 masked 32K/256K", cpu(4, 4, true, 32, 256, true)},
      {"sse t2 c unknown-caches", cpu(4, 2, false, 0, 0)},
      {"scalar t2 c 32K/1M", cpu(1, 2, false, 32, 1024)},
      {"opencl-pocl lanes8 256/64 shared 64K", gpu_caps(256, 64, 4096, 64 << 10, 8)},
      {"opencl lanes4 256/64 shared 48K", gpu_caps(256, 64, 256, 48 << 10, 4)},
      {"opencl lanes16 128/1 no shared", gpu_caps(128, 1, 128, 0, 16)},
      {"hip-like lanes4 shared 48K", simulated_gpu(4)},
      {"gpu lanes1 1024/64 shared 64K", gpu_caps(1024, 64, 1024, 64 << 10, 1)},
  };
}

Tensor in(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt, "ref"); }

struct Case {
  std::string name;
  std::function<std::vector<Tensor>()> outputs;
  bool row_fusion = false;
};

std::vector<Case> corpus() {
  std::vector<Case> c;
  auto one = [&](std::string name, std::function<Tensor()> f, bool rows = false) {
    c.push_back({std::move(name), [f] { return std::vector<Tensor>{f()}; }, rows});
  };
  // matmuls: square, odd, prime, tiny, shallow, tall, wide; every transposition; batched; GEMV
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
                                                            {1536, 1536, 1536}, {1000, 1000, 1000}, {999, 999, 999},
                                                            {1001, 777, 513}, {255, 255, 255}, {97, 31, 127},
                                                            {7, 13, 17}, {256, 10, 512}, {10, 512, 256},
                                                            {64, 1024, 4096}, {16, 1024, 1024}, {500, 500, 500}})
    for (DType dt : {dtypes::float32, dtypes::float16, dtypes::int32}) {
      if (dt != dtypes::float32 && m > 1024) continue;
      std::string s = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + " " + dt.name();
      one("matmul " + s, [=] { return in({m, k}, dt).matmul(in({k, n}, dt)); });
      if (dt != dtypes::float32) continue;
      one("A.T@B " + s, [=] { return in({k, m}).transpose().matmul(in({k, n})); });
      one("A@B.T " + s, [=] { return in({m, k}).linear(in({n, k})); });
      one("A.T@B.T " + s, [=] { return in({k, m}).transpose().matmul(in({n, k}).transpose()); });
    }
  one("matmul f64 256", [] { return in({256, 256}, dtypes::float64).matmul(in({256, 256}, dtypes::float64)); });
  one("batched 8x64x96x128", [] { return in({8, 64, 96}).matmul(in({8, 96, 128})); });
  one("batched 16x33x65x17", [] { return in({16, 33, 65}).matmul(in({16, 65, 17})); });
  one("gemv 1x1024x1024", [] { return in({1, 1024}).matmul(in({1024, 1024})); });
  one("matvec 1024x1024x1", [] { return in({1024, 1024}).matmul(in({1024, 1})); });
  one("matvec 4096x777", [] { return in({4096, 777}).matmul(in({777})); });
  one("dot 4096", [] { return in({4096}).dot(in({4096})); });
  one("dot 1000003", [] { return in({1000003}).dot(in({1000003})); });
  one("linear+bias+relu 128x784x512", [] { return in({128, 784}).linear(in({512, 784}), in({512})).relu(); });
  one("linear 512x512x2048 gelu", [] { return in({512, 512}).linear(in({2048, 512})).gelu(); });
  one("classifier 256x512x10", [] { return in({256, 512}).linear(in({10, 512})); });
  // convolutions: 3x3, 5x5 pad 2, strided, depthwise, pointwise, grouped, 1-D-like, odd maps
  struct Conv {
    Shape x, w;
    int stride, pad, groups;
  };
  for (const Conv& v : std::vector<Conv>{{{1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1},
                                         {{8, 32, 64, 64}, {64, 32, 3, 3}, 1, 1, 1},
                                         {{1, 64, 56, 56}, {128, 64, 3, 3}, 2, 1, 1},
                                         {{1, 64, 57, 57}, {128, 64, 3, 3}, 2, 1, 1},
                                         {{1, 512, 7, 7}, {512, 512, 3, 3}, 1, 1, 1},
                                         {{2, 256, 14, 14}, {256, 256, 3, 3}, 1, 1, 1},
                                         {{1, 128, 28, 28}, {128, 128, 3, 3}, 1, 1, 1},
                                         {{4, 16, 32, 32}, {32, 16, 5, 5}, 1, 2, 1},
                                         {{2, 3, 31, 29}, {8, 3, 5, 5}, 1, 2, 1},
                                         {{1, 256, 56, 56}, {256, 1, 3, 3}, 1, 1, 256},
                                         {{8, 128, 28, 28}, {128, 1, 3, 3}, 1, 1, 128},
                                         {{8, 128, 56, 56}, {128, 1, 3, 3}, 2, 1, 128},
                                         {{1, 96, 112, 112}, {96, 1, 3, 3}, 2, 1, 96},
                                         {{1, 32, 112, 112}, {32, 1, 5, 5}, 1, 2, 32},
                                         {{1, 512, 14, 14}, {512, 1, 3, 3}, 1, 1, 512},
                                         {{1, 2048, 7, 7}, {512, 2048, 1, 1}, 1, 0, 1},
                                         {{1, 1024, 14, 14}, {256, 1024, 1, 1}, 1, 0, 1},
                                         {{1, 256, 56, 56}, {512, 256, 1, 1}, 2, 0, 1},
                                         {{8, 256, 56, 56}, {512, 256, 1, 1}, 2, 0, 1},
                                         {{1, 64, 28, 28}, {128, 64, 1, 1}, 1, 0, 1},
                                         {{2, 64, 30, 30}, {64, 16, 3, 3}, 1, 1, 4},
                                         {{8, 256, 1, 1024}, {256, 256, 1, 3}, 1, 0, 1}}) {
    std::string s;
    for (int64_t d : v.x) s += std::to_string(d) + ",";
    s += " w ";
    for (int64_t d : v.w) s += std::to_string(d) + ",";
    s += " s" + std::to_string(v.stride) + " p" + std::to_string(v.pad) + " g" + std::to_string(v.groups);
    one("conv " + s, [=] { return in(v.x).conv2d(in(v.w), std::nullopt, v.stride, v.pad, 1, v.groups); });
  }
  one("conv bias relu 1,512,7,7", [] { return in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), in({512}), 1, 1).relu(); });
  one("conv f16 1,64,56,56", [] { return in({1, 64, 56, 56}, dtypes::float16).conv2d(in({64, 64, 3, 3}, dtypes::float16), std::nullopt, 1, 1); });
  one("conv f16 cast 1,512,7,7", [] { return in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), std::nullopt, 1, 1).cast(dtypes::float16); });
  one("conv f64 1,64,28,28", [] { return in({1, 64, 28, 28}, dtypes::float64).conv2d(in({64, 64, 3, 3}, dtypes::float64), std::nullopt, 1, 1); });
  one("conv f64 1,512,7,7", [] { return in({1, 512, 7, 7}, dtypes::float64).conv2d(in({512, 512, 3, 3}, dtypes::float64), std::nullopt, 1, 1); });
  one("conv cropped pointwise 1,512,7,8", [] {
    return in({1, 512, 7, 8}).shrink({{0, 1}, {0, 512}, {0, 7}, {0, 7}}).conv2d(in({256, 512, 1, 1}));
  });
  one("maxpool 8,64,56,56", [] { return in({8, 64, 56, 56}).max_pool2d(3, 2, 1); });
  one("avgpool 8,64,56,56", [] { return in({8, 64, 56, 56}).avg_pool2d(2); });
  // row kernels (row fusion on and off)
  for (bool rows : {false, true}) {
    const std::string r = rows ? " rows" : "";
    one("softmax 4096x1024" + r, [] { return in({4096, 1024}).softmax(-1); }, rows);
    one("softmax 1000x1000" + r, [] { return in({1000, 1000}).softmax(-1); }, rows);
    one("log_softmax 64x10" + r, [] { return in({64, 10}).log_softmax(-1); }, rows);
    one("softmax axis0 512x256" + r, [] { return in({512, 256}).softmax(0); }, rows);
    one("layernorm 2048x768" + r, [] {
      Tensor x = in({2048, 768});
      Tensor m = x.mean({-1}, true);
      Tensor d = x - m;
      return d / ((d * d).mean({-1}, true) + 1e-5f).sqrt();
    }, rows);
    one("softmax f16 1024x512" + r, [] { return in({1024, 512}, dtypes::float16).softmax(-1); }, rows);
  }
  // reduces over leading, trailing, middle and all axes
  for (DType dt : {dtypes::float32, dtypes::float16, dtypes::int32}) {
    const std::string d = std::string(" ") + dt.name();
    one("sum axis0 4096x4096" + d, [=] { return in({4096, 4096}, dt).sum({0}); });
    one("sum axis1 4096x4096" + d, [=] { return in({4096, 4096}, dt).sum({1}); });
    one("sum all 1000x999" + d, [=] { return in({1000, 999}, dt).sum(); });
    one("sum mid 64x128x256" + d, [=] { return in({64, 128, 256}, dt).sum({1}); });
    one("max axis0 333x777" + d, [=] { return in({333, 777}, dt).max({0}); });
  }
  one("sum axes0,2 8x128x28x28", [] { return in({8, 128, 28, 28}).sum({0, 2, 3}); });
  one("sum 16777216", [] { return in({16777216}).sum(); });
  one("mean axis2 32x64x49", [] { return in({32, 64, 49}).mean({2}); });
  // elementwise, broadcasts, permutes
  for (DType dt : {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::float64}) {
    const std::string d = std::string(" ") + dt.name();
    one("add 4096x4096" + d, [=] { return in({4096, 4096}, dt) + in({4096, 4096}, dt); });
    one("add odd 999x1001" + d, [=] { return in({999, 1001}, dt) + in({999, 1001}, dt); });
    one("broadcast row 1024x1000" + d, [=] { return in({1024, 1000}, dt) + in({1000}, dt); });
    one("broadcast col 1024x1000" + d, [=] { return in({1024, 1000}, dt) * in({1024, 1}, dt); });
    one("transposed add 1024x1024" + d, [=] { return in({1024, 1024}, dt).transpose() + in({1024, 1024}, dt); });
  }
  one("relu exp 1000003", [] { return (in({1000003}).relu() + 1.0f).exp(); });
  one("permute 0231 8x64x56x56", [] { return in({8, 64, 56, 56}).permute({0, 2, 3, 1}).contiguous(); });
  one("cast f32->f16 4096x256", [] { return in({4096, 256}).cast(dtypes::float16); });
  one("tiny add 7", [] { return in({7}) + in({7}); });
  // the bench workloads (every set)
  for (const bench::Workload* w : bench::all_workloads())
    c.push_back({"bench " + w->name, [w] {
                   std::vector<Tensor> inputs = w->inputs("ref");
                   std::vector<Tensor> outs{w->fn(inputs)};
                   if (w->writes)
                     for (Tensor& t : w->writes(inputs)) outs.push_back(t);
                   return outs;
                 }});
  return c;
}

std::string plans() {
  std::ostringstream out;
  const std::vector<NamedTarget> ts = targets();
  for (const Case& c : corpus()) {
    // scheduled as for a cpu (it runs rows: row fusion) or as for "ref" (no row fusion)
    static const Target rows = simulated_cpu(16, 2);
    runtime::set_target_override(c.row_fusion ? &rows : nullptr);  // (clears the caches)
    const std::vector<Tensor> outs = c.outputs();
    const std::vector<ExecItem> items = outs.size() == 1 ? outs[0].schedule() : Tensor::schedule_all(outs);
    runtime::set_target_override(nullptr);
    out << "# " << c.name << "\n";
    for (const ExecItem& e : items) {
      if (e.is_copy) continue;
      for (const NamedTarget& t : ts) {
        std::string line;
        try {
          line = opts_text(to_program(e.ast, t.target).opts);
        } catch (const std::exception& ex) {
          line = "error (not compiled for this target)";
        }
        out << e.name << " | " << t.name << " | " << line << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace

TEST(HeuristicGolden, PlansAreUnchanged) {
  const std::string text = plans();
  const char* upd = std::getenv("KILN_UPDATE_GOLDEN");
  if (upd && *upd && std::string(upd) != "0") {
    EXPECT_GOLDEN("codegen/heuristic_plans", text);
    return;
  }
  std::ifstream f(kiln::testing::golden_path("codegen/heuristic_plans"), std::ios::binary);
  ASSERT_TRUE(f) << "missing golden file (run with KILN_UPDATE_GOLDEN=1)";
  std::vector<std::string> want, got;
  for (std::string l; std::getline(f, l);) want.push_back(l);
  std::istringstream g(text);
  for (std::string l; std::getline(g, l);) got.push_back(l);
  EXPECT_EQ(want.size(), got.size());
  int shown = 0;
  std::string section;
  for (size_t i = 0; i < std::min(want.size(), got.size()) && shown < 30; ++i) {
    if (got[i].rfind("# ", 0) == 0) section = got[i];
    if (want[i] != got[i]) {
      ADD_FAILURE() << section << "\n  line " << i + 1 << "\n  want: " << want[i] << "\n  got:  " << got[i];
      ++shown;
    }
  }
}
