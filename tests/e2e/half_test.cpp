// tests/e2e/half_test.cpp - float16 and bfloat16 on cpu:0: the checks every backend runs
// (common/half_checks.hpp: through F16C's conversions where the host has them, and through the
// integer emulation), and what is the cpu's own (its register tiles).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/opt/opt.hpp"
#include "half_checks.hpp"
#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "support/half.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {
const char* kDevice = "cpu:0";

// r's kernels sum products in DOT2 pairs where cpu:0 has it and `pairs` says they should, and never
// where it has not.
void expect_pairs(const Tensor& r, bool dot2, bool pairs) {
  int dots = 0;
  for (const ExecItem& it : r.schedule())
    if (!it.is_copy)
      for (const kiln_lir_inst& i : runtime::get_kernel(runtime::open_device(kDevice), it.ast)->spec.lir.insts) dots += i.op == KILN_LIR_OP_DOT2;
  if (dot2 && pairs) {
    EXPECT_GT(dots, 0) << "vdpbf16ps expected on this host";
  } else if (!dot2) {
    EXPECT_EQ(dots, 0);
  }
}
}  // namespace

TEST(HalfCasts, EveryPatternWidensExactly) { check_half_widening(kDevice); }
TEST(HalfCasts, Float32RoundsToNearestEven) { check_half_rounding(kDevice); }
TEST(HalfCasts, AFusedChainEqualsTheUnfusedOps) { check_half_fused_chain(kDevice); }
TEST(HalfStores, ExactValuesKeepTheirBitsAndConstantsRound) { check_half_exact_stores(kDevice); }
TEST(HalfStores, AStoredCastAlsoReadInTheKernel) { check_half_stored_cast_also_read(kDevice); }
TEST(HalfStores, APaddedTensorPlusAScalarStoresItsBits) { check_half_moved_scalar_also_added(kDevice); }
TEST(HalfCasts, AViewRealizedWithItsSourceKeepsItsValues) { check_half_view_with_its_source(kDevice); }
TEST(HalfCasts, UnalignedVectors) { check_half_unaligned_vectors(kDevice); }
TEST(HalfProducts, MatmulConvolutionAndEinsumRoundOnce) { check_half_products_round_once(kDevice); }
TEST(HalfComposites, RoundOnce) { check_half_composites_round_once(kDevice); }
TEST(HalfStores, ACopyKeepsEveryPattern) { check_half_copy_keeps_bits(kDevice, true); }

// bfloat16 matmuls against float64 on the same (bfloat16) inputs: each output within one bfloat16
// rounding of the exact sum plus the float32 accumulation's bound (K + 2) * 2^-24 * sum |a b|.
// Where cpu:0 has AVX512-BF16 (DOT2) the even-K ones sum K pairs with vdpbf16ps (checked: the
// kernel has DOT2), the odd K and the device without DOT2 take one multiply-add a product; the
// bound is the same (the pairs' products are exact, each sum rounds once). Chosen shapes, then 24
// seeded random ones.
TEST(HalfProducts, Bfloat16MatmulsMatchFloat64) {
  const bool dot2 = runtime::open_device(kDevice)->target().supports_op(KILN_LIR_OP_DOT2);
  struct Case {
    int64_t m, k, n;
    bool a_transposed, b_transposed, pairs;  // pairs: DOT2 asserted where the device has it
  };
  std::vector<Case> cases = {{64, 128, 96, false, false, true},  {33, 70, 50, false, false, true},  {256, 512, 256, false, false, true},
                             {17, 31, 40, false, false, false},  {96, 64, 80, true, false, false},   {64, 96, 80, false, true, false},
                             {128, 256, 192, false, true, true}, {8, 2048, 64, false, false, false},
                             // matrix-vector products B does not fit the caches for: BLOCK keeps the
                             // float32 partial sums in a stack array and rounds once (block.cpp)
                             {1, 4096, 4096, false, false, false}, {3, 4096, 1000, false, false, false},
                             {8, 4096, 2048, false, false, false}};
  std::mt19937 rng(11);
  // and shapes nobody chose: sizes 1-300, either operand transposed (DOT2 where the plan finds it)
  std::uniform_int_distribution<int64_t> size(1, 300);
  for (int i = 0; i < 24; ++i) cases.push_back({size(rng), size(rng), size(rng), (rng() & 1) != 0, (rng() & 1) != 0, false});
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) + (c.a_transposed ? " A.T" : "") +
                 (c.b_transposed ? " B.T" : ""));
    std::vector<float> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n));
    for (float& x : a) x = bf16_to_float(float_to_bf16(u(rng)));
    for (float& x : b) x = bf16_to_float(float_to_bf16(u(rng)));
    // a[i][k] and b[k][j] as the product reads them, whatever the layout
    auto at = [&](int64_t i, int64_t k) { return a[static_cast<size_t>(c.a_transposed ? k * c.m + i : i * c.k + k)]; };
    auto bt = [&](int64_t k, int64_t j) { return b[static_cast<size_t>(c.b_transposed ? j * c.k + k : k * c.n + j)]; };
    Tensor ta = Tensor::from_vector(a, c.a_transposed ? Shape{c.k, c.m} : Shape{c.m, c.k}, kDevice).cast(dtypes::bfloat16).realize();
    Tensor tb = Tensor::from_vector(b, c.b_transposed ? Shape{c.n, c.k} : Shape{c.k, c.n}, kDevice).cast(dtypes::bfloat16).realize();
    Tensor r = (c.a_transposed ? ta.transpose() : ta).matmul(c.b_transposed ? tb.transpose() : tb);
    expect_pairs(r, dot2, c.pairs);
    const std::vector<float> got = r.cast(dtypes::float32).to_vector<float>();
    size_t wrong = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double exact = 0, mag = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          exact += static_cast<double>(at(i, k)) * bt(k, j);
          mag += std::fabs(static_cast<double>(at(i, k)) * bt(k, j));
        }
        const double bound = std::ldexp(std::fabs(exact), -8) + static_cast<double>(c.k + 2) * std::ldexp(mag, -24) + 1e-30;
        const double g = got[static_cast<size_t>(i * c.n + j)];
        if (!(std::fabs(g - exact) <= bound) && wrong++ < 5) ADD_FAILURE() << "[" << i << "][" << j << "] = " << g << ", want " << exact << " +- " << bound;
      }
    EXPECT_EQ(wrong, 0u);
  }
}

// bfloat16 convolutions against float64 on the same inputs, the matmul's bound with K = C x 3 x 3.
// Over kPairedConvPositions output positions with an even channel count the input channels go in
// DOT2 pairs where cpu:0 has AVX512-BF16 (asserted), the image's pair two loads a plane apart
// (padding 1: the pad is a kernel of its own, the convolution's loads ungated).
TEST(HalfProducts, Bfloat16ConvolutionsMatchFloat64) {
  const bool dot2 = runtime::open_device(kDevice)->target().supports_op(KILN_LIR_OP_DOT2);
  struct Case {
    int64_t n, c, hw, o;
    bool pairs;
  };
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const Case& k : {Case{8, 32, 24, 32, true}, Case{2, 16, 48, 48, true}, Case{8, 6, 26, 48, true}, Case{8, 6, 26, 40, false}, Case{1, 16, 14, 32, false},
                        Case{8, 33, 24, 32, false},
                        // a panel past a stage buffer: input channels in blocks, float32 partial sums (block.cpp)
                        Case{1, 512, 7, 64, false}}) {
    SCOPED_TRACE(std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.hw) + " -> " + std::to_string(k.o));
    std::vector<float> x(static_cast<size_t>(k.n * k.c * k.hw * k.hw)), w(static_cast<size_t>(k.o * k.c * 9));
    for (float& v : x) v = bf16_to_float(float_to_bf16(u(rng)));
    for (float& v : w) v = bf16_to_float(float_to_bf16(u(rng)));
    Tensor tx = Tensor::from_vector(x, {k.n, k.c, k.hw, k.hw}, kDevice).cast(dtypes::bfloat16).realize();
    Tensor tw = Tensor::from_vector(w, {k.o, k.c, 3, 3}, kDevice).cast(dtypes::bfloat16).realize();
    Tensor r = tx.conv2d(tw, std::nullopt, 1, 1);
    expect_pairs(r, dot2, k.pairs);
    const std::vector<float> got = r.cast(dtypes::float32).to_vector<float>();
    size_t wrong = 0;
    for (int64_t b = 0; b < k.n; ++b)
      for (int64_t o = 0; o < k.o; ++o)
        for (int64_t y = 0; y < k.hw; ++y)
          for (int64_t xx = 0; xx < k.hw; ++xx) {
            double exact = 0, mag = 0;
            for (int64_t c = 0; c < k.c; ++c)
              for (int64_t ky = 0; ky < 3; ++ky)
                for (int64_t kx = 0; kx < 3; ++kx) {
                  const int64_t iy = y + ky - 1, ix = xx + kx - 1;
                  if (iy < 0 || iy >= k.hw || ix < 0 || ix >= k.hw) continue;
                  const double p = static_cast<double>(x[static_cast<size_t>(((b * k.c + c) * k.hw + iy) * k.hw + ix)]) *
                                   w[static_cast<size_t>(((o * k.c + c) * 3 + ky) * 3 + kx)];
                  exact += p, mag += std::fabs(p);
                }
            const double bound = std::ldexp(std::fabs(exact), -8) + static_cast<double>(k.c * 9 + 2) * std::ldexp(mag, -24) + 1e-30;
            const double g = got[static_cast<size_t>(((b * k.o + o) * k.hw + y) * k.hw + xx)];
            if (!(std::fabs(g - exact) <= bound) && wrong++ < 5)
              ADD_FAILURE() << "[" << b << "][" << o << "][" << y << "][" << xx << "] = " << g << ", want " << exact << " +- " << bound;
          }
    EXPECT_EQ(wrong, 0u);
  }
}

// Found with the matmul above: the heuristic counted 32 bfloat16 lanes to an AVX-512 vector, but
// a target that computes half types in float32 holds 16, so the register tile took twice the
// registers. The register tile (the UPCASTs) must equal float32's; the cache actions may differ
// (the 16-bit operands take half the bytes, and what fits depends on the host's caches).
TEST(HalfProducts, AHalfMatmulTilesAsFloat32Does) {
  auto actions = [](DType d) {
    Tensor x = Tensor::rand({256, 256}, dtypes::float32, kDevice).cast(d), y = Tensor::rand({256, 256}, dtypes::float32, kDevice).cast(d);
    x.realize();
    y.realize();
    Tensor r = x.matmul(y);
    for (const ExecItem& it : r.schedule())
      if (it.name.rfind("r_", 0) == 0) {
        std::vector<Opt> tile;
        for (const Opt& o : runtime::get_kernel(runtime::open_device(kDevice), it.ast)->spec.opts)
          if (o.op == OptOp::UPCAST) tile.push_back(o);
        return opts_text(tile);
      }
    return std::string("no reduce kernel");
  };
  const std::string f32 = actions(dtypes::float32);
  EXPECT_EQ(actions(dtypes::bfloat16), f32);
  EXPECT_EQ(actions(dtypes::float16), f32);
}
