// tests/common/backend_e2e.hpp - the end-to-end checks every backend's test executable runs:
// the op corpus, odd sizes and every dtype/axis, each result compared with the reference
// executor ("ref") and, for backends other than cpu, with cpu:0. Each backend instantiates them in its own executable (PoCL and hiprtc cannot
// share a process):
//
//     KILN_OP_CORPUS_SUITE(OpenclCorpus, "opencl:0")
//     TEST(OpenclSweep, OddSizes) { kiln::testing::check_odd_sizes("opencl:0"); }
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op_corpus.hpp"

namespace kiln::testing {

// Runs `c` on `device` and on the reference executor and expects equal results: floats within
// the case's tolerance, but at least `rtol_floor`/`atol_floor` (backends' transcendentals and
// fused multiply-adds differ from the reference in the last bits). A device other than cpu is
// also compared with cpu:0 (twice the tolerance), so the cpu backend must be loadable (unless
// KILN_TEST_CPU_PEER=optional, which scripts/gpu-check.sh sets: then without it the reference decides).
void expect_matches_reference(const OpCase& c, const std::string& device, double rtol_floor = 2e-6,
                              double atol_floor = 1e-6);

// Elementwise, sum, max and exp over 1, 3, 17 and 1000003 elements; a matmul and a softmax of
// sizes that divide nothing.
void check_odd_sizes(const std::string& device);

// Reductions far longer than float32's 2^24 integer range: ones(20000003).sum() and mean(), a
// long reduce over the first and over the last axis, and a random sum held to a pairwise-like
// error bound against a float64 sum of the same values.
void check_long_reductions(const std::string& device);

// add, lt, sum over each axis and a transposed max for each of `dtypes`; half types (emulated or
// native) through a cast round trip.
void check_every_dtype_and_axis(const std::string& device, const std::vector<DType>& dtypes);

// Tensor::empty on `device` read by every path (to_vector, after realize, through shrink and
// reshape views, a kernel reading it, a copy to the reference device), then written with assign
// and read back: nothing crashes and written values come back.
void check_empty_tensors(const std::string& device);

// A user's own guarded divisor, where(y == 0, 1, y) or where(mask, 1, y), has the shape of the
// guard kiln adds for total integer division and was once taken for it: MIN idiv -1 trapped
// (SIGFPE) and a masked-off zero divisor too. Both must give kiln's total results.
void check_user_guarded_division(const std::string& device);

// Several threads, `iterations` times: all read one shared lazy tensor and build on it; then each
// builds and reads its own tensors (identical graphs intern to the same nodes, so one thread's
// realize rewrites the others' lazy states). Every read must give the right values, and the run
// must be free of data races by design (it runs under ThreadSanitizer too).
void check_concurrent_reads(const std::string& device, int iterations);

// A variable-sized program (a shrink bound to `n` in [1, max]) realized for several values from
// one cached schedule: the results are right, each prepared kernel that takes the variable gets
// the value in its slot (runtime/prepared.hpp), and a launch size that depends on it covers it.
// `symbolic_sizes`: the target's launch sizes must depend on the variable (GPU targets).
void check_variable_launches(const std::string& device, int64_t max, bool symbolic_sizes);

// Every `stride`-th op-corpus case with KILN_BEAM=1 (short searches, no search cache): the
// searched kernels compute what the reference does.
void check_beam_matches_reference(const std::string& device, size_t stride);
// Every `stride`-th op-corpus case through a kiln::Jit: four calls (the last two replays, on new
// buffers with other values), each bit for bit what an eager realize of the same inputs gives. A
// case that runs no kernel (its result is a view of an input) must be refused at capture.
void check_jit_matches_eager(const std::string& device, size_t stride);

}  // namespace kiln::testing

// One test per op-corpus case, named after the case, on `device`.
#define KILN_OP_CORPUS_SUITE(Suite, device)                                                                       \
  class Suite : public ::testing::TestWithParam<size_t> {};                                                       \
  TEST_P(Suite, MatchesReferenceExecutor) {                                                                       \
    static const std::vector<::kiln::testing::OpCase> cases = ::kiln::testing::op_corpus();                       \
    ::kiln::testing::expect_matches_reference(cases[GetParam()], device);                                         \
  }                                                                                                               \
  INSTANTIATE_TEST_SUITE_P(Corpus, Suite, ::testing::Range<size_t>(0, ::kiln::testing::op_corpus().size()),       \
                           [](const ::testing::TestParamInfo<size_t>& info) {                                     \
                             return ::kiln::testing::op_corpus()[info.param].name;                                \
                           })
