// codegen/pipeline.cpp - THE pass list: a scheduler kernel becomes a linearized LIR program.
//
// kPasses is the table of contents: every step, in order, by name. full_rewrite_to_sink runs
// each through traced_step, so KILN_DEBUG=6 shows every step (node counts and time) with the
// rewrites inside it and their rule hits ("graph_rewrite 'symbolic' in step 'late symbolic'");
// a step cannot run without appearing there. The order matters where noted.
#include "codegen/pipeline.hpp"

#include <algorithm>
#include <string_view>

#include "ir/uop_access.hpp"
#include "ir/traverse.hpp"
#include "codegen/lir.hpp"
#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/flat_map.hpp"
#include "symbolic/bounds.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

const PatternMatcher& pm_vector_cleanup();

namespace {

constexpr CodegenPass kPasses[] = {
    // early cleanup: the scheduler's index math, simplified once more on its own
    {"initial symbolic", [](const UOp& s, PassContext&) { return graph_rewrite(s, symbolic(), nullptr, "symbolic"); }},
    // an output axis read as digits (a head and its position, from a reshape) becomes two axes
    {"split digit axes", [](const UOp& s, PassContext&) { return split_digit_axes(s); }},
    // adjacent axes read as one number (a 7 x 7 map's positions) become one axis: longer runs
    // for vectors and register tiles
    {"merge adjacent axes", [](const UOp& s, PassContext& c) { return merge_adjacent_axes(s, c.target); }},
    // a gather's one-hot sum over the table's rows is one gated load of the indexed row
    {"fold one-hot reduces", [](const UOp& s, PassContext&) { return fold_onehot_reduces(s); }},
    // softmax's exp once per element: summed and stored in a row buffer, read back by the output
    {"reuse row values", [](const UOp& s, PassContext& c) { return reuse_row_values(s, c.target, c.given); }},
    // optimisation actions work on RANGEs: they must see the kernel before anything is expanded
    {"apply opts", [](const UOp& s, PassContext& c) {
       if (!c.given) return apply_opts(s, c.target, c.opts);
       UOp out = apply_opts(s, *c.given, c.target);
       if (c.opts) c.opts->insert(c.opts->end(), c.given->begin(), c.given->end());
       return out;
     }},
    {"postopt symbolic", [](const UOp& s, PassContext&) { return graph_rewrite(s, symbolic(), nullptr, "symbolic"); }},
    // a padded loop's last iteration apart (a reduce loop; an output loop where it stays a loop),
    // so the others access memory unmasked; before the expander, while the gates are scalar
    // comparisons the bounds decide
    {"peel partial iterations", [](const UOp& s, PassContext& c) { return peel_partial_iterations(s, c.target, c.given); }},
    // UPCAST/UNROLL ranges disappear: copies first, then the vector lanes (expander.cpp)
    {"expand ranges", [](const UOp& s, PassContext& c) { return expand_ranges(s, c.target); }},
    // launch dimensions: THREAD/output/LOCAL ranges become SPECIAL indices; after the expander so
    // the upcast parts are already registers, before reduce lowering so accumulators live per item
    {"gpudims", [](const UOp& s, PassContext& c) { return add_gpudims(s, c.target, c.dims); }},
    // vectors wider than the target's: before reduce lowering, so accumulators come out narrow too
    {"devectorize", [](const UOp& s, PassContext& c) { return devectorize(s, c.target); }},
    // a bfloat16 matmul's K pairs summed by DOT2 (vdpbf16ps), where the target lists it; on the
    // expanded lanes, before the accumulators (decompose folds their adds into the DOT2s)
    {"pair products", [](const UOp& s, PassContext& c) { return pair_products(s, c.target); }},
    // REDUCE -> accumulators; copies over the same ranges share one loop (register tiles)
    {"lower reduces", [](const UOp& s, PassContext&) { return lower_reduces(s); }},
    {"late symbolic", [](const UOp& s, PassContext&) { return graph_rewrite(s, symbolic() + pm_vector_cleanup(), nullptr, "symbolic"); }},
    // user integer arithmetic wraps (kiln's semantics) where C and LLVM would assume no overflow
    {"wrap signed arithmetic", [](const UOp& s, PassContext&) { return wrap_signed_arith(s); }},
    // index math as int32 when it fits: after all index arithmetic exists, before decompositions
    // that may need to know the integer width
    {"lower index dtype", [](const UOp& s, PassContext&) { return lower_index_dtype(s); }},
    // ops and dtypes the target lacks (transcendentals, pow, threefry, half types, ...)
    {"decompose", [](const UOp& s, PassContext& c) { return decompose(s, c.target); }},
    {"final symbolic",
     [](const UOp& s, PassContext&) { return graph_rewrite(s, symbolic_simple() + pm_vector_cleanup(), nullptr, "symbolic_simple"); }},
};

}  // namespace

std::span<const CodegenPass> codegen_passes() { return kPasses; }

UOp full_rewrite_to_sink(const UOp& ast, const Target& target, LaunchDims& dims, std::vector<Opt>* opts,
                         const std::vector<Opt>* given) {
  PassContext ctx{target, dims, opts, given};
  UOp sink = ast;
  for (const CodegenPass& pass : kPasses) sink = traced_step(pass.name, sink, [&](const UOp& s) { return pass.run(s, ctx); });
  return sink;
}

UOp kernel_for_opts(const UOp& ast, const Target& target, const std::vector<Opt>* given) {
  LaunchDims dims;
  PassContext ctx{target, dims, nullptr, given};
  UOp sink = ast;
  for (const CodegenPass& pass : kPasses) {
    if (std::string_view(pass.name) == "apply opts") break;
    sink = pass.run(sink, ctx);
  }
  return sink;
}

std::vector<UOp> do_linearize(const UOp& sink) { return linearize(sink); }

void check_target_support(const std::vector<UOp>& program, const Target& target, const std::string& kernel) {
  for (const UOp& u : program) {
    const uint32_t op = lir_op(u.op());
    if (op != 0 && !target.supports_op(op))
      fail(ErrorCode::unimplemented, "kernel ", kernel, " needs ", op_name(u.op()), " (", u.dtype().name(),
           "), which the target does not list and kiln cannot decompose; the backend's renderer must support it");
    const DType d = u.dtype().is_ptr() ? u.dtype().base() : u.dtype();
    const uint32_t dt = lir_dtype(d.scalar());
    // a dtype the target only stores: pointers to it, its loads, its conversions and constants (a
    // padded region's stored zeros: the final constant folding turns CAST(0.0f) into a half 0)
    const bool stored = target.stores_dtype(dt) && (u.dtype().is_ptr() || u.op() == Ops::LOAD || u.op() == Ops::CAST ||
                                                    u.op() == Ops::BITCAST || u.op() == Ops::CONST);
    if (dt != KILN_LIR_DTYPE_VOID && dt != KILN_LIR_DTYPE_COUNT && !target.supports_dtype(dt) && !stored)
      fail(ErrorCode::unimplemented, "kernel ", kernel, " computes in ", d.name(), " (", op_name(u.op()),
           "), which the target does not support; use a dtype the device lists (kiln info shows them)");
  }
}

void check_launch_size(const Target& target, const std::string& kernel, int d, int64_t global, int64_t local) {
  if (global >= 0 && global <= target.global_max[d] && local >= 0 && local <= target.local_max[d]) return;
  fail(ErrorCode::resource_exhausted, "kernel ", kernel, ": launch size ", global, " workgroups x ", local,
       " items in dimension ", d, " exceeds the target's limits (", target.global_max[d], " x ", target.local_max[d],
       "); split the work into smaller tensors");
}

namespace {

// float ops weighted by the iterations around them, and bytes of the buffers the kernel names
void estimate(const UOp& ast, ProgramSpec& p) {
  PtrMap<std::vector<const UOpNode*>> loops;
  for (const UOpNode* n : toposort_nodes(ast)) {
    std::vector<const UOpNode*> set;
    for (uint32_t i = 0; i < n->nsrc; ++i)
      for (const UOpNode* r : *loops.find(n->srcs()[i].node()))
        if (std::find(set.begin(), set.end(), r) == set.end()) set.push_back(r);
    if (n->op == Ops::RANGE) set.push_back(n);
    if (n->op == Ops::PARAM) p.bytes += static_cast<double>(std::max<int64_t>(0, n->dtype.ptr_size())) * n->dtype.base().itemsize();
    if ((groups::ALU.has(n->op) || n->op == Ops::REDUCE) && n->dtype.is_float()) {  // (a reduce's own op per term)
      double iters = 1;
      for (const UOpNode* r : set) iters *= static_cast<double>(std::max<int64_t>(1, vmax(UOpAccess::from_node(r).src(0))));
      p.flops += iters * n->dtype.count();
    }
    if (n->op == Ops::REDUCE || n->op == Ops::END)  // what uses it runs outside the loops it closes
      for (uint32_t i = 1; i < n->nsrc; ++i) std::erase(set, n->srcs()[i].node());
    loops[n] = std::move(set);
  }
}

// Every buffer of the kernel stays a parameter where the passes folded away all its accesses (a
// select whose condition the bounds decide, in a peeled loop): a launch passes the schedule's
// buffers by slot, and a renderer declares the parameters the program lists. Such a parameter is
// typed as decompose() types the others (a float16 buffer on a target without float16 is 16-bit
// patterns), or the target check would refuse a kernel that never touches it.
void keep_buffers(const UOp& ast, const Target& target, std::vector<UOp>& linear) {
  auto listed = [&](int64_t slot) {
    return std::any_of(linear.begin(), linear.end(), [&](const UOp& u) { return u.op() == Ops::PARAM && u.arg_int() == slot; });
  };
  std::vector<UOp> missing;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::PARAM && !listed(u.arg_int())) missing.push_back(emulated_param(u, target));
  linear.insert(linear.begin(), missing.begin(), missing.end());
}

}  // namespace

ProgramSpec to_program(const UOp& ast, const Target& target, const std::vector<Opt>* given) {
  // the heuristic and the expander ask the same strides and simplifications many times
  StrideMemo strides;
  SimplifyMemo simplified;
  ProgramSpec p;
  p.ast = ast;
  p.name = ast.op() == Ops::SINK && std::holds_alternative<std::string>(ast.arg()) ? ast.arg_string() : "kernel";
  estimate(ast, p);
  p.sink = full_rewrite_to_sink(ast, target, p.dims, &p.opts, given);
  {  // the pass list's last step before the renderer: one instruction list, in the LIR's form
    StepScope step("linearize", p.sink);
    std::vector<UOp> linear = do_linearize(p.sink);
    keep_buffers(ast, target, linear);
    check_target_support(linear, target, p.name);
    p.lir = to_lir(linear, p.name);
    step.finish([&] { return cat(linear.size(), " instructions"); }, [&] { return lir_text(p.lir.view()); });
  }
  p.var_names = p.lir.var_names;
  for (int d = 0; d < 3; ++d) {
    const UOp &g = p.dims.global[d], &l = p.dims.local[d];
    if (g.is_const() && l.is_const()) check_launch_size(target, p.name, d, g.arg_int(), l.arg_int());
    p.lir.global[d] = g.is_const() ? static_cast<uint32_t>(g.arg_int()) : 0;
    p.lir.local[d] = l.is_const() ? static_cast<uint32_t>(l.arg_int()) : 0;
  }
  if (debug_level() >= 3)  // the AST itself is printed by the scheduler
    log_line(cat("kernel ", p.name, ": ", p.opts.empty() ? "(no opts)" : opts_text(p.opts)));
  return p;
}

}  // namespace kiln
