// codegen/opt/opt_gpu.cpp - workgroup actions for targets with local memory (CUDA, OpenCL, HIP).
#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"

namespace kiln {

namespace {

// A reduce every load it walks reads along the contiguous axis (a row's sum, softmax's max and sum,
// a matrix-vector product's rows) and no two of those loads are reused along different output axes
// (a matmul, x @ w.T: A's rows serve every column, B's columns every row; tiles pay there).
bool reads_along(const KernelShape& k, const UOp& red) {
  bool along = false;
  std::vector<UOp> reused;  // output axes a walked load ignores
  for (const UOp& idx : k.load_indices) {
    if (has_stride(idx, red, 0)) continue;
    if (!has_stride(idx, red, 1)) return false;
    along = true;
    for (const UOp& o : k.out)
      if (const_size(o) > 1 && has_stride(idx, o, 0) && std::find(reused.begin(), reused.end(), o) == reused.end())
        reused.push_back(o);
  }
  return along && reused.size() < 2;
}

bool group_fits(const KernelShape& k, const Target& target, int64_t g) {
  return g <= target.local_prod_max && g <= target.local_max[0] &&
         static_cast<uint64_t>(g) * 16 * static_cast<uint64_t>(k.itemsize) <= target.shared_max;
}

// GROUP of g items on `red` and on every other reduce of the kernel that runs before or after it
// on its own (a row kernel's reduces share the group index: gpudims.cpp).
bool group_rows(const KernelShape& k, const UOp& red, int64_t g, OptPlan& plan) {
  std::vector<UOp> others;  // (judged before the GROUP replaces red's range)
  for (const UOp& r : k.reduce)
    if (r != red && remaining(r, plan.opts()) % g == 0 && remaining(r, plan.opts()) > g && independent(plan.ast(), r, red))
      others.push_back(r);
  if (!pad_to(plan, red, g) || !plan.add({OptOp::GROUP, range_axis(red), g})) return false;
  for (const UOp& r : others) plan.add({OptOp::GROUP, range_axis(r), g});
  return true;
}

}  // namespace

void add_workgroup_opts(const KernelShape& k, const Target& target, OptPlan& plan) {
  const std::vector<Opt>& opts = plan.opts();
  if (!k.reduce.empty() && target.has(KILN_TARGET_HAS_SHARED) && target.shared_max > 0) {
    int64_t items = 1;
    for (const UOp& r : k.out) items *= std::max<int64_t>(1, remaining(r, opts));
    const UOp& red = k.reduce.back();
    int64_t n = remaining(red, opts);
    // A reduction with few outputs would leave a few work items alone with long loops: spread the
    // reduce over a workgroup (GROUP) and let the partial results meet in local memory.
    if (items < 1024 && n >= 64) {
      for (int64_t g = 256; g >= 16; g /= 2)
        if (group_fits(k, target, g) && group_rows(k, red, g, plan)) return;
    }
    // A reduce along the contiguous axis with many outputs (softmax's rows, a split sum's chunks):
    // an item a row would walk it alone, its neighbours a row apart (no two loads of a warp in one
    // cache line). A group per row reads it side by side instead, each item every g-th chunk; g
    // leaves each item 8 or more chunks, so the partials' fold (every item reads all g) stays small.
    if (n >= 64 && reads_along(k, red)) {
      for (int64_t g = 256; g >= 16; g /= 2)
        if (n / g >= 8 && group_fits(k, target, g) && group_rows(k, red, g, plan)) return;
    }
  }
  if (k.out.empty()) return;
  // A workgroup along the contiguous output axis (else the last one), after its register upcasts;
  // an odd axis is padded to a multiple of 16 items first when that is cheap (999 -> 1008). Without
  // a reduce, 256 items (fewer, larger workgroups: an elementwise kernel's are short), else 64.
  const UOp& last = k.contiguous ? k.contiguous : k.out.back();
  if (remaining(last, opts) > 16) pad_to(plan, last, 16);
  int64_t n = remaining(last, opts);
  for (int64_t l = std::min<int64_t>(target.local_max[0], k.reduce.empty() ? 256 : 64); l >= 2; l /= 2)
    if (n % l == 0 && plan.add({OptOp::LOCAL, range_axis(last), l})) break;
}

}  // namespace kiln
