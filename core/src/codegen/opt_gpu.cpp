// codegen/opt_gpu.cpp - workgroup actions for targets with local memory (OpenCL, HIP).
#include <algorithm>

#include "codegen/opt.hpp"
#include "plugin/device.hpp"

namespace kiln {

void add_workgroup_opts(const KernelShape& k, const Target& target, std::vector<Opt>& opts) {
  if (k.out.empty()) return;
  // A workgroup along the contiguous output axis (else the last one), after its register upcasts.
  const UOp& last = k.contiguous ? k.contiguous : k.out.back();
  int64_t n = const_size(last);
  for (const Opt& o : opts)
    if (o.axis == range_axis(last) && o.op == OptOp::UPCAST) n /= o.amount;
  for (int64_t l = std::min<int64_t>(target.local_max[0], 64); l >= 2; l /= 2)
    if (n % l == 0 && n / l >= 1) {
      opts.push_back({OptOp::LOCAL, range_axis(last), l});
      break;
    }
}

}  // namespace kiln
