// codegen/row_values.cpp - a row kernel computes its costly row values once.
//
// A row kernel (schedule/kernelize.cpp's row fusion: softmax on the cpu) sums a costly value over
// the row and then writes the same value, scaled, to every element of it:
//   s   = REDUCE(ADD, exp(x[i,k] - m), k)
//   out = STORE(y[i,j], exp(x[i,j] - m) * (1/s))             (j and k: the same extent)
// which computes every exp twice (exp is 12-25 vector instructions; the rest of the kernel is a few).
// Here the reduce also writes its value into a row buffer on the thread's stack (DEFINE_REG, the
// same kind of buffer STAGE fills), and the store reads it back, ordered after the reduce:
//   row = DEFINE_REG                                        (value dtype x row size)
//   s   = REDUCE(ADD, AFTER(v, STORE(row[k], v)), k)        v = exp(x[i,k] - m)
//   out = STORE(y[i,j], LOAD(AFTER(row, s)[j]) * (1/s))
// The row is at most kMaxRow elements (64 KiB of floats), read back from L1/L2 right after it was
// written. Only where rows run on one thread each (threads, no workgroups: a GPU's registers would
// not hold a row) and only for values with costly math (a layernorm's x - mean is cheaper to
// recompute than to store and load). Runs before the optimisation actions: they see the buffer's
// store and load like any other, and split or pad (gating) them with the row; an action that
// would copy another row into the same buffer (UPCAST of the rows' axis) is refused
// (row_buffer_problem). While the reduce computes, the next row's input is prefetched
// (PREFETCH, on targets that list it).
#include <algorithm>

#include "codegen/ids.hpp"
#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

// Row buffer ids: their own range (codegen/ids.hpp).
constexpr int64_t kRowRegId = ids::kRowBufferRegs.first;

bool has_costly(const UOp& v) {
  for (const UOpNode* n : toposort_nodes(v))
    if (groups::Costly.has(n->op)) return true;
  return false;
}

// The row-major position of `ranges` (each of constant size) in a row buffer.
UOp row_index(const std::vector<UOp>& ranges) {
  UOp at = UOp::cindex(0);
  for (const UOp& r : ranges) at = at * const_size(r) + r;
  return at;
}

// While the reduce computes its costly values from a row already in L1, the next row's inputs
// are prefetched: otherwise the memory stays idle during the reduce, and the next row's first loop
// waits for it (softmax 4096 x 1024 float32 on 2 AVX-512 cores: 1.0 -> 0.7 ms, in a C++ model of
// the kernel). One prefetch per load of the value: after vectorization, one per vector (a cache
// line of float32 with 16 lanes). The last row prefetches itself.
void append_prefetches(const UOp& v, const std::vector<UOp>& ks, const UOp& rows, std::vector<UOp>& after) {
  if (!rows || !rows.src(0).is_const() || const_size(rows) < 2) return;
  UOp next = (rows + 1).lt(rows.src(0)).where(rows + 1, rows);
  for (const UOp& u : toposort(v)) {
    if (u.op() != Ops::LOAD || u.src(0).op() != Ops::INDEX || u.src(0).src(0).op() != Ops::PARAM) continue;
    const std::vector<const UOpNode*> idx = toposort_nodes(u.src(0));
    auto uses = [&](const UOp& r) { return std::find(idx.begin(), idx.end(), r.node()) != idx.end(); };
    if (!uses(rows) || std::none_of(ks.begin(), ks.end(), uses)) continue;
    after.push_back(UOp::make(Ops::PREFETCH, dtypes::void_, {substitute(u.src(0), {{rows, next}})}));
  }
}

// Rewrites one reduce whose value an output recomputes; false when there is none left (a reduce
// already rewritten sums an AFTER).
bool reuse_one(UOp& out, int64_t& id, const Target& target) {
  std::vector<UOp> ends;  // the loop nests of the kernel's outputs
  for (const UOp& u : toposort(out))
    if (u.op() == Ops::END && (u.src(0).op() == Ops::STORE || u.src(0).op() == Ops::GROUP)) ends.push_back(u);
  for (const UOp& red : toposort(out)) {
    if (red.op() != Ops::REDUCE || red.nsrc() < 2 || red.src(0).op() == Ops::AFTER || !has_costly(red.src(0))) continue;
    const UOp& v = red.src(0);
    std::vector<UOp> ks(red.src().begin() + 1, red.src().end());
    int64_t elems = 1;
    for (const UOp& k : ks) elems *= const_size(k);
    if (elems <= 1 || elems * v.dtype().itemsize() > kMaxStageBytes) continue;
    // the value again, over an output nest's innermost loops (the row: row fusion puts it last)
    std::vector<std::pair<UOp, UOp>> reads;
    std::vector<std::vector<UOp>> at;
    UOp outer_loop;  // the loop over rows (the next row is prefetched)
    for (const UOp& e : ends) {
      if (e.nsrc() - 1 < ks.size()) continue;
      std::vector<UOp> js(e.src().end() - static_cast<std::ptrdiff_t>(ks.size()), e.src().end());
      std::vector<std::pair<UOp, UOp>> to_j;
      bool same = true;
      for (size_t i = 0; i < ks.size(); ++i) {
        same &= const_size(js[i]) == const_size(ks[i]) && !(js[i] == ks[i]);
        to_j.push_back({ks[i], js[i]});
      }
      if (!same) continue;
      UOp w = substitute(v, to_j);
      const std::vector<const UOpNode*> body = toposort_nodes(e.src(0));
      if (std::find(body.begin(), body.end(), w.node()) == body.end()) continue;
      reads.push_back({w, UOp{}});
      at.push_back(js);
      if (e.nsrc() - 1 > ks.size()) outer_loop = e.src(e.nsrc() - 1 - ks.size());
    }
    if (reads.empty()) continue;
    UOp row = UOp::make(Ops::DEFINE_REG, v.dtype().ptr(elems, AddrSpace::reg), {}, Arg{id++});
    UOp put = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, row.dtype(), {row, row_index(ks)}), v});
    std::vector<UOp> after{v, put};
    if (target.supports_op(KILN_LIR_OP_PREFETCH)) append_prefetches(v, ks, outer_loop, after);
    std::vector<UOp> src(red.src().begin(), red.src().end());
    src[0] = UOp::make(Ops::AFTER, v.dtype(), after);
    UOp reduced = red.replace_src(src);
    UOp ready = UOp::make(Ops::AFTER, row.dtype(), {row, reduced});
    for (size_t i = 0; i < reads.size(); ++i)
      reads[i].second = UOp::make(Ops::LOAD, v.dtype(), {UOp::make(Ops::INDEX, row.dtype(), {ready, row_index(at[i])})});
    reads.push_back({red, reduced});
    out = substitute(out, reads);
    return true;
  }
  return false;
}

}  // namespace

std::string row_buffer_problem(const UOp& ast, const UOp& r) {
  if (range_type(r) != AxisType::LOOP) return {};  // (the row's own reduces close before the buffer is read)
  for (const UOpNode* n : toposort_nodes(ast)) {
    if (n->op != Ops::INDEX || n->srcs()[0].op() != Ops::AFTER) continue;
    const UOp& buf = n->srcs()[0].src(0);
    const auto* id = std::get_if<int64_t>(&buf.node()->arg);
    if (buf.op() != Ops::DEFINE_REG || !id || !ids::kRowBufferRegs.contains(*id)) continue;
    const std::vector<const UOpNode*> idx = toposort_nodes(n->srcs()[1]);
    if (std::find(idx.begin(), idx.end(), r.node()) == idx.end())
      return cat("its copies would share the kernel's row buffer (softmax's exp, computed once per row): axis ", range_axis(r),
                 " does not index the row; thread it instead");
  }
  return {};
}

UOp reuse_row_values(const UOp& ast, const Target& target, const std::vector<Opt>* given) {
  if (!target.runs_rows()) return ast;
  UOp out = ast;
  for (int64_t id = kRowRegId; reuse_one(out, id, target);) {
  }
  // a given action list was made for the kernel as the scheduler made it: one that expands an
  // axis outside the row (which the buffer forbids) gets that kernel
  if (given && out != ast)
    for (const Opt& o : *given)
      if (const UOp r = find_axis(out, o.axis); r && opt_action(o.op).expands && !row_buffer_problem(out, r).empty()) return ast;
  return out;
}

}  // namespace kiln
