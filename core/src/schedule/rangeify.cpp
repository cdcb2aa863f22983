// schedule/rangeify.cpp - one kernel: movement ops become index math over RANGEs.
//
// A kernel gets one RANGE per output dimension. The value is built top-down: every tensor node is
// lowered for a tuple of index expressions (one per dimension of that node), and movement ops
// rewrite the tuple on the way to the sources:
//   RESHAPE  flat index of the new shape, re-split over the source shape (div/mod)
//   PERMUTE  reorders;  EXPAND  broadcast dimensions read index 0;  SHRINK  adds the start
//   FLIP     size-1-i;  PAD  shifts by the left pad and gates: where(inside, value, 0), and the
//            loads under it only read when inside (the gate rides along as `valid`)
//   REDUCE_AXIS  new REDUCE ranges for the reduced dimensions, REDUCE(value, ranges)
// until a realized node is reached, which becomes LOAD(INDEX(buffer, flat index[, valid])).
// Results are memoised per (node, index tuple, valid), so shared subgraphs stay shared.
#include <algorithm>
#include <functional>
#include <map>

#include "ir/shape.hpp"
#include "ir/traverse.hpp"
#include "schedule/kernelize.hpp"
#include "support/check.hpp"
#include "symbolic/bounds.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

// A lifted host scalar (schedule/create_schedule.cpp): its value reaches the kernel as the bits of
// its dtype in an int64 argument (every backend passes integer arguments), read back here.
UOp scalar_argument(const UOp& var) {
  const std::string& name = std::get<NamedInts>(var.arg()).name;
  UOp bits = UOp::make(Ops::DEFINE_VAR, dtypes::int64, {}, Arg{NamedInts{name, {INT64_MIN, INT64_MAX}}});
  DType d = var.dtype();
  if (d.itemsize() == 8) return UOp::make(Ops::BITCAST, d, {bits});
  DType u = d.itemsize() == 4 ? dtypes::uint32 : dtypes::uint16;
  return UOp::make(Ops::BITCAST, d, {bits.cast(u)});
}

bool is_one(const UOp& u) { return u.is_const() && u.arg_int() == 1; }
bool is_true(const UOp& u) { return u.is_const() && u.dtype().is_bool() && u.arg_bool(); }

UOp flat_index(const std::vector<UOp>& shape, const std::vector<UOp>& idx) {
  UOp flat = UOp::cindex(0), stride = UOp::cindex(1);
  for (size_t i = shape.size(); i-- > 0;) {
    if (is_one(shape[i])) continue;
    flat = flat + idx[i] * stride;
    stride = stride * shape[i];
  }
  return flat;
}

UOp and_(const UOp& a, const UOp& b) {
  if (is_true(a)) return b;
  if (is_true(b)) return a;
  return a & b;
}

UOp zero_of(DType d) { return d.is_bool() ? UOp::cbool(false) : UOp::cvalue(d, 0); }

// A shape's element count; symbolic dims count at their maximum.
int64_t max_elements(const std::vector<UOp>& shape) {
  int64_t size = 1;
  for (const UOp& d : shape) size *= d.is_const() ? d.arg_int() : vmax(d);
  return size;
}

struct Key {
  const UOpNode* node;
  std::vector<uint64_t> ids;  // index tuple, then valid
  bool operator<(const Key& o) const { return node != o.node ? node < o.node : ids < o.ids; }
};

class Builder {
 public:
  Builder(const GraphInfo& g, const std::vector<KernelRoot>& roots, const PtrMap<BufRef>& realized, std::vector<BufRef>& params)
      : g_(g), roots_(roots), realized_(realized), params_(params) {
    params_.clear();
    for (const KernelRoot& r : roots_) {
      params_.push_back(r.out);
      computed_[r.node.node()] = 1;
    }
  }

  // The loops run over the first root's shape; every root has as many elements, in the same
  // row-major order, so each is stored at the same flat index (a root of another shape is that
  // root reshaped to the first's). The stores share one END, so the loops are run once.
  UOp build() {
    const std::vector<UOp>& shape = *g_.shape.find(roots_[0].node.node());
    std::vector<UOp> ranges, idx;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (is_one(shape[i])) {  // a size-1 dimension needs no loop
        idx.push_back(UOp::cindex(0));
        continue;
      }
      UOp r = UOp::range(shape[i], next_axis_++, AxisType::LOOP);
      ranges.push_back(r);
      idx.push_back(r);
    }
    UOp flat = flat_index(shape, idx);
    UOp always = UOp::cbool(true);  // alive while lowering: the memo keys nodes by id
    std::vector<UOp> stores;
    for (size_t slot = 0; slot < roots_.size(); ++slot) {
      const KernelRoot& root = roots_[slot];
      const std::vector<UOp>& own = *g_.shape.find(root.node.node());
      // (equal counts have equal maxima: a necessary condition that never rejects a valid group)
      KILN_CHECK(max_elements(own) == max_elements(shape), "rangeify: grouped output ", slot, " has ", max_elements(own),
                 " elements, output 0 has ", max_elements(shape), ": one loop nest cannot store both");
      UOp v = lower(root.value, reindex(shape, own, idx), always);
      DType out_dtype = root.node.dtype();
      if (!(v.dtype() == out_dtype)) v = v.cast(out_dtype);
      UOp out = param(slot, out_dtype, own);
      stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out.dtype(), {out, flat}), v}));
    }
    UOp store = stores.size() == 1 ? stores[0] : UOp::make(Ops::GROUP, dtypes::void_, stores);
    if (!ranges.empty()) {
      std::vector<UOp> src{store};
      src.insert(src.end(), ranges.begin(), ranges.end());
      store = UOp::make(Ops::END, dtypes::void_, src);
    }
    return UOp::sink({store});
  }

 private:
  // The kernel PARAM for buffer slot `slot` (pointer to `dtype`, sized by the shape's maximum).
  UOp param(size_t slot, DType dtype, const std::vector<UOp>& shape) {
    return UOp::make(Ops::PARAM, dtype.ptr(max_elements(shape)), {}, Arg{static_cast<int64_t>(slot)});
  }

  size_t slot_of(BufRef b) {
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i] == b) return i;
    params_.push_back(b);
    return params_.size() - 1;
  }

  UOp load(const UOp& n, BufRef b, const std::vector<UOp>& idx, const UOp& valid) {
    const std::vector<UOp>& shape = *g_.shape.find(n.node());
    DType d = n.op() == Ops::PARAM ? n.dtype().base() : n.dtype();
    UOp p = param(slot_of(b), d, shape);
    UOp flat = flat_index(shape, idx);
    UOp index = is_true(valid) ? UOp::make(Ops::INDEX, p.dtype(), {p, flat}) : UOp::make(Ops::INDEX, p.dtype(), {p, flat, valid});
    return UOp::make(Ops::LOAD, d, {index});
  }

  // One lowering request: node `n` for the index tuple `idx` under the gate `valid`.
  struct Request {
    UOp n;
    std::vector<UOp> idx;
    UOp valid;
  };
  // How a request is lowered: either `done` (a leaf), or lower each of `srcs` and `combine` their
  // results (a movement op has one source; the combine of a pure index rewrite returns it as is).
  struct Plan {
    UOp done;
    std::vector<Request> srcs;
    std::function<UOp(std::vector<UOp>&)> combine;
  };

  static Key key_of(const Request& r) {
    Key key{r.n.node(), {}};
    for (const UOp& i : r.idx) key.ids.push_back(i.id());
    key.ids.push_back(r.valid.id());
    return key;
  }
  static Plan forward(Request r) {
    Plan p;
    p.srcs.push_back(std::move(r));
    p.combine = [](std::vector<UOp>& v) { return v[0]; };
    return p;
  }

  // Lowers with an explicit stack (a chain of a million elementwise ops is a million requests
  // deep), memoised per (node, index tuple, valid). Requests run in the order a recursive
  // descent would take, so RANGE axis numbers do not depend on the traversal.
  UOp lower(const UOp& n, const std::vector<UOp>& idx, const UOp& valid) {
    struct Frame {
      Key key;
      Plan plan;
      std::vector<UOp> results;
    };
    std::vector<Frame> stack;
    UOp last;  // the result of the request that just finished
    auto start = [&](Request r) {  // false: the result is already in `last`
      Key key = key_of(r);
      if (auto it = memo_.find(key); it != memo_.end()) {
        last = it->second;
        return false;
      }
      Plan plan = plan_of(r);
      if (plan.done) {
        last = memo_.emplace(std::move(key), plan.done).first->second;
        return false;
      }
      stack.push_back({std::move(key), std::move(plan), {}});
      return true;
    };
    if (!start({n, idx, valid})) return last;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.results.size() < f.plan.srcs.size()) {
        if (!start(std::move(f.plan.srcs[f.results.size()]))) stack.back().results.push_back(last);
        continue;
      }
      last = f.plan.combine(f.results);
      memo_.emplace(std::move(f.key), last);
      stack.pop_back();
      if (!stack.empty()) stack.back().results.push_back(last);
    }
    return last;
  }

  Plan plan_of(const Request& r) {
    const UOp& n = r.n;
    const std::vector<UOp>& idx = r.idx;
    const UOp& valid = r.valid;
    if (!computed_.contains(n.node())) {  // a root is computed here, even where another root reads it
      if (const BufRef* b = realized_.find(n.node())) return {load(n, *b, idx, valid), {}, {}};
    }
    switch (n.op()) {
      case Ops::PARAM: return {load(n, BufRef{false, static_cast<uint32_t>(n.arg_int())}, idx, valid), {}, {}};
      case Ops::CONST: return {UOp::make(Ops::CONST, n.dtype(), {}, n.arg()), {}, {}};
      case Ops::DEFINE_VAR: return {n.nsrc() ? scalar_argument(n) : n, {}, {}};
      case Ops::IOTA: return {idx[0].cast(n.dtype()), {}, {}};
      case Ops::CONTIGUOUS: case Ops::DETACH: return forward({n.src(0), idx, valid});
      case Ops::RESHAPE: return forward({n.src(0), reshape_index(n, idx), valid});
      case Ops::PERMUTE: {
        const auto& order = n.arg_ints();
        std::vector<UOp> src_idx(order.size());
        for (size_t i = 0; i < order.size(); ++i) src_idx[order[i]] = idx[i];
        return forward({n.src(0), src_idx, valid});
      }
      case Ops::EXPAND: {
        const std::vector<UOp>& in = *g_.shape.find(n.src(0).node());
        std::vector<UOp> src_idx(idx.size());
        for (size_t i = 0; i < idx.size(); ++i) src_idx[i] = is_one(in[i]) ? UOp::cindex(0) : idx[i];
        return forward({n.src(0), src_idx, valid});
      }
      case Ops::SHRINK: {
        std::vector<UOp> src_idx(idx.size());
        for (size_t i = 0; i < idx.size(); ++i) src_idx[i] = idx[i] + n.arg_ints()[2 * i];
        return forward({n.src(0), src_idx, valid});
      }
      case Ops::FLIP: {
        const std::vector<UOp>& in = *g_.shape.find(n.src(0).node());
        std::vector<UOp> src_idx(idx.size());
        for (size_t i = 0; i < idx.size(); ++i) src_idx[i] = n.arg_ints()[i] ? in[i] - 1 - idx[i] : idx[i];
        return forward({n.src(0), src_idx, valid});
      }
      case Ops::PAD: {
        const std::vector<UOp>& in = *g_.shape.find(n.src(0).node());
        std::vector<UOp> src_idx(idx.size());
        UOp inside = UOp::cbool(true);
        for (size_t i = 0; i < idx.size(); ++i) {
          int64_t before = n.arg_ints()[2 * i], after = n.arg_ints()[2 * i + 1];
          src_idx[i] = before ? idx[i] - before : idx[i];
          if (before) inside = and_(inside, UOp::cindex(before - 1).lt(idx[i]));
          if (after) inside = and_(inside, idx[i].lt(in[i] + before));
        }
        Plan p = forward({n.src(0), src_idx, and_(valid, inside)});
        p.combine = [inside](std::vector<UOp>& v) { return inside.where(v[0], zero_of(v[0].dtype())); };
        return p;
      }
      case Ops::REDUCE_AXIS: {
        const auto& arg = n.arg_ints();
        const std::vector<UOp>& in = *g_.shape.find(n.src(0).node());
        std::vector<UOp> src_idx = idx, ranges;
        for (size_t k = 1; k < arg.size(); ++k) {
          if (is_one(in[arg[k]])) {
            src_idx[arg[k]] = UOp::cindex(0);
            continue;
          }
          UOp r = UOp::range(in[arg[k]], next_axis_++, AxisType::REDUCE);
          ranges.push_back(r);
          src_idx[arg[k]] = r;
        }
        Plan p = forward({n.src(0), src_idx, valid});
        if (ranges.empty()) return p;  // reducing only size-1 dimensions
        p.combine = [ranges, n](std::vector<UOp>& v) {
          std::vector<UOp> src{v[0]};
          src.insert(src.end(), ranges.begin(), ranges.end());
          return UOp::make(Ops::REDUCE, n.dtype(), src, Arg{std::vector<int64_t>{n.arg_ints()[0]}});
        };
        return p;
      }
      case Ops::ASSIGN: case Ops::COPY:
        KILN_UNREACHABLE(op_name(n.op()), " must be realized before it is read");
      default: break;
    }
    KILN_CHECK(groups::Elementwise.has(n.op()), "rangeify: unexpected ", op_name(n.op()), " in a tensor graph");
    Plan p;
    for (const UOp& s : n.src()) p.srcs.push_back({s, idx, valid});
    p.combine = [n](std::vector<UOp>& v) { return UOp::make(n.op(), n.dtype(), v); };
    return p;
  }

  // The source index tuple of a RESHAPE: size-1 dimensions only (inserted or removed) map
  // directly; anything else re-splits the flat index over the source shape.
  std::vector<UOp> reshape_index(const UOp& n, const std::vector<UOp>& idx) {
    return reindex(*g_.shape.find(n.node()), *g_.shape.find(n.src(0).node()), idx);
  }
  // The index tuple over shape `in` of the element at `idx` over shape `out` (as many elements).
  static std::vector<UOp> reindex(const std::vector<UOp>& out, const std::vector<UOp>& in, const std::vector<UOp>& idx) {
    std::vector<size_t> in_big, out_big;
    for (size_t i = 0; i < in.size(); ++i)
      if (!is_one(in[i])) in_big.push_back(i);
    for (size_t i = 0; i < out.size(); ++i)
      if (!is_one(out[i])) out_big.push_back(i);
    std::vector<UOp> src_idx(in.size(), UOp::cindex(0));
    bool direct = in_big.size() == out_big.size();
    for (size_t k = 0; direct && k < in_big.size(); ++k) direct = in[in_big[k]] == out[out_big[k]];
    if (direct) {
      for (size_t k = 0; k < in_big.size(); ++k) src_idx[in_big[k]] = idx[out_big[k]];
      return src_idx;
    }
    UOp flat = flat_index(out, idx);
    UOp stride = UOp::cindex(1);
    for (size_t i = in.size(); i-- > 0;) {
      if (is_one(in[i])) continue;  // (no `* 1`: equal index tuples stay equal nodes, for the memo)
      UOp q = is_one(stride) ? flat : flat.idiv(stride);
      src_idx[i] = i == in_big.front() ? q : q.mod(in[i]);  // the outermost needs no modulo
      stride = stride * in[i];
    }
    return src_idx;
  }

  const GraphInfo& g_;
  const std::vector<KernelRoot>& roots_;
  PtrMap<char> computed_;  // the roots' nodes
  const PtrMap<BufRef>& realized_;
  std::vector<BufRef>& params_;
  int64_t next_axis_ = 0;
  std::map<Key, UOp> memo_;
};

}  // namespace

namespace {

std::string dim_name(const UOp& size) {
  if (size.is_const()) return std::to_string(size.arg_int());
  if (size.op() == Ops::DEFINE_VAR) return std::get<NamedInts>(size.arg()).name;
  return "n";
}

// "E_<loop sizes>" for elementwise kernels, "r_<loop sizes>_<reduce sizes>" with a reduction.
std::string kernel_name(const UOp& ast) {
  std::vector<std::pair<int64_t, std::string>> loops, reduces;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE) {
      auto& dst = static_cast<AxisType>(u.arg_ints()[1]) == AxisType::REDUCE ? reduces : loops;
      dst.push_back({u.arg_ints()[0], dim_name(u.src(0))});
    }
  std::sort(loops.begin(), loops.end());
  std::sort(reduces.begin(), reduces.end());
  std::string name = reduces.empty() ? "E" : "r";
  for (auto& [axis, d] : loops) name += "_" + d;
  if (loops.empty()) name += "_1";
  for (auto& [axis, d] : reduces) name += "_" + d;
  return name;
}

}  // namespace

UOp rangeify_kernel(const GraphInfo& g, const std::vector<KernelRoot>& roots, const PtrMap<BufRef>& realized,
                    std::vector<BufRef>& params) {
  Builder b(g, roots, realized, params);
  UOp ast = graph_rewrite(b.build(), symbolic(), nullptr, "rangeify symbolic");
  // The simplifier can prove a buffer is never read (a concat's piece outside the rows this kernel
  // stores): drop it from the call and number the parameters that remain densely, so the kernel
  // takes exactly the buffers its call passes.
  std::vector<UOp> used(params.size());
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::PARAM && u.dtype().is_ptr()) used[static_cast<size_t>(u.arg_int())] = u;
  std::vector<std::pair<UOp, UOp>> renumber;
  std::vector<BufRef> kept;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!used[i] && i >= roots.size()) continue;  // (the outputs, first, always stay)
    if (kept.size() != i && used[i]) renumber.push_back({used[i], used[i].replace_arg(Arg{static_cast<int64_t>(kept.size())})});
    kept.push_back(params[i]);
  }
  if (kept.size() != params.size()) {
    params = std::move(kept);
    ast = substitute(ast, renumber);
  }
  return ast.replace_arg(Arg{kernel_name(ast)});
}

}  // namespace kiln
