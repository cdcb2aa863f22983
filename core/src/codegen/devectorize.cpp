// codegen/devectorize.cpp - vector values wider than the target's vectors become pieces of its width.
//
// A vector op of k lanes over a target whose vectors hold w < k lanes becomes ceil(k / w) ops of
// at most w lanes, each on the matching lanes of its sources (a GEP of a lane range), gathered
// back as one VECTORIZE of their lanes; contiguous vector loads and stores become one access per
// piece at consecutive offsets, their per-lane gates split alike. Pieces, not scalars: a float16
// kernel vectorized by 32 (512 bits of halves) computes in float32 once emulated, 2 x 16 lanes on
// AVX-512, where k scalar lanes cost ~4000 instructions and seconds of LLVM time for `a * b + 1`.
// On a target without masked vector accesses a lane-gated access (at most w lanes) still becomes
// one scalar access per lane, each under its own gate. On a target with vectors in memory only
// (KILN_TARGET_VECTOR_MEMORY_ONLY: CUDA) every other op is cut into single lanes, and an access
// stays a vector only where it is 4-byte lanes at an index known to be a multiple of their count.
//
// The lanes recombine by folding: GEP of a VECTORIZE picks its sources, and a VECTORIZE of lanes
// 0..n-1 of one n-lane value is that value (lanes of one value in another order: one GEP, a
// shuffle), so a piece's consumer reads the piece itself and nothing vector-shaped wider than the
// target remains.
#include <algorithm>

#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "codegen/target.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

using namespace pat;

// Lanes first .. first+n-1 of v (v itself when that is all of it; a scalar is every lane).
UOp lanes_of(const UOp& v, int64_t first, int64_t n) {
  if (v.dtype().is_ptr() || v.dtype().count() == 1 || (first == 0 && n == v.dtype().count())) return v;
  std::vector<int64_t> lanes;
  for (int64_t j = 0; j < n; ++j) lanes.push_back(first + j);
  return UOp::make(Ops::GEP, v.dtype().scalar_type().vec(static_cast<int>(n)), {v}, Arg{std::move(lanes)});
}

struct Width {
  int max;
  bool masked;               // the target has masked vector loads and stores (one gate per lane)
  bool memory_only = false;  // vectors only in aligned accesses of 4-byte scalars (VECTOR_MEMORY_ONLY)
  int alu() const { return memory_only ? 1 : max; }
};

// The largest power of two (up to 64) that `idx` is known to be a multiple of: from its constants'
// factors through ADD, MUL and SHL (a launch index or a loop counter is a multiple of 1).
int64_t known_multiple(const UOp& idx) {
  constexpr int64_t kMax = 64;
  if (idx.op() == Ops::CONST) {
    const int64_t c = idx.arg_int();
    return c == 0 ? kMax : std::min<int64_t>(kMax, c & -c);
  }
  if (idx.nsrc() != 2) return 1;
  switch (idx.op()) {
    case Ops::ADD: return std::min(known_multiple(idx.src(0)), known_multiple(idx.src(1)));
    case Ops::MUL: return std::min<int64_t>(kMax, known_multiple(idx.src(0)) * known_multiple(idx.src(1)));
    case Ops::SHL:
      return idx.src(1).op() == Ops::CONST && idx.src(1).arg_int() >= 0 && idx.src(1).arg_int() < 7
                 ? std::min<int64_t>(kMax, known_multiple(idx.src(0)) << idx.src(1).arg_int())
                 : 1;
    default: return 1;
  }
}

// The pieces [first, first + n) a k-lane value is cut into: w lanes each, the last one the rest.
template <typename F>
std::vector<UOp> pieces(int k, int w, F&& make) {
  std::vector<UOp> out;
  for (int first = 0; first < k; first += w) out.push_back(make(first, std::min(w, k - first)));
  return out;
}

// The k lanes of the pieces, as one value (what the pieces' consumers pick their lanes from).
UOp joined(DType d, const std::vector<UOp>& parts) {
  std::vector<UOp> lanes;
  for (const UOp& p : parts)
    for (int64_t j = 0; j < p.dtype().count(); ++j) lanes.push_back(lanes_of(p, j, 1));
  return UOp::make(Ops::VECTORIZE, d, lanes);
}

// A vector access with one gate per lane (a PADTO'd or padded view along the vector axis).
bool lane_gated(const UOp& index) { return index.op() == Ops::INDEX && index.nsrc() > 2 && index.src(2).dtype().count() > 1; }

UOp split_alu(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.dtype().count();
  if (k <= w.alu() || x.dtype().is_ptr()) return {};
  return joined(x.dtype(), pieces(k, w.alu(), [&](int first, int n) {
                  std::vector<UOp> src;
                  for (const UOp& s : x.src()) src.push_back(lanes_of(s, first, n));
                  return UOp::make(x.op(), x.dtype().scalar_type().vec(n), src, x.arg());
                }));
}

// The INDEX of lanes first .. first+n-1 of a contiguous vector access.
UOp piece_index(const UOp& index, int64_t first, int64_t n) {
  DType p = index.dtype();
  std::vector<UOp> src{index.src(0), first ? index.src(1) + first : index.src(1)};
  if (index.nsrc() > 2) src.push_back(lanes_of(index.src(2), first, n));
  return UOp::make(Ops::INDEX, p.base().scalar_type().vec(static_cast<int>(n)).ptr(p.ptr_size(), p.addrspace()), src);
}

// The piece width of a k-lane access: the target's, or single lanes for a lane-gated access on a
// target without masked vector accesses; 0 when the access stays whole.
// With vectors in memory only, an access stays a vector where its lanes are 4-byte scalars and
// its index a multiple of the lane count (buffers start aligned: a 16-byte float4 load from an
// address 4 bytes past is a fault on a GPU, not a slow load); register arrays are of the vector
// type itself.
int access_piece(const Width& w, int k, const UOp& index) {
  if (!w.masked && lane_gated(index)) return 1;
  if (w.memory_only && k > 1) {
    const DType p = index.dtype();
    if (p.base().scalar_size() != 4) return 1;
    const int piece = std::min(k, w.max);
    if ((piece & (piece - 1)) != 0) return 1;  // (2 or 4 lanes: float2/float4; no float3)
    if (p.addrspace() != AddrSpace::reg && known_multiple(index.src(1)) % piece != 0) return 1;
    return k > piece ? piece : 0;
  }
  return k > w.max ? w.max : 0;
}

UOp split_load(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.dtype().count(), p = access_piece(w, k, x.src(0));
  if (!p) return {};
  return joined(x.dtype(), pieces(k, p, [&](int first, int n) {
                  return UOp::make(Ops::LOAD, x.dtype().scalar_type().vec(n), {piece_index(x.src(0), first, n)});
                }));
}

UOp split_store(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.src(0).dtype().count(), p = access_piece(w, k, x.src(0));
  if (!p) return {};
  return UOp::make(Ops::GROUP, dtypes::void_, pieces(k, p, [&](int first, int n) {
                     return UOp::make(Ops::STORE, dtypes::void_, {piece_index(x.src(0), first, n), lanes_of(x.src(1), first, n)});
                   }));
}

UOp split_reduce(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.dtype().count();
  if (k <= w.alu()) return {};
  return joined(x.dtype(), pieces(k, w.alu(), [&](int first, int n) {
                  std::vector<UOp> src{lanes_of(x.src(0), first, n)};
                  for (size_t i = 1; i < x.nsrc(); ++i) src.push_back(x.src(i));
                  return UOp::make(Ops::REDUCE, x.dtype().scalar_type().vec(n), src, x.arg());
                }));
}

// A GEP of more lanes than the target's vectors: its lanes, one by one (each folds into the lane
// of the value it picks from, and the pieces of its consumers gather them back).
UOp split_gep(const Match& m, Width& w) {
  const UOp& g = m[r0];
  if (g.dtype().count() <= w.max) return {};
  std::vector<UOp> lanes;
  for (int64_t j : g.arg_ints()) lanes.push_back(lanes_of(g.src(0), j, 1));
  return UOp::make(Ops::VECTORIZE, g.dtype(), lanes);
}

// GEP of a VECTORIZE is its lanes; GEP of a splat constant is the constant; GEP of a GEP picks
// from the inner one's lanes (a lane of a halved vector in a tree fold); a GEP of every lane of
// a value in order is the value.
UOp fold_gep(const Match& m) {
  const UOp& g = m[r0];
  const UOp& v = g.src(0);
  const auto& js = g.arg_ints();
  if (v.op() == Ops::CONST) return UOp::make(Ops::CONST, g.dtype(), {}, v.arg());
  if (v.op() == Ops::GEP) {
    std::vector<int64_t> lanes;
    for (int64_t j : js) lanes.push_back(v.arg_ints()[static_cast<size_t>(j)]);
    return UOp::make(Ops::GEP, g.dtype(), {v.src(0)}, Arg{std::move(lanes)});
  }
  if (v.op() != Ops::VECTORIZE) {
    if (v.dtype().is_ptr() || static_cast<int>(js.size()) != v.dtype().count()) return {};
    for (size_t j = 0; j < js.size(); ++j)
      if (js[j] != static_cast<int64_t>(j)) return {};
    return v;
  }
  if (js.size() == 1) return v.src(static_cast<size_t>(js[0]));
  std::vector<UOp> lanes;
  for (int64_t j : js) lanes.push_back(v.src(static_cast<size_t>(j)));
  return UOp::make(Ops::VECTORIZE, g.dtype(), lanes);
}

// A VECTORIZE of single lanes of one value is one GEP of them (of at most `max` lanes: wider, it
// is what devectorize is taking apart); of all its lanes in order, the value itself (fold_gep).
UOp collapse_lanes(const UOp& v, int max) {
  if (v.dtype().is_ptr() || v.dtype().count() > max) return {};
  const UOp& from = v.src(0).op() == Ops::GEP ? v.src(0).src(0) : UOp();
  if (!from || from.dtype().is_ptr()) return {};
  std::vector<int64_t> lanes;
  for (const UOp& s : v.src()) {
    if (s.op() != Ops::GEP || s.src(0) != from || s.arg_ints().size() != 1) return {};
    lanes.push_back(s.arg_ints()[0]);
  }
  return UOp::make(Ops::GEP, v.dtype(), {from}, Arg{std::move(lanes)});
}
UOp collapse_any(const Match& m) { return collapse_lanes(m[r0], 1 << 16); }
UOp collapse_narrow(const Match& m, Width& w) { return collapse_lanes(m[r0], w.max); }

}  // namespace

const PatternMatcher& pm_vector_cleanup() {
  static const PatternMatcher pm{
      rule(UPat::op(Ops::GEP, {x}).named(r0), fold_gep),
      rule(UPat::op(Ops::VECTORIZE).allow_any_len().named(r0), collapse_any),
  };
  return pm;
}

UOp devectorize(const UOp& ast, const Target& target) {
  Width w{static_cast<int>(std::max<uint32_t>(1, target.max_vector_width)), target.has(KILN_TARGET_HAS_MASKED_VECTORS),
          target.has(KILN_TARGET_VECTOR_MEMORY_ONLY)};
  bool any = false;
  for (const UOpNode* n : toposort_nodes(ast))
    any |= (!n->dtype.is_ptr() && n->dtype.count() > (w.memory_only ? 1 : w.max)) || (!w.masked && lane_gated(UOpAccess::from_node(n)));
  if (!any) return ast;
  static const PatternMatcher pm{
      rule(UPat::ops(groups::Elementwise).allow_any_len().named(r0), split_alu),
      rule(UPat::op(Ops::LOAD, {x}).named(r0), split_load),
      rule(UPat::op(Ops::STORE, {x, y}).named(r0), split_store),
      rule(UPat::op(Ops::REDUCE).allow_any_len().named(r0), split_reduce),
      rule(UPat::op(Ops::GEP).named(r0), split_gep),
      rule(UPat::op(Ops::GEP, {x}).named(r0), fold_gep),
      rule(UPat::op(Ops::VECTORIZE).allow_any_len().named(r0), collapse_narrow),
  };
  return graph_rewrite(ast, pm + symbolic(), w, "devectorize");
}

}  // namespace kiln
