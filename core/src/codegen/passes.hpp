// codegen/passes.hpp - the codegen passes that pipeline.cpp strings together.
//
// Each takes a kernel (a SINK) and returns the rewritten kernel; pipeline.cpp documents the
// order they must run in.
#pragma once
#include <vector>

#include "kiln/uop.hpp"

namespace kiln {

struct Target;
struct Opt;

// Launch geometry: index expressions (constants, or over DEFINE_VARs for symbolic kernels).
struct LaunchDims {
  UOp global[3], local[3];
};

// A costly value a row kernel sums and then writes again is computed once: the reduce stores it
// in a per-thread row buffer the output reads back (row_values.cpp; cpu-like targets only). Not
// when `given` actions expand an axis outside the row (they were chosen for the kernel as it is).
UOp reuse_row_values(const UOp& ast, const Target& target, const std::vector<Opt>* given = nullptr);
// A sum over r of WHERE(r == v, x(r), 0) (Tensor::gather's one-hot) becomes x(v) where v is in
// range, its loads gated (onehot.cpp).
UOp fold_onehot_reduces(const UOp& ast);
// An output range that the kernel reads as r // c and r % c becomes two ranges, so its indices
// are linear again (split_axes.cpp).
UOp split_digit_axes(const UOp& ast);
// Two adjacent ranges that every access reads as outer * n + inner (NCHW's rows and columns
// where nothing pads them) become one range (split_axes.cpp); on a GPU, output ranges only while
// the product fits every launch dimension of `target` and takes whole vectors.
UOp merge_adjacent_axes(const UOp& ast, const Target& target);
// A reduce loop (or, where output loops stay loops, an output loop) whose gates hold on every
// iteration but the last runs that one apart, ungated elsewhere (peel.cpp).
// Axes a given PADTO(axis, amount, gated) names keep their gates (a search's choice; the heuristic
// never gates).
UOp peel_partial_iterations(const UOp& ast, const Target& target, const std::vector<Opt>* given = nullptr);
// Whether that pass may peel a loop of this type on `target`: reduce loops everywhere, output loops
// where they stay loops (no workgroups: a GPU's output axes are launch indices). A gated PADTO
// on any other axis leaves the same kernel as the plain one (the search times one of them).
bool peel_may_take(AxisType type, const Target& target);
// UPCAST/UNROLL ranges become copies and vector lanes (codegen/expander.cpp). Stores of copies
// that are consecutive elements, each a vector along a non-contiguous axis, are transposed into
// vector stores of `target`'s widths (any width on a cpu, powers of two elsewhere).
UOp expand_ranges(const UOp& ast, const Target& target);
// THREAD, output and LOCAL ranges become SPECIAL launch indices; fills `dims` (gpudims.cpp).
UOp add_gpudims(const UOp& ast, const Target& target, LaunchDims& dims);
// A bfloat16 matmul's products summed in K pairs (its B staged in pairs) become DOT2s on targets
// that list it (pair_products.cpp).
UOp pair_products(const UOp& ast, const Target& target);
// REDUCE becomes a register accumulator: init, update in its loop, read after (lower_reduce.cpp).
UOp lower_reduces(const UOp& ast);
// Splits vector ops wider than the target's vectors into lanes (devectorize.cpp).
UOp devectorize(const UOp& ast, const Target& target);
// Signed int32/int64 ADD/SUB/MUL compute in the unsigned type of their width, so their wrap is
// defined in every target language; before lower_index_dtype (index math keeps its flags).
UOp wrap_signed_arith(const UOp& ast);
// The index type becomes int32 when every index value fits, else int64 (lower_index.cpp).
UOp lower_index_dtype(const UOp& ast);
// Every op and dtype the target lacks becomes ops it has (decompose.cpp, transcendental.cpp).
UOp decompose(const UOp& ast, const Target& target);
// A buffer parameter as decompose() leaves it for `target`: a pointer to an emulated half type
// (float16/bfloat16 the target lacks) becomes a pointer to its 16-bit patterns.
UOp emulated_param(const UOp& param, const Target& target);

// One linearized kernel: instructions in program order (see linearize.cpp).
std::vector<UOp> linearize(const UOp& ast);

}  // namespace kiln
