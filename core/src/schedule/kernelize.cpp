// schedule/kernelize.cpp - kernel boundaries: which tensor nodes get their own buffer.
//
// The rules, each with the case that needs it:
//  - Outputs (the SINK's sources) are realized, unless they already are a buffer (a realized
//    tensor reshaped is still that buffer).
//  - CONTIGUOUS is realized: the user asked for a buffer (x.contiguous() of a buffer is a no-op).
//  - COPY is realized on its target device, and its source must be a buffer: copies move memory.
//  - ASSIGN writes its target buffer: the kernel's output is the target, not a new buffer. When
//    the value reads the target at another element than the one it writes (a.assign(a.T)), the
//    value is realized first: no kernel reads and writes one buffer through different indices.
//  - A REDUCE_AXIS is realized when its result is consumed in a different iteration space: when
//    it is expanded on the way to a consumer (x.sum() + y: the sum would be recomputed for every
//    element of y), or feeds another reduce (nested reduce loops), or is used by several consumers,
//    directly or through a shared elementwise/movement chain (two outputs realized together share
//    it instead of computing it twice). Except row fusion (row_local), on devices that run a row
//    per thread (ScheduleContext::row_fusion: the cpu): a reduce over the innermost axes, at most
//    kMaxRow elements and at least two rows, that is only broadcast back over those axes (softmax's max and sum,
//    layernorm's mean and variance) stays in its consumer's kernel, which computes it once per
//    row before its loop over the row: one pass over memory instead of two. And a nested reduce
//    (nested_in_reduce): one read once per element by a single other reduce, over memory it
//    streams (x.sum(2).relu().sum(1)), runs inside that reduce's loop, with no buffer.
//  - Elementwise and movement chains fuse into every consumer (recomputing them is cheaper than a
//    round trip through memory), except when a reduce reads them broadcast (EXPAND, then reduce)
//    and they hold costly math (groups::Costly: exp, log, sqrt, reciprocal) or sit on a reduce:
//    the reduce would recompute them once per use (gelu(x @ w1.T + b1) @ w2.T: the gelu 512 times
//    per element; relu(x @ w1.T + b1) @ w2.T: the bias and relu inside the second matmul's inner
//    loop; softmax's probabilities in attention's @ v). The chain's top is realized, and group.cpp
//    fuses it into the kernel of the reduce below it (a matmul's bias and activation run as its
//    epilogue; a variance's mean, read in the same kernel, gets no buffer). A cheap chain over
//    buffers only (x * 2 in (x * 2) @ w) is still recomputed.
//    Another exception is a PAD that a reduce
//    reads many times over (a padded convolution reads each input element ~k*k*Cout times): it
//    is realized, so the reduce kernel loads plain memory instead of testing the padding's
//    bounds at every load (which also keeps its loads vectorizable).
//  - One contraction per kernel (is_contraction: a matmul or convolution, compute-bound): where a
//    kernel would compute two side by side (silu(x @ w1) * (x @ w3), a gated FFN), all but the
//    largest get a buffer, and the elementwise that combines them runs as the kept one's epilogue
//    (group.cpp does not merge them back). The optimizer plans a kernel's register tile and its
//    panels for one reduce: two in one tile hold twice the accumulators and stage neither panel
//    (docs/performance.md, "One contraction per kernel": two staged matmuls, 2.6x faster), against
//    one extra round trip of a matmul's output through memory.
//  - A reduce of at least 32768 elements per output becomes a tree of kernels (split_reduce.cpp):
//    the first reduces bounded chunks in parallel, the next ones combine the partials.
// Then group.cpp decides which realized nodes share a kernel (multi-output kernels); a shared
// reduce all of whose consumers share its kernel loses its buffer again.
#include "schedule/kernelize.hpp"

#include <algorithm>
#include <unordered_map>

#include "ir/shape.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "schedule/schedule.hpp"
#include "support/check.hpp"
#include "symbolic/bounds.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

std::vector<UOp> shape_of(const GraphInfo& g, const UOp& u) { return *g.shape.find(u.node()); }

int64_t max_size(const std::vector<UOp>& shape) {
  int64_t n = 1;
  for (const UOp& d : shape) n *= d.is_const() ? d.arg_int() : vmax(d);
  return n;
}

// A node whose value is exactly an input buffer's memory in order.
bool buffer_view(const UOp& u) {
  const UOp* x = &u;
  while (x->op() == Ops::RESHAPE) x = &x->src(0);
  return x->op() == Ops::PARAM;
}
const UOp& view_base(const UOp& u) {
  const UOp* x = &u;
  while (x->op() == Ops::RESHAPE) x = &x->src(0);
  return *x;
}

// An ASSIGN kernel may read its target only at the element it writes.
bool in_place_safe(const UOp& ast) {
  UOp store_index;
  std::vector<UOp> target_reads;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::STORE) store_index = u.src(0).src(1);
    if (u.op() == Ops::LOAD && u.src(0).src(0).op() == Ops::PARAM && u.src(0).src(0).arg_int() == 0)
      target_reads.push_back(u.src(0).src(1));
  }
  for (const UOp& r : target_reads)
    if (!(r == store_index)) return false;
  return true;
}

}  // namespace

GraphInfo analyze(const UOp& sink) {
  GraphInfo g;
  for (const UOpNode* node : toposort_nodes(sink)) g.order.push_back(UOpAccess::from_node(node));
  for (const UOp& n : g.order) {
    for (const UOp& s : n.src()) ++g.consumers[s.node()];
    std::vector<UOp> shape;
    std::string dev;
    auto src_shape = [&](size_t i) { return shape_of(g, n.src(i)); };
    switch (n.op()) {
      case Ops::SINK: case Ops::DEVICE: break;
      case Ops::PARAM: shape = {UOp::cindex(n.dtype().ptr_size())}; dev = n.src(0).arg_string(); break;
      case Ops::CONST: dev = n.nsrc() ? n.src(0).arg_string() : ""; break;
      case Ops::DEFINE_VAR: dev = n.nsrc() ? n.src(0).arg_string() : ""; break;  // (a lifted scalar keeps its device)
      case Ops::IOTA: shape = {UOp::cindex(n.arg_int())}; dev = n.src(0).arg_string(); break;
      case Ops::RESHAPE: case Ops::EXPAND: case Ops::PERMUTE: case Ops::PAD: case Ops::SHRINK: case Ops::FLIP:
      case Ops::REDUCE_AXIS:
        shape = shape_of(n, src_shape(0));
        break;
      case Ops::COPY: shape = src_shape(0); dev = n.src(1).arg_string(); break;
      case Ops::WHERE: shape = src_shape(1); break;
      default:
        if (n.nsrc()) shape = src_shape(0);
    }
    for (UOp& d : shape)
      if (!d.is_const() && d.op() != Ops::DEFINE_VAR) d = simplify(d);  // PAD/SHRINK arithmetic on dims
    if (dev.empty())
      for (const UOp& s : n.src())
        if (const std::string* d = g.device.find(s.node()); d && !d->empty()) {
          dev = *d;
          break;
        }
    g.shape[n.node()] = std::move(shape);
    g.device[n.node()] = std::move(dev);
  }
  return g;
}

namespace {

struct Decider {
  Decider(const GraphInfo& info, const ScheduleContext& context) : g(info), ctx(context) {}
  const GraphInfo& g;
  const ScheduleContext& ctx;
  PtrMap<char> realize;

  int users_of(const UOpNode* n) const {
    const int* c = g.consumers.find(n);
    return c ? *c : 0;
  }

  // PADs fused into reduce `r` whose elements the reduce reads at least kRereads times each.
  void realize_reread_pads(const UOp& r) {
    constexpr int64_t kRereads = 16;
    int64_t reads = max_size(shape_of(g, r.src(0)));
    std::vector<const UOpNode*> stack{r.src(0).node()};
    PtrMap<char> seen;
    while (!stack.empty()) {
      const UOpNode* x = stack.back();
      stack.pop_back();
      if (seen.contains(x) || realize.contains(x) || x->op == Ops::PARAM || x->op == Ops::REDUCE_AXIS) continue;
      seen[x] = 1;
      if (x->op == Ops::PAD && reads >= kRereads * max_size(*g.shape.find(x))) {
        realize[x] = 1;
        continue;
      }
      for (uint32_t i = 0; i < x->nsrc; ++i) stack.push_back(x->srcs()[i].node());
    }
  }

  // Whether the elementwise chain below n (down to reduces, realized nodes and buffers) holds
  // costly math or a reduce: worth a buffer when a reduce reads n broadcast.
  bool worth_storing(const UOp& n) const {
    std::vector<const UOpNode*> stack{n.node()};
    PtrMap<char> seen;
    while (!stack.empty()) {
      const UOpNode* x = stack.back();
      stack.pop_back();
      if (seen.contains(x) || x->op == Ops::PARAM || x->op == Ops::BUFFER) continue;
      seen[x] = 1;
      if (groups::Costly.has(x->op) || (x->op == Ops::REDUCE_AXIS && x != n.node())) return true;
      if (realize.contains(x) || !(groups::Elementwise.has(x->op) || groups::Movement.has(x->op))) continue;
      for (uint32_t i = 0; i < x->nsrc; ++i) stack.push_back(x->srcs()[i].node());
    }
    return false;
  }

  // Row fusion: whether reduce (or elementwise chain over a reduce) n is used only broadcast back
  // over exactly the axes it reduced, into the space it reduced from, and from there only by
  // elementwise ops, by reduces over the same axes (softmax's sum after its max) and by realized
  // nodes of that space. Then the consumer's kernel computes it per row, before its loop over the
  // row (the linearizer hoists it out), and a row is read from memory once.
  bool row_local(const UOp& n) const {
    const UOpNode* red = nullptr;
    for (std::vector<const UOpNode*> st{n.node()}; !st.empty() && !red;) {  // the reduce under a chain
      const UOpNode* x = st.back();
      st.pop_back();
      if (x->op == Ops::REDUCE_AXIS) red = x;
      else if (groups::Elementwise.has(x->op) && (x == n.node() || !realize.contains(x)))
        for (uint32_t i = 0; i < x->nsrc; ++i) st.push_back(x->srcs()[i].node());
    }
    if (!red || !ctx.row_fusion(*g.device.find(red))) return false;
    const UOp& r = UOpAccess::from_node(red);
    const std::vector<UOp>& space = *g.shape.find(r.src(0).node());
    const std::vector<UOp>& narrow = *g.shape.find(red);
    std::vector<int64_t> axes(r.arg_ints().begin() + 1, r.arg_ints().end());
    int64_t row = 1, rows = 1;
    for (int64_t a : axes) row *= space[a].is_const() ? space[a].arg_int() : kMaxRow + 1;
    for (const UOp& d : space) rows *= d.is_const() ? d.arg_int() : 2;
    // (one row would run on one thread; two kernels thread the normalising pass at least)
    if (row > kMaxRow || rows / std::max<int64_t>(1, row) < 2) return false;
    // the reduced axes are the innermost ones (a row): the kernel's loops run in axis order, and a
    // reduce is hoisted out of the loops it does not depend on only if they are inside the others
    for (size_t i = 0; i < space.size(); ++i)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) == axes.end() &&
          !(space[i].is_const() && space[i].arg_int() == 1) && static_cast<int64_t>(i) > *std::min_element(axes.begin(), axes.end()))
        return false;
    struct Item {
      const UOpNode* x;
      bool wide;  // in the reduce's source space (after the broadcast)
    };
    std::vector<Item> st{{n.node(), false}};
    PtrMap<char> seen;
    while (!st.empty()) {
      Item it = st.back();
      st.pop_back();
      const auto* us = users_.find(it.x);
      if (!us) return false;
      for (const UOpNode* u : *us) {
        const std::vector<UOp>& shape = *g.shape.find(u);
        if (realize.contains(u)) {
          if (!it.wide || shape != space) return false;
          continue;
        }
        bool wide = it.wide;
        if (u->op == Ops::EXPAND) {
          if (wide || *g.shape.find(it.x) != narrow || shape != space) return false;
          wide = true;
        } else if (u->op == Ops::REDUCE_AXIS) {
          const UOp& ur = UOpAccess::from_node(u);
          if (!wide || std::vector<int64_t>(ur.arg_ints().begin() + 1, ur.arg_ints().end()) != axes) return false;
          wide = false;
        } else if (!groups::Elementwise.has(u->op)) {
          return false;
        }
        if (!seen.contains(u)) {
          seen[u] = 1;
          st.push_back({u, wide});
        }
      }
    }
    return true;
  }
  // Nested reduce: whether reduce n is read by exactly one other reduce, each of its elements
  // once (through elementwise ops and RESHAPEs only: no broadcast, no other reader), and itself
  // streams its source (no EXPAND under it: a reduction of memory, not a matmul, whose tiling
  // wants a kernel of its own). Then the outer reduce's kernel runs n's loop inside its own
  // (x.sum(2).relu().sum(1), (a + a).sum(1).sum(0)): the same arithmetic, once, and n's result
  // never goes through memory. An outer reduce that row fusion would recompute in several
  // kernels keeps n stored. So does one whose loop, times the loops around it, would reach the
  // split's length (4096 x 4096 summed by rows, then the rows: one accumulator over 16M values on
  // one thread, where the split keeps precision and parallelism): nest_len_ keeps each nested
  // reduce's elements per output of the kernel's loop nest. And one that reads more than
  // kMaxNestedRead elements: the fused kernel saves a launch and a small buffer, which pays for
  // small reduces (32^3: 5 us -> 4 us; 2^18 and 2^20 elements even or faster), but on a 2-core
  // AVX-512 host x.sum(2).relu().sum(1) over 256 x 64 x 256 ran 1.3-1.7x slower nested than as a
  // row kernel and a small one (medians of 200, four alternating rounds), cause not yet known.
  static constexpr int64_t kMaxNestedRead = int64_t{1} << 20;
  PtrMap<int64_t> nest_len_;
  int64_t reduce_len(const UOpNode* r) const {
    return max_size(*g.shape.find(r->srcs()[0].node())) / std::max<int64_t>(1, max_size(*g.shape.find(r)));
  }
  bool nested_in_reduce(const UOp& n) {
    const UOpNode* outer = nullptr;
    std::vector<const UOpNode*> st{n.node()};
    PtrMap<char> seen;
    while (!st.empty()) {
      const UOpNode* x = st.back();
      st.pop_back();
      const auto* us = users_.find(x);
      if (!us) return false;  // (an output: stored anyway)
      for (const UOpNode* u : *us) {
        if (realize.contains(u)) return false;
        if (u->op == Ops::REDUCE_AXIS) {
          if (outer && outer != u) return false;
          outer = u;
        } else if (groups::Elementwise.has(u->op) || u->op == Ops::RESHAPE) {
          if (!seen.contains(u)) seen[u] = 1, st.push_back(u);
        } else {
          return false;
        }
      }
    }
    if (!outer || (!realize.contains(outer) && row_local(UOpAccess::from_node(outer)))) return false;
    const int64_t* around = nest_len_.find(outer);
    int64_t len = reduce_len(n.node()) * (around ? *around : reduce_len(outer));
    if (len >= kSplitReduceAt) return false;
    if (max_size(*g.shape.find(n.src(0).node())) > kMaxNestedRead) return false;
    st = {n.src(0).node()};
    seen = {};
    while (!st.empty()) {
      const UOpNode* x = st.back();
      st.pop_back();
      if (seen.contains(x) || realize.contains(x) || x->op == Ops::PARAM) continue;
      seen[x] = 1;
      if (x->op == Ops::EXPAND && *g.shape.find(x) != *g.shape.find(x->srcs()[0].node())) return false;
      for (uint32_t i = 0; i < x->nsrc; ++i) st.push_back(x->srcs()[i].node());
    }
    nest_len_[n.node()] = len;
    return true;
  }
  static constexpr int64_t kMaxRow = 16384;
  PtrMap<std::vector<const UOpNode*>> users_;

  void decide(const UOp& sink) {
    PtrMap<std::vector<const UOpNode*>>& users = users_;  // row_local reads them too
    for (const UOp& n : g.order)
      for (const UOp& s : n.src()) (*users.emplace(s.node()).first).push_back(n.node());
    for (const UOp& s : sink.src())
      if (!buffer_view(s)) realize[s.node()] = 1;
    for (const UOp& n : g.order) {
      if (n.op() == Ops::CONTIGUOUS && !buffer_view(n.src(0))) realize[n.node()] = 1;
      if (n.op() == Ops::COPY) {
        realize[n.node()] = 1;
        if (!buffer_view(n.src(0))) realize[n.src(0).node()] = 1;
      }
      if (n.op() == Ops::ASSIGN) {
        if (!buffer_view(n.src(0)))
          fail(ErrorCode::invalid_argument, "assign: the target must be a realized tensor (a buffer), not a computed view");
        realize[n.node()] = 1;
      }
    }
    // reverse toposort: a node's consumers are decided before it
    struct Flags {
      bool expanded = false, in_reduce = false, shared = false;
    };
    PtrMap<Flags> flags;
    for (size_t i = g.order.size(); i-- > 0;) {
      const UOp& n = g.order[i];
      Flags f;
      if (const auto* us = users.find(n.node()))
        for (const UOpNode* c : *us) {
          Flags base = realize.contains(c) ? Flags{} : *flags.find(c);
          if (c->op == Ops::EXPAND) {
            const auto& in = *g.shape.find(n.node());
            const auto& out = *g.shape.find(c);
            for (size_t d = 0; d < in.size(); ++d) base.expanded |= !(in[d] == out[d]);
          }
          // (a row-fused reduce's result is broadcast, not the values it sums: they are read once)
          if (c->op == Ops::REDUCE_AXIS) base.in_reduce = true, base.expanded = false;
          if (!realize.contains(c) && users_of(c) > 1) base.shared = true;
          f.expanded |= base.expanded;
          f.in_reduce |= base.in_reduce;
          f.shared |= base.shared;
        }
      flags[n.node()] = f;
      if (groups::Elementwise.has(n.op()) && f.expanded && f.in_reduce && !realize.contains(n.node()) && worth_storing(n) &&
          !row_local(n)) {
        realize[n.node()] = 1;
        flags[n.node()] = Flags{};
      }
      if (n.op() == Ops::REDUCE_AXIS) realize_reread_pads(n);
      if (n.op() == Ops::REDUCE_AXIS && !realize.contains(n.node()) &&
          (f.expanded || f.in_reduce || f.shared || users_of(n.node()) > 1) && !row_local(n) && !nested_in_reduce(n))
        realize[n.node()] = 1;
    }
    separate_contractions();
    limit_buffers();
  }

  // One contraction per kernel (is_contraction): every contraction but the largest that a kernel
  // would compute side by side gets a buffer, and group() does not merge it back.
  void separate_contractions() {
    std::vector<UOp> roots;  // (taken first: the loop realizes more)
    for (const UOp& n : g.order)
      if (realize.contains(n.node()) && n.op() != Ops::COPY) roots.push_back(n);
    for (const UOp& root : roots) {
      std::vector<UOp> found;  // the kernel's reduces that are not nested in another (those are realized)
      std::vector<const UOpNode*> stack{root.node()};
      PtrMap<char> seen;
      while (!stack.empty()) {
        const UOpNode* x = stack.back();
        stack.pop_back();
        if (seen.contains(x) || x->op == Ops::PARAM || (x != root.node() && realize.contains(x))) continue;
        seen[x] = 1;
        if (x->op == Ops::REDUCE_AXIS) {
          if (is_contraction(g, realize, UOpAccess::from_node(x))) found.push_back(UOpAccess::from_node(x));
          continue;
        }
        for (uint32_t i = 0; i < x->nsrc; ++i) stack.push_back(x->srcs()[i].node());
      }
      if (found.size() < 2) continue;
      std::stable_sort(found.begin(), found.end(), [&](const UOp& a, const UOp& b) {
        return max_size(shape_of(g, a.src(0))) > max_size(shape_of(g, b.src(0)));
      });
      for (size_t i = 1; i < found.size(); ++i) realize[found[i].node()] = 1;
    }
  }

  // A kernel binds at most kMaxKernelReads input buffers (the runtime launches at most 64 with its
  // outputs and lifted values): where one would read more - a cat or sum of many tensors - the
  // largest computed value under it that reads at most that many gets a buffer of its own, until
  // every kernel fits. The graph's own nodes are split, so the result is the same arithmetic.
  static constexpr size_t kMaxKernelReads = 48;
  static constexpr char kSplitBoundary = 2;  // a realize entry group() must keep as its own kernel
  void limit_buffers() {
    auto leaf = [&](const UOpNode* x) { return realize.contains(x) || x->op == Ops::PARAM; };
    for (const UOp& root : g.order) {
      if (!realize.contains(root.node()) || root.op() == Ops::COPY) continue;
      for (;;) {
        // the buffers each computed node under root reads, children before parents
        PtrMap<std::vector<const UOpNode*>> reads;
        std::vector<const UOpNode*> inner;
        for (const UOpNode* x : toposort_nodes(root, [&](const UOpNode* y) { return y != root.node() && leaf(y); })) {
          if (leaf(x) && x != root.node()) continue;
          std::vector<const UOpNode*> r;
          for (uint32_t i = 0; i < x->nsrc; ++i) {
            const UOpNode* c = x->srcs()[i].node();
            if (leaf(c)) r.push_back(c);
            else if (const auto* cr = reads.find(c)) r.insert(r.end(), cr->begin(), cr->end());
          }
          std::sort(r.begin(), r.end());
          r.erase(std::unique(r.begin(), r.end()), r.end());
          reads[x] = std::move(r);
          if (x != root.node()) inner.push_back(x);
        }
        if (reads.find(root.node())->size() <= kMaxKernelReads) break;
        const UOpNode* best = nullptr;
        size_t best_reads = 1;
        for (const UOpNode* x : inner) {
          size_t k = reads.find(x)->size();
          if (k > best_reads && k <= kMaxKernelReads && (groups::Elementwise.has(x->op) || x->op == Ops::REDUCE_AXIS))
            best = x, best_reads = k;
        }
        if (!best) break;  // nothing to split (reads that many buffers directly): the runtime reports it
        realize[best] = kSplitBoundary;
      }
    }
  }
};

}  // namespace

// Kernel names are unique within a schedule ("r_4096_1024", then "r_4096_1024n1", ...; the
// same program always gets the same names): a backend may build a schedule's kernels as one
// program (compile_many), where entries must differ, and per-kernel timings stay readable.
static void unique_kernel_names(Template& t) {
  std::unordered_map<std::string, int> seen;
  for (TemplateKernel& k : t.kernels) {
    if (k.body.op() != Ops::SINK || !std::holds_alternative<std::string>(k.body.arg())) continue;
    const std::string& name = k.body.arg_string();
    int n = seen[name]++;
    if (n > 0) k.body = k.body.replace_arg(Arg{name + "n" + std::to_string(n)});
  }
}

bool is_contraction(const GraphInfo& g, const PtrMap<char>& realize, const UOp& r) {
  constexpr int64_t kContractionReuse = 16;
  if (r.arg_ints()[0] != static_cast<int64_t>(Ops::ADD)) return false;
  const UOp* product = &r.src(0);
  while (product->op() == Ops::CAST) product = &product->src(0);  // (a half matmul accumulating wider)
  if (product->op() != Ops::MUL) return false;
  const int64_t terms = max_size(shape_of(g, *product));
  // the elements of the buffers under one factor, through any computation ((x * 2) @ w), an IOTA
  // counting as a buffer of its length (a generated input: random numbers are bits of a counter)
  auto read = [&](const UOp& factor) {
    int64_t n = 0;
    std::vector<const UOpNode*> stack{factor.node()};
    PtrMap<char> seen;
    while (!stack.empty()) {
      const UOpNode* x = stack.back();
      stack.pop_back();
      if (seen.contains(x)) continue;
      seen[x] = 1;
      if (x->op == Ops::PARAM || x->op == Ops::IOTA || realize.contains(x)) {
        n += max_size(*g.shape.find(x));
        continue;
      }
      for (uint32_t i = 0; i < x->nsrc; ++i) stack.push_back(x->srcs()[i].node());
    }
    return n;
  };
  for (const UOp& factor : product->src())
    if (int64_t n = read(factor); n == 0 || terms < kContractionReuse * n) return false;
  return true;
}

void find_boundaries(ScheduleState& s) {
  s.g = analyze(s.sink);
  Decider d(s.g, *s.ctx);
  d.decide(s.sink);
  s.realize = std::move(d.realize);
}

void group(ScheduleState& s) { s.groups = group_kernels(s.g, s.sink, s.realize); }

void rangeify(ScheduleState& s) {
  const GraphInfo& g = s.g;
  const UOp& sink = s.sink;
  const PtrMap<char>& realize = s.realize;
  const std::vector<std::vector<const UOpNode*>>& groups = s.groups;
  Template& t = s.t;
  PtrMap<BufRef> realized;
  auto new_local = [&](const UOp& n, const std::string& dev) {
    t.locals.push_back(LocalBuf{dev, n.dtype(), max_size(shape_of(g, n)), false, -1});
    return BufRef{true, static_cast<uint32_t>(t.locals.size() - 1)};
  };
  auto buffer_of = [&](const UOp& n) -> BufRef {
    if (buffer_view(n)) return BufRef{false, static_cast<uint32_t>(view_base(n).arg_int())};
    const BufRef* b = realized.find(n.node());
    KILN_CHECK(b, "no buffer for ", op_name(n.op()));
    return *b;
  };
  PtrMap<int> producer;                         // realized node -> kernel index
  std::vector<std::vector<int>> writers(s.n_inputs);  // input slot -> ASSIGN kernels (program order once sorted)
  std::vector<int64_t> assign_seq;                  // kernel index -> its ASSIGN's program order (-1: no ASSIGN)
  // reader kernel, input slot, the writer kernel whose result it reads (-1: the original contents)
  struct Read {
    int kernel;
    uint32_t slot;
    int writer;
  };
  std::vector<Read> input_reads;
  PtrMap<int> group_of;
  for (size_t i = 0; i < groups.size(); ++i)
    for (const UOpNode* m : groups[i]) group_of[m] = static_cast<int>(i);
  auto value_of = [](const UOp& n) { return n.op() == Ops::CONTIGUOUS ? n.src(0) : n.op() == Ops::ASSIGN ? n.src(1) : n; };
  // Builds kernel `gi` (its members' values) once every kernel it reads is built; false otherwise.
  auto emit = [&](int gi) -> bool {
    const std::vector<const UOpNode*>& members = groups[gi];
    const UOp n = UOpAccess::from_node(members.back());
    auto member = [&](const UOpNode* x) { const int* j = group_of.find(x); return j && *j == gi; };
    // what this kernel reads: realized nodes (their producers run first) and input buffers
    auto stop = [&](const UOpNode* x) { return !member(x) && (realize.contains(x) || x->op == Ops::PARAM); };
    std::vector<const UOpNode*> reads;
    for (const UOpNode* m : members) {
      UOp mu = UOpAccess::from_node(m);
      for (const UOpNode* r : toposort_nodes(mu.op() == Ops::COPY ? mu.src(0) : value_of(mu), stop))
        if (!member(r)) {
          if (realize.contains(r) && !producer.contains(r)) return false;
          reads.push_back(r);
        }
    }
    const std::string& dev = *g.device.find(n.node());
    TemplateKernel k;
    k.device = dev;
    int index = static_cast<int>(t.kernels.size());
    UOp value = value_of(n);
    for (const UOpNode* r : reads) {
      if (const int* j = producer.find(r)) {
        k.after.push_back(*j);
        if (r->op == Ops::ASSIGN) {
          uint32_t slot = static_cast<uint32_t>(view_base(UOpAccess::from_node(r).src(0)).arg_int());
          input_reads.push_back({index, slot, *j});
        }
      } else if (r->op == Ops::PARAM) {
        input_reads.push_back({index, static_cast<uint32_t>(std::get<int64_t>(r->arg)), -1});
      }
    }
    if (n.op() == Ops::COPY) {
      BufRef src = buffer_of(n.src(0));
      BufRef out = new_local(n, dev);
      k.is_copy = true;
      k.body = UOp::make(Ops::COPY, n.dtype(), {UOp::make(Ops::DEVICE, dtypes::void_, {}, Arg{*g.device.find(n.src(0).node())}),
                                                 n.src(1)});
      k.bufs = {out, src};
      realized[n.node()] = out;
    } else if (n.op() == Ops::ASSIGN) {
      BufRef out = buffer_of(n.src(0));
      k.body = rangeify_kernel(g, {{n, value, out}}, realized, k.bufs);
      if (!in_place_safe(k.body)) {  // stage the value in a temporary buffer first
        TemplateKernel tmp;
        tmp.device = dev;
        tmp.after = k.after;
        BufRef staged = new_local(value, dev);
        tmp.body = rangeify_kernel(g, {{value, value, staged}}, realized, tmp.bufs);
        // (its reads are the value's, recorded above under `index`, this kernel's: each input at the
        // version it reads, so an input an earlier assign wrote is read after that write, not before)
        realized[value.node()] = staged;
        producer[value.node()] = index;
        t.kernels.push_back(std::move(tmp));
        assign_seq.push_back(-1);
        k.after.push_back(index++);
        k.body = rangeify_kernel(g, {{n, value, out}}, realized, k.bufs);
      }
      writers[out.index].push_back(index);
      realized[n.node()] = out;
    } else {
      std::vector<KernelRoot> roots;
      for (const UOpNode* m : members) {
        UOp mu = UOpAccess::from_node(m);
        roots.push_back({mu, value_of(mu), new_local(mu, dev)});
      }
      k.body = rangeify_kernel(g, roots, realized, k.bufs);
      for (const KernelRoot& r : roots) realized[r.node.node()] = r.out;
    }
    for (const UOpNode* m : members) producer[m] = index;
    assign_seq.push_back(n.op() == Ops::ASSIGN && std::holds_alternative<int64_t>(n.arg()) ? n.arg_int() : -1);
    t.kernels.push_back(std::move(k));
    return true;
  };
  // a kernel is built at its last member (in graph order), or later when it reads a kernel whose
  // last member comes later still (one that it does not depend on the other way)
  std::vector<int> waiting;
  for (const UOp& n : g.order) {
    const int* gi = group_of.find(n.node());
    if (!gi || groups[*gi].back() != n.node()) continue;
    if (!emit(*gi)) {
      waiting.push_back(*gi);
      continue;
    }
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < waiting.size(); ++i)
        if (emit(waiting[i])) {
          waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
          progress = true;
          break;
        }
    }
  }
  KILN_CHECK(waiting.empty(), "kernelize: ", waiting.size(), " kernels wait on each other");
  // Writes to one buffer happen in program order (the ASSIGN's arg, see Tensor::assign), not in
  // graph order: a.assign(x); v.assign(y) with v a view of a's buffer must leave y, also when the
  // outputs are given as {v, a}. A value never reads a later assign (the graph is immutable), so
  // this order agrees with every read-after-write edge.
  for (auto& ws : writers) {
    std::stable_sort(ws.begin(), ws.end(), [&](int x, int y) { return assign_seq[x] < assign_seq[y]; });
    for (size_t i = 1; i < ws.size(); ++i) t.kernels[ws[i]].after.push_back(ws[i - 1]);  // write after write
  }
  // write after read: a reader of version v of an input runs before the writer of version v+1
  for (const Read& r : input_reads) {
    const auto& ws = writers[r.slot];
    size_t next = r.writer < 0 ? 0 : static_cast<size_t>(std::find(ws.begin(), ws.end(), r.writer) - ws.begin()) + 1;
    if (next < ws.size() && ws[next] != r.kernel) t.kernels[ws[next]].after.push_back(r.kernel);
  }
  for (const UOp& s : sink.src()) {
    BufRef b = buffer_of(s);
    if (b.local) t.locals[b.index].output = true;
    t.outputs.push_back(b);
  }
  unique_kernel_names(t);
}

}  // namespace kiln
