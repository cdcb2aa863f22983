// tests/e2e/half_test.cpp - float16 and bfloat16 on cpu:0: the checks every backend runs
// (common/half_checks.hpp: through F16C's conversions where the host has them, and through the
// integer emulation), and what is the cpu's own (its register tiles).
#include <gtest/gtest.h>

#include "codegen/opt/opt.hpp"
#include "half_checks.hpp"
#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {
const char* kDevice = "cpu:0";
}  // namespace

TEST(HalfCasts, EveryPatternWidensExactly) { check_half_widening(kDevice); }
TEST(HalfCasts, Float32RoundsToNearestEven) { check_half_rounding(kDevice); }
TEST(HalfCasts, AFusedChainEqualsTheUnfusedOps) { check_half_fused_chain(kDevice); }
TEST(HalfStores, ExactValuesKeepTheirBitsAndConstantsRound) { check_half_exact_stores(kDevice); }
TEST(HalfStores, AStoredCastAlsoReadInTheKernel) { check_half_stored_cast_also_read(kDevice); }
TEST(HalfCasts, AViewRealizedWithItsSourceKeepsItsValues) { check_half_view_with_its_source(kDevice); }
TEST(HalfCasts, UnalignedVectors) { check_half_unaligned_vectors(kDevice); }
TEST(HalfProducts, MatmulConvolutionAndEinsumRoundOnce) { check_half_products_round_once(kDevice); }
TEST(HalfComposites, RoundOnce) { check_half_composites_round_once(kDevice); }

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
