// codegen/opt/opt_gpu.cpp - workgroup actions for targets with local memory (OpenCL, HIP).
#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"

namespace kiln {

void add_workgroup_opts(const KernelShape& k, const Target& target, OptPlan& plan) {
  const std::vector<Opt>& opts = plan.opts();
  // A reduction with few outputs would leave a few work items alone with long loops: spread the
  // reduce over a workgroup (GROUP) and let the partial results meet in local memory.
  if (!k.reduce.empty() && target.has(KILN_TARGET_HAS_SHARED) && target.shared_max > 0) {
    int64_t items = 1;
    for (const UOp& r : k.out) items *= std::max<int64_t>(1, remaining(r, opts));
    const UOp& red = k.reduce.back();
    int64_t n = remaining(red, opts);
    if (items < 1024 && n >= 64) {
      for (int64_t g = 256; g >= 16; g /= 2) {
        bool fits = g <= target.local_prod_max && g <= target.local_max[0] &&
                    static_cast<uint64_t>(g) * 16 * static_cast<uint64_t>(k.itemsize) <= target.shared_max;
        if (fits && pad_to(plan, red, g) && plan.add({OptOp::GROUP, range_axis(red), g})) return;
      }
    }
  }
  if (k.out.empty()) return;
  // A workgroup along the contiguous output axis (else the last one), after its register upcasts;
  // an odd axis is padded to a multiple of 16 items first when that is cheap (999 -> 1008).
  const UOp& last = k.contiguous ? k.contiguous : k.out.back();
  if (remaining(last, opts) > 16) pad_to(plan, last, 16);
  int64_t n = remaining(last, opts);
  for (int64_t l = std::min<int64_t>(target.local_max[0], 64); l >= 2; l /= 2)
    if (n % l == 0 && plan.add({OptOp::LOCAL, range_axis(last), l})) break;
}

}  // namespace kiln
