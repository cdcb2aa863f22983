// tests/codegen/row_values_test.cpp - a row kernel's costly values computed once (row_values.cpp)
// and PADTO's gating of what depends on a padded axis (opt.cpp), on simulated targets. The values
// themselves are checked end to end (tests/common/fusion_e2e.cpp, the shape sweep).
#include <gtest/gtest.h>

#include "codegen/opt/opt.hpp"
#include "codegen/pipeline.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/schedule.hpp"
#include "simulated_cpu.hpp"

using namespace kiln;
using kiln::testing::simulated_cpu;

namespace {

Tensor in(const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); }

// The kernels of `out` as row fusion makes them (the cpu's scheduling, whatever device runs this).
std::vector<UOp> row_kernels(const Tensor& out) {
  static const Target cpu = simulated_cpu(16, 2);
  runtime::set_target_override(&cpu);  // scheduled as for a cpu: it runs rows (clears the caches)
  std::vector<UOp> asts;
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy) asts.push_back(e.ast);
  runtime::set_target_override(nullptr);
  return asts;
}

int count(const std::vector<UOp>& program, Ops op) {
  return static_cast<int>(std::count_if(program.begin(), program.end(), [&](const UOp& u) { return u.op() == op; }));
}

// A 16-lane, 2-thread cpu that lists EXP2 (as AVX-512 does) and, with `prefetch`, PREFETCH.
Target cpu_with(bool prefetch) {
  Target t = simulated_cpu(16, 2);
  for (uint32_t op : {KILN_LIR_OP_EXP2, KILN_LIR_OP_PREFETCH})
    if (op != KILN_LIR_OP_PREFETCH || prefetch) t.ops[op / 64] |= uint64_t{1} << (op % 64);
  return t;
}

}  // namespace

// Softmax as one row kernel sums exp(x - max) over the row and then writes exp(x - max) / sum:
// the exp is computed once per element, stored in a row buffer by the reduce and read back by
// the output (no EXP2 in the output's loop), and the next row's input is prefetched meanwhile.
TEST(RowValues, SoftmaxComputesItsExpOnce) {
  for (int64_t cols : {1024, 1000, 7}) {  // (1000 and 7: the row padded for the vector lanes)
    SCOPED_TRACE(cols);
    std::vector<UOp> k = row_kernels(in({64, cols}).softmax(-1));
    ASSERT_EQ(k.size(), 1u);
    LaunchDims dims;
    std::vector<UOp> program = do_linearize(full_rewrite_to_sink(k[0], cpu_with(true), dims));
    // (copies of the exp along an unrolled reduce are other elements: all come before the output loop)
    int row_buffers = 0, exps = 0, exps_after_read = 0;
    bool read = false;
    for (const UOp& u : program) {
      row_buffers += u.op() == Ops::DEFINE_REG && u.dtype().ptr_size() == cols;
      read |= u.op() == Ops::LOAD && u.src(0).src(0).op() == Ops::AFTER && u.src(0).src(0).src(0).op() == Ops::DEFINE_REG &&
              u.src(0).src(0).src(0).dtype().ptr_size() == cols;
      exps += u.op() == Ops::EXP2;
      exps_after_read += read && u.op() == Ops::EXP2;
    }
    EXPECT_EQ(row_buffers, 1);
    EXPECT_TRUE(read);
    EXPECT_GT(exps, 0);
    EXPECT_EQ(exps_after_read, 0) << "the output reads the row buffer instead of computing exp again";
    EXPECT_GT(count(program, Ops::PREFETCH), 0);
  }
}

// Where rows do not run one per thread (a GPU: workgroups), or for a cheap value (layernorm's
// x - mean), nothing changes; a target that does not list PREFETCH gets none.
TEST(RowValues, OnlyForCostlyValuesOnThreadedTargets) {
  std::vector<UOp> k = row_kernels(in({64, 256}).softmax(-1));
  ASSERT_EQ(k.size(), 1u);
  Target gpu_like = cpu_with(true);
  gpu_like.flags |= KILN_TARGET_HAS_LOCAL;
  EXPECT_EQ(reuse_row_values(k[0], gpu_like), k[0]);
  UOp reused = reuse_row_values(k[0], cpu_with(false));
  EXPECT_NE(reused, k[0]);
  for (const UOp& u : toposort(reused)) EXPECT_NE(u.op(), Ops::PREFETCH);
  int prefetches = 0;
  for (const UOp& u : toposort(reuse_row_values(k[0], cpu_with(true)))) prefetches += u.op() == Ops::PREFETCH;
  EXPECT_EQ(prefetches, 1) << "one input load in the summed value";
  // copies of another row would share the buffer: the action is refused on the rewritten kernel,
  // and a given list that has it (made for the kernel as scheduled) keeps the kernel as it was
  EXPECT_NE(opt_problem(reused, Opt{OptOp::UPCAST, 0, 4}, nullptr).find("row buffer"), std::string::npos);
  EXPECT_EQ(opt_problem(reused, Opt{OptOp::THREAD, 0, 2}, nullptr), "");
  const std::vector<Opt> given{{OptOp::THREAD, 0, 2}, {OptOp::UPCAST, 0, 4}};
  EXPECT_EQ(reuse_row_values(k[0], cpu_with(true), &given), k[0]);
  const std::vector<Opt> along_row{{OptOp::UPCAST, 1, 16, true}};
  EXPECT_NE(reuse_row_values(k[0], cpu_with(true), &along_row), k[0]);
  Tensor x = in({64, 256});
  Tensor centered = x - x.mean({-1}, true);
  std::vector<UOp> ln = row_kernels(centered * ((centered * centered).mean({-1}, true) + 1e-5).rsqrt());
  ASSERT_EQ(ln.size(), 1u);
  EXPECT_EQ(reuse_row_values(ln[0], cpu_with(true)), ln[0]);
}

// Regression: PADTO gated every access that depended on the padded axis, also those after a
// reduce over it (the row buffer read after softmax's sum: its gate named the reduce's range
// outside its loop, and linearize failed). It also rebuilt gated accesses from their old sources
// (an access whose address reads another would keep the ungated one); now it rebuilds bottom-up.
TEST(RowValues, PadtoGatesOnlyInsideThePaddedLoop) {
  std::vector<UOp> k = row_kernels(in({3, 7}).softmax(-1));
  ASSERT_EQ(k.size(), 1u);
  const Target t = cpu_with(true);
  UOp reused = reuse_row_values(k[0], t);
  UOp summed;
  for (const UOp& u : toposort(reused))
    if (u.op() == Ops::REDUCE && u.src(0).op() == Ops::AFTER) summed = u.src(1);
  ASSERT_TRUE(summed);
  UOp padded = apply_opt(reused, Opt{OptOp::PADTO, range_axis(summed), 8}, &t);
  int reads = 0, gated_loads = 0;
  for (const UOp& u : toposort(padded)) {
    if (u.op() == Ops::INDEX && u.src(0).op() == Ops::AFTER && u.src(0).src(0).op() == Ops::DEFINE_REG) {
      ++reads;
      EXPECT_EQ(u.nsrc(), 2u) << "the row buffer read after the sum is not gated by the summed axis";
    }
    gated_loads += u.op() == Ops::INDEX && u.src(0).op() == Ops::PARAM && u.nsrc() == 3;
  }
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(gated_loads, 2) << "the summed value's load of x and the next row's prefetch";
  LaunchDims dims;
  EXPECT_NO_THROW(do_linearize(full_rewrite_to_sink(k[0], t, dims)));
}
