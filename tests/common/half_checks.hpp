// tests/common/half_checks.hpp - the float16/bfloat16 checks every backend runs on its device,
// each through the device's own conversions (storage_dtypes) and the integer emulation.
//
//     TEST(OpenclHalf, EveryPatternWidensExactly) { kiln::testing::check_half_widening("opencl:0"); }
#pragma once
#include <string>

namespace kiln::testing {

// Every 16-bit pattern, bitcast to float16/bfloat16 and cast to float32, is the reference's
// float (NaN: a NaN of the same sign).
void check_half_widening(const std::string& device);
// float32 values below, at and above every halfway point round to nearest even as the reference
// conversion (kiln::half's) does; NaN stays NaN, overflow is infinity.
void check_half_rounding(const std::string& device);
// A fused chain of half ops equals the ops realized one by one, bit for bit.
void check_half_fused_chain(const std::string& device);
// Stores of values the half type holds keep their bits; constants end rounded (every pattern).
void check_half_exact_stores(const std::string& device);
// A stored cast also read by another op of the kernel (the softmax's rounding and a comparison).
void check_half_stored_cast_also_read(const std::string& device);
// A padded half tensor plus a scalar: the padded elements store the scalar's bits.
void check_half_moved_scalar_also_added(const std::string& device);
// A view realized with the buffer it views keeps its values.
void check_half_view_with_its_source(const std::string& device);
// Vector loads of half values at every alignment (views at offsets 0..8; a padded write).
void check_half_unaligned_vectors(const std::string& device);
// Matmul, convolution and einsum take each product in float32 and round once.
void check_half_products_round_once(const std::string& device);
// softmax, log_softmax, logsumexp and layernorm compute in float32 and round once (1 ulp).
void check_half_composites_round_once(const std::string& device);
// A copy moves every pattern's bits (as memcpy does); with `exact_nans` signaling NaNs and their
// payloads too, else a NaN stays a NaN of its sign (OpenCL's vload_half/vstore_half quiet them).
void check_half_copy_keeps_bits(const std::string& device, bool exact_nans);

}  // namespace kiln::testing
