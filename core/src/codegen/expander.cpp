// codegen/expander.cpp - UPCAST and UNROLL ranges become registers and vector lanes.
//
// A range marked for expansion disappears from the kernel:
//  - by copies: every value that depends on it is built once per index value (range := 0..k-1).
//    An END closing it closes a GROUP of the k copies; a REDUCE over it folds its k copies with
//    the reduce op. Copies of a REDUCE keep the same reduce ranges, so after reduce lowering they
//    share one loop: that is what makes register tiles.
//  - by lanes (the vectorized range): values that depend on it become k-lane vectors. A load
//    whose index moves by exactly 1 along the range is one vector load (masked, with one gate per
//    lane, when its validity depends on the range); by 0, a scalar; by a small constant stride,
//    the few vector loads that cover its span and a pick of their lanes; otherwise a gather of k
//    loads. Stores likewise (without the strided form), but for copies of another range that
//    store consecutive elements (a convolution's tile into NCHW: channels in the lanes, columns in
//    the copies): those are stored transposed, each lane's columns one vector. A REDUCE
//    over the vector range accumulates a vector and ends with a horizontal fold of the lanes, as
//    a tree of halvings (v[:k/2] op v[k/2:], log2(k) vector ops): a chain of k-1 dependent scalar
//    ops cost a dot-product kernel (x @ w.T, lanes along K) a third of its time.
#include "codegen/passes.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "support/check.hpp"
#include "support/flat_map.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

UOp fold(Ops op, const std::vector<UOp>& xs) {
  UOp acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) acc = UOp::alu(op, {acc, xs[i]});
  return acc;
}

UOp lanes_of(const UOp& v, int64_t first, int64_t n) {
  std::vector<int64_t> lanes;
  for (int64_t j = 0; j < n; ++j) lanes.push_back(first + j);
  return UOp::make(Ops::GEP, v.dtype().scalar_type().vec(static_cast<int>(n)), {v}, Arg{std::move(lanes)});
}

// The lanes of v folded with op: halves while the width is even, then lane by lane.
UOp fold_lanes(Ops op, UOp v) {
  int64_t k = v.dtype().count();
  for (; k % 2 == 0 && k > 2; k /= 2) v = UOp::alu(op, {lanes_of(v, 0, k / 2), lanes_of(v, k / 2, k / 2)});
  std::vector<UOp> lanes;
  for (int64_t j = 0; j < k; ++j) lanes.push_back(lanes_of(v, j, 1));
  return fold(op, lanes);
}

// END/REDUCE nodes that list range r, with the other ranges.
bool lists_range(const UOp& u, const UOp& r, std::vector<UOp>& others) {
  others.clear();
  bool hit = false;
  for (size_t i = 1; i < u.nsrc(); ++i) {
    if (u.src(i) == r) hit = true;
    else others.push_back(u.src(i));
  }
  return hit;
}

UOp rebuild_with(const UOp& u, const UOp& first, const std::vector<UOp>& ranges) {
  if (ranges.empty() && u.op() == Ops::END) return first;
  std::vector<UOp> src{first};
  src.insert(src.end(), ranges.begin(), ranges.end());
  return u.replace_src(src);
}

// ---- expansion by copies ----
UOp duplicate(const UOp& ast, const UOp& r) {
  int64_t k = r.src(0).arg_int();
  std::vector<std::pair<UOp, UOp>> repl;
  std::vector<UOp> others;
  for (const UOp& u : toposort(ast)) {
    if ((u.op() != Ops::END && u.op() != Ops::REDUCE) || !lists_range(u, r, others)) continue;
    std::vector<UOp> copies;
    for (int64_t j = 0; j < k; ++j) copies.push_back(substitute(u.src(0), {{r, UOp::cindex(j)}}));
    UOp first = u.op() == Ops::END ? UOp::make(Ops::GROUP, dtypes::void_, copies)
                                   : fold(static_cast<Ops>(u.arg_ints()[0]), copies);
    if (u.op() == Ops::REDUCE && others.empty()) repl.push_back({u, first});
    else repl.push_back({u, rebuild_with(u, first, others)});
  }
  return substitute(ast, repl);
}

// ---- expansion into vector lanes ----
// The widest transposed store (expander's group()): a register tile's copies along one axis.
constexpr size_t kMaxTransposed = 16;

class Vectorizer {
 public:
  // any_width: the target's renderers take vectors of any width (a cpu's: LLVM IR, clang's
  // vector extension, but for 3); GPU languages have powers of two (and 3).
  Vectorizer(const UOp& root, const UOp& v, bool any_width) : v_(v), k_(v.src(0).arg_int()), any_width_(any_width) {
    for (const UOpNode* n : toposort_nodes(root)) {
      bool d = n == v.node();
      for (uint32_t i = 0; i < n->nsrc && !d; ++i) d = dep_.contains(n->srcs()[i].node());
      if (d) dep_[n] = 1;
    }
  }

  UOp vec(const UOp& x) {
    if (!dep_.contains(x.node())) return x;
    if (const UOp* m = memo_.find(x.node())) return *m;
    // a GROUP of stores first (the END's body): the stores it transposes are never built lane by lane
    if (x.op() == Ops::GROUP) return memo_[x.node()] = group(x);
    // what x depends on is built first, children before parents, so build()'s calls on sources
    // find them memoised: no recursion as deep as the kernel (a chain of 300k adds). Not an
    // INDEX below x: a load or store reads its address lane by lane or as one vector address,
    // never as a vector of addresses, so building one here was 16 substituted copies thrown away
    // (most of the expander's time); what build() does ask of one (a gate) it asks on demand.
    auto done = [&](const UOpNode* n) { return !dep_.contains(n) || memo_.contains(n); };
    auto later = [&](const UOpNode* n) { return done(n) || (n != x.node() && n->op == Ops::INDEX); };
    for (const UOpNode* n : toposort_nodes(x, later))
      if (!later(n)) memo_[n] = build(UOpAccess::from_node(n));
    if (const UOp* m = memo_.find(x.node())) return *m;
    return memo_[x.node()] = build(x);  // (x itself an INDEX)
  }

  UOp lane(const UOp& x, int64_t j) { return substitute(x, {{v_, UOp::cindex(j)}}); }
  int64_t width() const { return k_; }

  UOp broadcast(const UOp& s) {
    if (s.dtype().count() == k_) return s;
    if (s.is_const()) return UOp::make(Ops::CONST, s.dtype().vec(k_), {}, s.arg());
    return UOp::make(Ops::VECTORIZE, s.dtype().vec(k_), std::vector<UOp>(k_, s));
  }

 private:
  UOp gather(const UOp& x) {
    std::vector<UOp> lanes;
    for (int64_t j = 0; j < k_; ++j) lanes.push_back(lane(x, j));
    return UOp::make(Ops::VECTORIZE, x.dtype().vec(k_), lanes);
  }

  // stride_of along v, once per index (group() asks it of a store before building it)
  bool stride(const UOp& idx, int64_t& s) {
    auto [it, fresh] = strides_.try_emplace(idx.node(), false, 0);
    if (fresh) it->second.first = stride_of(idx, v_, it->second.second);
    s = it->second.second;
    return it->second.first;
  }

  // For INDEX(buf, idx[, valid]): the base index when it is contiguous along v. A valid that
  // depends on v becomes one gate per lane (a masked vector access; devectorize splits it into
  // lanes for targets without masked vectors).
  bool contiguous(const UOp& index, UOp& base) {
    int64_t s;
    if (!stride(index.src(1), s) || s != 1) return false;
    base = simplify(lane(index.src(1), 0));
    return true;
  }

  // A gather whose index moves by a small constant stride s along v (a stride-2 convolution's
  // input row) as the few contiguous vector loads that cover its span, its lanes picked from them
  // (LLVM turns the picks into a two-source shuffle). The loads read only between the first and
  // the last element the gather reads (the last one ends exactly there). Under a gate (a padded
  // axis), a loaded element between the gather's elements j and j+1 is read only when both are
  // valid: it lies between two elements of the buffer, so it is one too.
  UOp strided_load(const UOp& x) {
    const UOp& index = x.src(0);
    int64_t s;
    if (x.nsrc() != 1 || !stride(index.src(1), s) || !picks_strided_lanes(s, k_)) return {};
    const int64_t span = s * (k_ - 1) + 1, chunks = (span + k_ - 1) / k_;
    UOp base = simplify(lane(index.src(1), 0));
    UOp valid = index.nsrc() > 2 ? vec(index.src(2)) : UOp();
    auto start = [&](int64_t c) { return c + 1 < chunks ? c * k_ : span - k_; };
    auto valid_at = [&](int64_t j) { return UOp::make(Ops::GEP, valid.dtype().scalar_type(), {valid}, Arg{std::vector<int64_t>{j}}); };
    DType p = index.dtype();
    DType vp = p.base().vec(k_).ptr(p.ptr_size(), p.addrspace());
    std::vector<UOp> loads;
    for (int64_t c = 0; c < chunks; ++c) {
      std::vector<UOp> src{index.src(0), simplify(base + start(c))};
      if (valid && valid.dtype().count() == 1) {
        src.push_back(valid);
      } else if (valid) {
        std::vector<UOp> gate;
        for (int64_t l = 0; l < k_; ++l) {
          int64_t pos = start(c) + l, lo = pos / s, hi = (pos + s - 1) / s;
          gate.push_back(lo == hi ? valid_at(lo) : valid_at(lo) & valid_at(hi));
        }
        src.push_back(UOp::make(Ops::VECTORIZE, valid.dtype(), gate));
      }
      loads.push_back(UOp::make(Ops::LOAD, x.dtype().vec(k_), {UOp::make(Ops::INDEX, vp, src)}));
    }
    std::vector<UOp> lanes;
    for (int64_t j = 0; j < k_; ++j) {
      int64_t e = s * j, c = std::min(e / k_, chunks - 1);
      lanes.push_back(UOp::make(Ops::GEP, x.dtype(), {loads[c]}, Arg{std::vector<int64_t>{e - start(c)}}));
    }
    return UOp::make(Ops::VECTORIZE, x.dtype().vec(k_), lanes);
  }

  UOp vector_index(const UOp& index, const UOp& base) {
    DType p = index.dtype();
    DType vp = p.base().vec(k_).ptr(p.ptr_size(), p.addrspace());
    std::vector<UOp> src{index.src(0), base};
    if (index.nsrc() > 2) src.push_back(vec(index.src(2)));
    return UOp::make(Ops::INDEX, vp, src);
  }

  // A store the lanes write one element each, `stride` apart (not contiguous: that is one vector
  // store already); its index without gate, so its lanes may become lanes of other vectors.
  bool scattered(const UOp& x, int64_t& stride) {
    if (x.op() != Ops::STORE || x.nsrc() != 2 || x.src(0).op() != Ops::INDEX || x.src(0).nsrc() != 2) return false;
    if (!dep_.contains(x.src(0).node())) return false;
    return this->stride(x.src(0).src(1), stride) && stride != 1;
  }

  // The stores of a GROUP of copies (nested GROUPs: one per expanded range). Copies of another
  // range whose indexes are consecutive elements, each a vector along v that is not contiguous
  // (a convolution's register tile into NCHW: channels in the lanes, pixels in the copies), are
  // stored transposed: lane l of m consecutive copies is one m-element vector store, instead of
  // m scalar stores with an address each (a 3x3 convolution's epilogue was half its LLVM IR, and
  // a BLOCK's read-back of its partial sums as many gated scalar loads: with them transposed too,
  // a third to a half of its LLVM compile time). The elements stored are the same ones: lane l
  // of copy j is element j of lane l's run, and the lanes' stride is at least m, so no two runs
  // overlap. m is the run's length on a cpu, a power of two elsewhere (the widths every
  // renderer has; devectorize cuts wider ones).
  UOp group(const UOp& x) {
    std::vector<UOp> leaves;  // in order (nested no deeper than the kernel's expanded ranges)
    auto collect = [&](auto&& self, const UOp& g) -> void {
      for (const UOp& s : g.src()) s.op() == Ops::GROUP ? self(self, s) : leaves.push_back(s);
    };
    collect(collect, x);
    // families of scattered stores into one buffer whose indexes differ by constants
    struct Member {
      int64_t offset;
      size_t leaf;
    };
    struct Family {
      UOp anchor;
      std::vector<Member> members;
    };
    std::vector<Family> families;
    std::vector<UOp> stored(leaves.size());  // per leaf: its transposed run (at the run's first leaf), or nothing
    std::vector<char> taken(leaves.size(), 0);
    for (size_t i = 0; i < leaves.size(); ++i) {
      int64_t s;
      if (!scattered(leaves[i], s)) continue;
      const UOp& index = leaves[i].src(0);
      bool placed = false;
      for (Family& f : families) {
        if (f.anchor.src(0) != index.src(0) || f.anchor.dtype() != index.dtype()) continue;
        UOp d = simplify(index.src(1) - f.anchor.src(1));
        if (!d.is_const()) continue;
        f.members.push_back({d.arg_int(), i});
        placed = true;
        break;
      }
      if (!placed) families.push_back({index, {{0, i}}});
    }
    for (Family& f : families) {
      std::sort(f.members.begin(), f.members.end(), [](const Member& a, const Member& b) { return a.offset < b.offset; });
      for (size_t a = 0; a < f.members.size();) {
        size_t run = 1;  // consecutive elements from a
        while (a + run < f.members.size() && f.members[a + run].offset == f.members[a].offset + static_cast<int64_t>(run)) ++run;
        for (size_t end = a + run; a < end;) {
          size_t m = any_width_ ? std::min<size_t>(end - a, kMaxTransposed) : 1;
          while (!any_width_ && m * 2 <= end - a && m * 2 <= kMaxTransposed) m *= 2;
          if (m == 3) m = 2;  // clang (the cpu's C dialect) accesses a 3-element vector as 4 (OpenCL's vec3)
          int64_t s;
          const UOp& first = leaves[f.members[a].leaf];
          stride(first.src(0).src(1), s);
          if (m >= 2 && (s >= static_cast<int64_t>(m) || s <= -static_cast<int64_t>(m))) {
            std::vector<UOp> copies;
            size_t at = leaves.size();
            for (size_t j = 0; j < m; ++j) {
              taken[f.members[a + j].leaf] = 1;
              copies.push_back(leaves[f.members[a + j].leaf]);
              at = std::min(at, f.members[a + j].leaf);
            }
            stored[at] = s == static_cast<int64_t>(m) && any_width_ ? interleaved(copies) : transposed(copies);
          }
          a += m;
        }
      }
    }
    if (std::find(taken.begin(), taken.end(), 1) == taken.end()) {  // nothing transposed: the copies as they were
      std::vector<UOp> src;
      for (const UOp& s : x.src()) src.push_back(vec(s));
      return x.replace_src(src);
    }
    std::vector<UOp> out;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (stored[i]) out.push_back(stored[i]);
      else if (!taken[i]) out.push_back(vec(leaves[i]));
    }
    return x.replace_src(out);
  }

  // The stores of m consecutive copies, transposed: per lane l one m-element vector store of the
  // copies' lane-l values (across()).
  UOp transposed(const std::vector<UOp>& stores) {
    const UOp& index = stores[0].src(0);
    const int m = static_cast<int>(stores.size());
    DType p = index.dtype();
    DType vp = p.base().vec(m).ptr(p.ptr_size(), p.addrspace());
    std::vector<UOp> values, out;
    for (const UOp& st : stores) values.push_back(st.src(1));
    for (int64_t l = 0; l < k_; ++l) {
      UOp at = UOp::make(Ops::INDEX, vp, {index.src(0), simplify(lane(index.src(1), l))});
      out.push_back(UOp::make(Ops::STORE, dtypes::void_, {at, across(values, l)}));
    }
    return UOp::make(Ops::GROUP, dtypes::void_, out);
  }

  // The stores of m consecutive copies whose lanes are m elements apart: together they fill
  // m * k consecutive elements (a STAGE copy of bfloat16 K pairs: stage.cpp), one vector store of
  // the copies' lanes interleaved (LLVM's unpack shuffles), not k stores of m elements.
  UOp interleaved(const std::vector<UOp>& stores) {
    const UOp& index = stores[0].src(0);
    const int m = static_cast<int>(stores.size());
    DType p = index.dtype();
    DType vp = p.base().vec(m * static_cast<int>(k_)).ptr(p.ptr_size(), p.addrspace());
    std::vector<UOp> vectors, lanes;
    for (const UOp& st : stores) vectors.push_back(broadcast(vec(st.src(1))));
    for (int64_t l = 0; l < k_; ++l)
      for (const UOp& v : vectors) lanes.push_back(UOp::make(Ops::GEP, v.dtype().scalar_type(), {v}, Arg{std::vector<int64_t>{l}}));
    UOp value = UOp::make(Ops::VECTORIZE, vectors[0].dtype().scalar_type().vec(static_cast<int>(lanes.size())), lanes);
    return UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, vp, {index.src(0), simplify(lane(index.src(1), 0))}), value});
  }

  // Lane l of the m copies `xs` of one value (its copies along another expanded range), as one
  // m-lane vector: computed across the copies where they are the same computation (elementwise
  // ops; loads of consecutive elements become one m-element load, a BLOCK's partial sums or a
  // residual), the copies' vectors picked lane by lane where they are not (the accumulators).
  UOp across(const std::vector<UOp>& xs, int64_t l) {
    const int m = static_cast<int>(xs.size());
    std::vector<const UOpNode*> key;
    for (const UOp& x : xs) key.push_back(x.node());
    key.push_back(reinterpret_cast<const UOpNode*>(static_cast<intptr_t>(l)));
    if (auto it = across_memo_.find(key); it != across_memo_.end()) return it->second;
    const UOp& x = xs[0];
    const DType vt = x.dtype().vec(m);
    auto same = [&](auto&& eq) {
      for (const UOp& y : xs)
        if (!eq(y)) return false;
      return true;
    };
    UOp out;
    if (same([&](const UOp& y) { return y == x; }) && !dep_.contains(x.node())) {
      out = UOp::make(Ops::VECTORIZE, vt, std::vector<UOp>(m, x));
    } else if (x.dtype().count() == 1 && groups::Elementwise.has(x.op()) &&
               same([&](const UOp& y) { return y.op() == x.op() && y.dtype() == x.dtype() && y.nsrc() == x.nsrc() && y.arg() == x.arg(); })) {
      std::vector<UOp> src;
      for (size_t i = 0; i < x.nsrc(); ++i) {
        std::vector<UOp> ys;
        for (const UOp& y : xs) ys.push_back(y.src(i));
        src.push_back(across(ys, l));
      }
      out = UOp::make(x.op(), vt, src, x.arg());
    } else if (UOp load = consecutive_load(xs, l)) {
      out = load;
    } else {
      std::vector<UOp> lanes;
      for (const UOp& y : xs) lanes.push_back(UOp::make(Ops::GEP, x.dtype().scalar_type(), {broadcast(vec(y))}, Arg{std::vector<int64_t>{l}}));
      out = UOp::make(Ops::VECTORIZE, vt, lanes);
    }
    across_memo_.emplace(std::move(key), out);
    return out;
  }

  // Whether copies xs of one load read consecutive elements under one gate (asked once per lane).
  bool consecutive(const std::vector<UOp>& xs) {
    std::vector<const UOpNode*> key;
    for (const UOp& x : xs) key.push_back(x.node());
    if (auto it = consecutive_memo_.find(key); it != consecutive_memo_.end()) return it->second;
    const UOp& x = xs[0];
    bool yes = x.op() == Ops::LOAD && x.nsrc() == 1 && x.dtype().count() == 1 && x.src(0).op() == Ops::INDEX;
    for (size_t j = 1; j < xs.size() && yes; ++j) {
      const UOp& y = xs[j];
      if (!(yes = y.op() == Ops::LOAD && y.nsrc() == 1 && y.dtype() == x.dtype() && y.src(0).op() == Ops::INDEX)) break;
      const UOp &index = x.src(0), &yi = y.src(0);
      if (!(yes = yi.nsrc() == index.nsrc() && yi.src(0) == index.src(0) && (index.nsrc() < 3 || yi.src(2) == index.src(2)))) break;
      UOp d = simplify(yi.src(1) - index.src(1));
      yes = d.is_const() && d.arg_int() == static_cast<int64_t>(j);
    }
    consecutive_memo_.emplace(std::move(key), yes);
    return yes;
  }

  // Those copies at lane l: one m-element load.
  UOp consecutive_load(const std::vector<UOp>& xs, int64_t l) {
    if (!consecutive(xs)) return {};
    const UOp& index = xs[0].src(0);
    const UOp& x = xs[0];
    const int m = static_cast<int>(xs.size());
    DType p = index.dtype();
    std::vector<UOp> src{index.src(0), simplify(lane(index.src(1), l))};
    if (index.nsrc() > 2) src.push_back(dep_.contains(index.src(2).node()) ? simplify(lane(index.src(2), l)) : index.src(2));
    return UOp::make(Ops::LOAD, x.dtype().vec(m), {UOp::make(Ops::INDEX, p.base().vec(m).ptr(p.ptr_size(), p.addrspace()), src)});
  }

  UOp build(const UOp& x) {
    if (x == v_) {
      std::vector<UOp> lanes;
      for (int64_t j = 0; j < k_; ++j) lanes.push_back(UOp::cindex(j));
      return UOp::make(Ops::VECTORIZE, dtypes::index.vec(k_), lanes);
    }
    switch (x.op()) {
      case Ops::LOAD: {
        UOp base;
        const UOp& index = x.src(0);
        if (x.nsrc() == 1 && contiguous(index, base))
          return UOp::make(Ops::LOAD, x.dtype().vec(k_), {vector_index(index, base)});
        if (UOp strided = strided_load(x)) return strided;
        return gather(x);
      }
      case Ops::STORE: {
        UOp base;
        const UOp& index = x.src(0);
        UOp value = broadcast(vec(x.src(1)));
        if (x.nsrc() == 2 && contiguous(index, base)) return UOp::make(Ops::STORE, dtypes::void_, {vector_index(index, base), value});
        std::vector<UOp> stores;
        for (int64_t j = 0; j < k_; ++j) {
          UOp gep = UOp::make(Ops::GEP, value.dtype().scalar_type(), {value}, Arg{std::vector<int64_t>{j}});
          std::vector<UOp> src{lane(index, j), gep};
          if (x.nsrc() > 2) src.push_back(lane(x.src(2), j));
          stores.push_back(UOp::make(Ops::STORE, dtypes::void_, src));
        }
        return UOp::make(Ops::GROUP, dtypes::void_, stores);
      }
      case Ops::REDUCE: {
        std::vector<UOp> others;
        UOp body = broadcast(vec(x.src(0)));
        if (!lists_range(x, v_, others)) {  // the lanes are outputs: a vector accumulator
          std::vector<UOp> src{body};
          for (size_t i = 1; i < x.nsrc(); ++i) src.push_back(x.src(i));
          return UOp::make(Ops::REDUCE, x.dtype().vec(k_), src, x.arg());
        }
        // a reduce over the lanes: accumulate a vector, then fold the lanes
        UOp acc = body;
        if (!others.empty()) {
          std::vector<UOp> src{body};
          src.insert(src.end(), others.begin(), others.end());
          acc = UOp::make(Ops::REDUCE, body.dtype(), src, x.arg());
        }
        return fold_lanes(static_cast<Ops>(x.arg_ints()[0]), acc);
      }
      case Ops::GROUP: return group(x);
      case Ops::PREFETCH: return lane(x, 0);  // the first lane's cache line (a hint: no gather)
      case Ops::AFTER: {  // the value's lanes, after the vector forms of what it waits for
        std::vector<UOp> src;
        for (const UOp& s : x.src()) src.push_back(vec(s));
        return UOp::make(Ops::AFTER, src[0].dtype(), src);
      }
      default: break;
    }
    if (groups::Elementwise.has(x.op())) {
      std::vector<UOp> src;
      for (const UOp& s : x.src()) src.push_back(broadcast(vec(s)));
      return UOp::make(x.op(), x.dtype().vec(k_), src, x.arg());
    }
    return gather(x);
  }

  UOp v_;
  int64_t k_;
  bool any_width_;
  PtrMap<char> dep_;
  PtrMap<UOp> memo_;
  std::map<std::vector<const UOpNode*>, UOp> across_memo_;  // across(): the copies and the lane
  std::map<std::vector<const UOpNode*>, bool> consecutive_memo_;
  std::unordered_map<const UOpNode*, std::pair<bool, int64_t>> strides_;  // stride(): found, stride
};

UOp vectorize(const UOp& ast, const UOp& v, const Target& target) {
  std::vector<std::pair<UOp, UOp>> repl;
  std::vector<UOp> others;
  Vectorizer vz(ast, v, target.has(KILN_TARGET_HAS_THREADS) && !target.has(KILN_TARGET_HAS_LOCAL));
  for (const UOp& u : toposort(ast)) {
    if ((u.op() != Ops::END && u.op() != Ops::REDUCE) || !lists_range(u, v, others)) continue;
    if (u.op() == Ops::END) repl.push_back({u, rebuild_with(u, vz.vec(u.src(0)), others)});
    else repl.push_back({u, vz.vec(u)});
  }
  return substitute(ast, repl);
}

}  // namespace

UOp expand_ranges(const UOp& ast, const Target& target) {
  UOp out = ast;
  // vector ranges that no value depends on two of (opt.cpp checks): the compute's, a STAGE copy's
  // own (stage.cpp), and reduces in turn over one row (softmax's max, then its sum)
  std::vector<UOp> vector_ranges;
  for (const UOp& r : toposort(ast)) {
    if (r.op() != Ops::RANGE) continue;
    AxisType t = range_type(r);
    if (t != AxisType::UPCAST && t != AxisType::UNROLL) continue;
    KILN_CHECK(r.src(0).is_const(), "expanded ranges have constant sizes");
    if (range_vectorized(r)) vector_ranges.push_back(r);
    else out = duplicate(out, r);
  }
  for (const UOp& v : vector_ranges) out = vectorize(out, v, target);
  return graph_rewrite(out, symbolic(), nullptr, "expander symbolic");
}

}  // namespace kiln
