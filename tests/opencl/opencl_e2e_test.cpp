// tests/opencl/opencl_e2e_test.cpp - the op corpus and the size/dtype sweeps on opencl:0 (PoCL in
// CI), each result compared with the reference executor.
#include <gtest/gtest.h>

#include "backend_e2e.hpp"
#include "fusion_e2e.hpp"
#include "gradient_check.hpp"
#include "half_checks.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {
const char* kDevice = "opencl:0";
}  // namespace

KILN_OP_CORPUS_SUITE(OpenclCorpus, kDevice);

TEST(OpenclSweep, OddSizes) { check_odd_sizes(kDevice); }

TEST(OpenclBeam, SearchedKernelsMatchTheReference) { check_beam_matches_reference(kDevice, 15); }
TEST(OpenclJit, ReplayEqualsEagerBitForBit) { check_jit_matches_eager(kDevice, 3); }
TEST(OpenclGradient, ElementwiseOpsMatchFiniteDifferences) { check_elementwise_gradients(kDevice); }
TEST(OpenclGradient, ReductionsMovementAndCompositeOpsMatchFiniteDifferences) { check_composite_gradients(kDevice); }

TEST(OpenclFusion, MultiOutputAndFusedReduceKernels) { check_fused_kernels(kDevice); }

TEST(OpenclSweep, EmptyTensorsAreReadable) { check_empty_tensors(kDevice); }

TEST(OpenclSweep, UserGuardedDivisorsAreStillGuarded) { check_user_guarded_division(kDevice); }
TEST(OpenclSweep, LongReductions) { check_long_reductions(kDevice); }

TEST(OpenclSweep, EveryDtypeAndAxis) {
  // every dtype PoCL's device lists (the half types, emulated or native, are covered inside)
  check_every_dtype_and_axis(kDevice, {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64,
                                       dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64,
                                       dtypes::float32, dtypes::float64});
}

// A GPU target's launch size depends on a variable: each realize of the one cached schedule binds
// the prepared kernel to its value and evaluates the size for it (runtime/prepared.hpp).
TEST(OpenclPrepared, SymbolicLaunchSizes) { check_variable_launches(kDevice, 4096, /*symbolic_sizes=*/true); }

// float16 through PoCL's vload_half/vstore_half_rte (no cl_khr_fp16: stored, not computed in) and
// through the integer emulation: every pattern, every rounding case, fused chains, composites.
TEST(OpenclHalf, EveryPatternWidensExactly) { check_half_widening(kDevice); }
TEST(OpenclHalf, Float32RoundsToNearestEven) { check_half_rounding(kDevice); }
TEST(OpenclHalf, AFusedChainEqualsTheUnfusedOps) { check_half_fused_chain(kDevice); }
TEST(OpenclHalf, ExactValuesKeepTheirBitsAndConstantsRound) { check_half_exact_stores(kDevice); }
TEST(OpenclHalf, AStoredCastAlsoReadInTheKernel) { check_half_stored_cast_also_read(kDevice); }
TEST(OpenclHalf, APaddedTensorPlusAScalarStoresItsBits) { check_half_moved_scalar_also_added(kDevice); }
TEST(OpenclHalf, AViewRealizedWithItsSourceKeepsItsValues) { check_half_view_with_its_source(kDevice); }
TEST(OpenclHalf, UnalignedVectors) { check_half_unaligned_vectors(kDevice); }
TEST(OpenclHalf, MatmulConvolutionAndEinsumRoundOnce) { check_half_products_round_once(kDevice); }
TEST(OpenclHalf, CompositesRoundOnce) { check_half_composites_round_once(kDevice); }
TEST(OpenclHalf, ACopyKeepsEveryPattern) { check_half_copy_keeps_bits(kDevice, false); }
