// codegen/opt/opt.cpp - optimisation actions: whether one applies to a kernel, and applying it.
#include "codegen/opt/opt.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "ir/alu.hpp"
#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "codegen/target.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/flat_map.hpp"
#include "support/hash.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

int64_t range_axis(const UOp& r) { return r.arg_ints()[0]; }
AxisType range_type(const UOp& r) { return static_cast<AxisType>(r.arg_ints()[1]); }
bool range_vectorized(const UOp& r) { return r.arg_ints().size() > 2 && r.arg_ints()[2]; }

std::string Opt::str() const {
  return cat(opt_action(op).name, "(", axis, ", ", amount, vectorize ? ", vector)" : gated ? ", gated)" : ")");
}

Opt parse_opt(std::string_view text) {
  auto bad = [&]() -> Opt {
    std::string names;
    for (const OptAction& a : kOptActions) names += cat(names.empty() ? "" : ", ", a.name);
    fail(ErrorCode::invalid_argument, "cannot read the action '", text,
         "': write NAME(axis, amount), NAME(axis, amount, vector) or PADTO(axis, amount, gated), with axis and amount ",
         "integers from 0 to 2^31 - 1 and NAME one of ", names);
  };
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close != text.size() - 1) return bad();
  Opt o{OptOp::UPCAST, 0, 0};
  std::string_view name = text.substr(0, open);
  auto it = std::find_if(std::begin(kOptActions), std::end(kOptActions), [&](const OptAction& a) { return name == a.name; });
  if (it == std::end(kOptActions)) return bad();
  o.op = it->op;
  std::vector<std::string> parts{""};
  for (char ch : text.substr(open + 1, close - open - 1)) {
    if (ch == ',') parts.emplace_back();
    else if (ch != ' ') parts.back() += ch;
  }
  auto number = [&](const std::string& s, int64_t& v) {
    char* end = nullptr;
    errno = 0;
    v = std::strtoll(s.c_str(), &end, 10);
    return !s.empty() && *end == 0 && errno != ERANGE && v >= 0 && v <= INT32_MAX;
  };
  if (parts.size() < 2 || parts.size() > 3 || !number(parts[0], o.axis) || !number(parts[1], o.amount)) return bad();
  if (parts.size() == 3) {
    if (parts[2] == "vector") o.vectorize = true;
    else if (parts[2] == "gated") o.gated = true;
    else return bad();
  }
  return o;
}

std::string opts_text(std::span<const Opt> opts) {
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : " ") + o.str();
  return s;
}

std::vector<Opt> parse_opts(std::string_view text) {
  std::vector<Opt> out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == ',' || text[i] == ';' || text[i] == '\n' || text[i] == '\t') {
      ++i;
      continue;
    }
    size_t close = text.find(')', i);
    size_t end = close == std::string_view::npos ? text.size() : close + 1;
    out.push_back(parse_opt(text.substr(i, end - i)));
    i = end;
  }
  return out;
}

std::vector<UOp> ranges_of(const UOp& ast) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE) out.push_back(u);
  return out;
}

// No value depends on both ranges while both are open (a REDUCE or END closes the ranges it lists):
// softmax's max and its sum of exp each reduce the row in a loop of their own
// (schedule/group.cpp), so each can have vector lanes.
bool independent(const UOp& ast, const UOp& a, const UOp& b) {
  PtrMap<uint8_t> open;
  for (const UOp& u : toposort(ast)) {
    uint8_t bits = u == a ? 1 : u == b ? 2 : 0;
    for (size_t i = 0; i < u.nsrc(); ++i) bits |= *open.find(u.src(i).node());
    if (u.op() == Ops::REDUCE || u.op() == Ops::END)
      for (size_t i = 1; i < u.nsrc(); ++i) bits &= static_cast<uint8_t>(u.src(i) == a ? ~1 : u.src(i) == b ? ~2 : ~0);
    if (bits == 3) return false;
    open[u.node()] = bits;
  }
  return true;
}

namespace {

UOp make_range(const UOp& size, int64_t axis, AxisType t, bool vec = false) {
  std::vector<int64_t> arg{axis, static_cast<int64_t>(t)};
  if (vec) arg.push_back(1);
  return UOp::make(Ops::RANGE, dtypes::index, {size}, Arg{arg});
}


// SWAP: exchanges two output ranges wherever an END lists both.
UOp swap_loops(const UOp& ast, const UOp& a, const UOp& b) {
  std::vector<std::pair<UOp, UOp>> ends;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::END) continue;
    std::vector<UOp> src(u.src().begin(), u.src().end());
    auto ia = std::find(src.begin() + 1, src.end(), a), ib = std::find(src.begin() + 1, src.end(), b);
    if (ia == src.end() || ib == src.end()) continue;
    std::iter_swap(ia, ib);
    ends.push_back({u, u.replace_src(src)});
  }
  return substitute(ast, ends);
}

int64_t next_axis(const UOp& ast) {
  int64_t m = -1;
  for (const UOp& r : ranges_of(ast)) m = std::max(m, range_axis(r));
  return m + 1;
}

}  // namespace

UOp replace_range(const UOp& ast, const UOp& r, const UOp& value, const std::vector<UOp>& replacement) {
  std::vector<std::pair<UOp, UOp>> ends;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::END && u.op() != Ops::REDUCE) continue;
    std::vector<UOp> src{u.src(0)};
    bool hit = false;
    for (size_t i = 1; i < u.nsrc(); ++i) {
      if (u.src(i) == r) {
        hit = true;
        for (const UOp& x : replacement) src.push_back(x);
      } else {
        src.push_back(u.src(i));
      }
    }
    if (hit) ends.push_back({u, u.replace_src(src)});
  }
  UOp out = substitute(ast, ends);
  return substitute(out, {{r, value}});
}

namespace {

// StrideMemo's table: (index, range) -> the stride, or nullopt where there is none. The keys hold
// their nodes, so a pointer never names another node while the table lives.
struct StridePairHash {
  size_t operator()(const std::pair<UOp, UOp>& k) const { return hash_combine(k.first.hash(), k.second.hash()); }
};
using StrideTable = std::unordered_map<std::pair<UOp, UOp>, std::optional<int64_t>, StridePairHash>;
thread_local StrideTable* t_strides = nullptr;

// The coefficient of r in an index built from +, -, * by constants, and terms without r (which
// a stride_of by substitution and simplification folds to the same constant); false where r
// appears any other way (under a division, a modulo, a where, a product of two terms with r) or
// the walk passes `budget` nodes (a DAG revisits shared nodes). Linear, so no end check.
bool affine_stride(const UOp& x, const UOp& r, int64_t& coef, int& budget) {
  if (--budget < 0) return false;
  if (x == r) return coef = 1, true;
  if (x.op() == Ops::CONST || x.op() == Ops::DEFINE_VAR) return coef = 0, true;
  int64_t a = 0, b = 0;
  switch (x.op()) {
    case Ops::ADD:
    case Ops::SUB:
      if (!affine_stride(x.src(0), r, a, budget) || !affine_stride(x.src(1), r, b, budget)) return false;
      coef = x.op() == Ops::ADD ? a + b : a - b;
      return true;
    case Ops::NEG:
      if (!affine_stride(x.src(0), r, a, budget)) return false;
      coef = -a;
      return true;
    case Ops::MUL:
      if (!affine_stride(x.src(0), r, a, budget) || !affine_stride(x.src(1), r, b, budget)) return false;
      if (a == 0 && b == 0) return coef = 0, true;
      if (x.src(1).is_const() && x.src(1).dtype().is_int()) return coef = a * x.src(1).arg_int(), true;
      if (x.src(0).is_const() && x.src(0).dtype().is_int()) return coef = b * x.src(0).arg_int(), true;
      return false;
    default:
      for (const UOp& s : x.src()) {  // anything else: only without r
        if (!affine_stride(s, r, a, budget)) return false;
        if (a != 0) return false;
      }
      return coef = 0, true;
  }
}

bool compute_stride(const UOp& idx, const UOp& r, int64_t& stride) {
  int budget = 256;
  if (idx.dtype().is_int() && affine_stride(idx, r, stride, budget)) return true;
  UOp i0 = simplify(substitute(idx, {{r, UOp::cindex(0)}}));
  UOp i1 = simplify(substitute(idx, {{r, UOp::cindex(1)}}));
  UOp d = simplify(i1 - i0);
  if (!d.is_const()) return false;
  stride = d.arg_int();
  // linear over the whole range: check the last value too
  if (!r.src(0).is_const()) return true;
  int64_t n = r.src(0).arg_int();
  if (n <= 2) return true;
  UOp in = simplify(substitute(idx, {{r, UOp::cindex(n - 1)}}));
  UOp dn = simplify(in - i0);
  return dn.is_const() && dn.arg_int() == stride * (n - 1);
}

}  // namespace

StrideMemo::StrideMemo() : owner_(t_strides == nullptr) {
  if (owner_) t_strides = new StrideTable();
}

StrideMemo::~StrideMemo() {
  if (!owner_) return;
  delete t_strides;
  t_strides = nullptr;
}

bool stride_of(const UOp& idx, const UOp& r, int64_t& stride) {
  if (!t_strides) return compute_stride(idx, r, stride);
  auto [it, fresh] = t_strides->try_emplace({idx, r});
  if (fresh) {
    int64_t s = 0;
    if (compute_stride(idx, r, s)) it->second = s;
  }
  if (!it->second) return false;
  stride = *it->second;
  return true;
}

bool clamps_along(const UOp& idx, const UOp& r, const Target* target, bool lanes_elsewhere) {
  int64_t s = 0;
  const bool vectors_masked = !target || target->has(KILN_TARGET_HAS_MASKED_VECTORS);
  // (an index clamped by an earlier PADTO stays in bounds when r's padding clamps again)
  return stride_of(without_clamps(idx), r, s) && (std::abs(s) > kMaxShuffleStride || ((!vectors_masked || lanes_elsewhere) && s != 0));
}

bool picks_strided_lanes(int64_t stride, int64_t lanes) {
  if (stride < 2 || stride > kMaxShuffleStride || lanes < 2) return false;
  const int64_t span = stride * (lanes - 1) + 1, chunks = (span + lanes - 1) / lanes;
  return chunks * 4 <= lanes;  // (not 3 loads for 4 lanes)
}

UOp without_clamps(const UOp& idx) {
  std::vector<std::pair<UOp, UOp>> clamps;
  for (const UOp& u : toposort(idx)) {
    if (u.op() != Ops::WHERE || u.src(0).op() != Ops::CMPLT || !(u.src(0).src(0) == u.src(1))) continue;
    const UOp &n = u.src(0).src(1), &last = u.src(2);
    if (n.is_const() && last.is_const() && last.arg_int() == n.arg_int() - 1) clamps.push_back({u, u.src(1)});
  }
  return clamps.empty() ? idx : substitute(idx, clamps);
}

int64_t const_size(const UOp& r) { return r.src(0).is_const() ? r.src(0).arg_int() : 0; }

int64_t remaining(const UOp& r, std::span<const Opt> opts) {
  int64_t n = const_size(r);
  for (const Opt& o : opts) {
    if (o.axis != range_axis(r)) continue;
    if (opt_action(o.op).split == OptSplit::exact) n /= o.amount;
    if (opt_action(o.op).split == OptSplit::blocks) n = o.amount;
    if (opt_action(o.op).split == OptSplit::pad) n = (n + o.amount - 1) / o.amount * o.amount;
  }
  return n;
}

bool has_stride(const UOp& idx, const UOp& r, int64_t want) {
  int64_t s;
  return idx && stride_of(idx, r, s) && s == want;
}

UOp find_axis(const UOp& ast, int64_t axis) {
  for (const UOp& x : ranges_of(ast))
    if (range_axis(x) == axis) return x;
  return {};
}

namespace {

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The axis types the expanding actions make: their ranges become copies of the body.
bool expanded(AxisType t) {
  for (const OptAction& a : kOptActions)
    if (a.expands && a.makes == t) return true;
  return false;
}

std::string swap_problem(const UOp& ast, const UOp& a, const Opt& opt) {
  UOp b = find_axis(ast, opt.amount);
  if (!b || opt.amount == opt.axis) return cat("the kernel has no other axis ", opt.amount);
  if (range_type(a) != AxisType::LOOP || range_type(b) != AxisType::LOOP) return "SWAP exchanges output (loop) axes";
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::END && std::find(u.src().begin() + 1, u.src().end(), a) != u.src().end() &&
        std::find(u.src().begin() + 1, u.src().end(), b) != u.src().end())
      return {};
  return cat("axes ", opt.axis, " and ", opt.amount, " are not loops of one nest");
}

// PADTO: an odd axis grows to a multiple of `amount`. The padded iterations are safe to run
// masked: their memory accesses are gated and kiln's integer division is total (decompose.cpp),
// so a gated load's 0 as a divisor does not trap.
std::string pad_problem(const UOp& size, int64_t amount) {
  if (!size.is_const()) return "the axis size is symbolic";
  const int64_t n = size.arg_int();
  if (n % amount == 0) return cat("the axis size ", n, " is a multiple of ", amount, " already");
  if ((n + amount - 1) / amount * amount > kMaxPadFactor * n)
    return cat("padding ", n, " to a multiple of ", amount, " would mask more than half of its iterations");
  return {};
}

// Whether `x` is 0 on every masked iteration of a PADTO: a load gated by `valid` (a gated load
// yields 0), a cast of one, or a product of two (0 * 0; 0 * another value could be NaN). Then an
// ADD reduce needs no select for the padding (a matmul's padded K).
bool zero_when_masked(const UOp& x, const UOp& valid) {
  switch (x.op()) {
    case Ops::LOAD: {
      if (x.nsrc() != 1 || x.src(0).op() != Ops::INDEX || x.src(0).nsrc() < 3) return false;
      const UOp& gate = x.src(0).src(2);
      return gate == valid || (gate.op() == Ops::AND && (gate.src(0) == valid || gate.src(1) == valid));
    }
    case Ops::CAST: return zero_when_masked(x.src(0), valid);
    case Ops::MUL: return zero_when_masked(x.src(0), valid) && zero_when_masked(x.src(1), valid);
    default: return false;
  }
}

// PADTO: range r grows to a multiple of `amount`; every access along it is gated by r < n (or
// clamped, below) and a reduce over it takes the identity for the masked iterations.
UOp pad_range(const UOp& ast, const UOp& r, int64_t amount, const Target* target) {
  const int64_t n = const_size(r);
  std::vector<int64_t> arg = r.arg_ints();
  UOp padded = UOp::make(Ops::RANGE, r.dtype(), {UOp::cindex((n + amount - 1) / amount * amount)}, Arg{arg});
  UOp valid = padded.lt(UOp::cindex(n));
  UOp out = replace_range(ast, r, padded, {padded});
  // the nodes that move with the padded range (inside its loop: what a REDUCE or END over it
  // yields is outside) and their accesses gated, rebuilt bottom-up: an access whose address
  // reads another (a gather's index, a row buffer after its reduce) holds the gated one
  PtrMap<char> dep;
  PtrMap<UOp> done;
  // A load along a padded output axis reads the last real element instead (clamped, not gated):
  // the padded iterations' results are never stored, and a gate is a branch in the loop around
  // it (a 6-row tile over 512 rows: six branches per k step). Not for an access contiguous or
  // nearly so along the axis (it may become a vector: one masked load, or a few and a shuffle,
  // kMaxShuffleStride), one inside a gated access, or one whose address reads a load.
  const bool output_axis = range_type(r) == AxisType::LOOP;
  // r's accesses are scalars for good where another axis has the vector lanes of a value that
  // depends on r too (one vector axis per value): a convolution's channel vectors
  const std::vector<UOp> ranges = ranges_of(ast);
  const bool lanes_elsewhere = std::any_of(ranges.begin(), ranges.end(), [&](const UOp& x) {
    return !(x == r) && range_vectorized(x) && !independent(ast, x, r);
  });
  const UOp last = valid.where(padded, UOp::cindex(n - 1));
  PtrMap<char> stored;
  for (const UOp& u : toposort(out))
    if (u.op() == Ops::STORE) stored[u.src(0).node()] = 1;
  auto clamps = [&](const UOp& u, const UOp& x) {
    if (!output_axis || stored.contains(u.node()) || x.nsrc() > 2 || !clamps_along(x.src(1), padded, target, lanes_elsewhere)) return false;
    const std::vector<UOp> sub = toposort(x.src(1));
    return std::none_of(sub.begin(), sub.end(), [](const UOp& v) { return v.op() == Ops::LOAD; });
  };
  for (const UOp& u : toposort(out)) {
    bool d = u == padded;
    for (const UOp& s : u.src()) d |= dep.contains(s.node());
    if ((u.op() == Ops::REDUCE || u.op() == Ops::END) && std::find(u.src().begin() + 1, u.src().end(), padded) != u.src().end())
      d = false;
    if (d) dep[u.node()] = 1;
    UOp x = with_rebuilt_srcs(u.node(), done);
    if (d && u.op() == Ops::INDEX && clamps(u, x)) x = x.replace_src({x.src(0), substitute(x.src(1), {{padded, last}})});
    else if (d && u.op() == Ops::INDEX) x = x.replace_src({x.src(0), x.src(1), x.nsrc() > 2 ? x.src(2) & valid : valid});
    done[u.node()] = x;
  }
  out = *done.find(out.node());
  std::vector<std::pair<UOp, UOp>> masked;
  for (const UOp& u : toposort(out)) {
    if (u.op() != Ops::REDUCE || std::find(u.src().begin() + 1, u.src().end(), padded) == u.src().end()) continue;
    const Ops op = static_cast<Ops>(u.arg_ints()[0]);
    const UOp& v = u.src(0);
    if (op == Ops::ADD && zero_when_masked(v, valid)) continue;
    std::vector<UOp> src(u.src().begin(), u.src().end());
    src[0] = valid.where(v, const_of(v.dtype(), reduce_identity(op, v.dtype())));
    masked.push_back({u, u.replace_src(src)});
  }
  return substitute(out, masked);
}

// Whether grouped reduce range r takes the group index of one in `earlier` (the same size, and no
// value depends on both: a row kernel's reduces, one after the other; gpudims.cpp).
bool shares_group(const UOp& ast, const UOp& r, const std::vector<UOp>& earlier) {
  return std::any_of(earlier.begin(), earlier.end(),
                     [&](const UOp& g) { return const_size(g) == const_size(r) && independent(ast, g, r); });
}

// Limits a target puts on an action (none for a null target: structure only).
std::string target_problem(const UOp& ast, const Opt& opt, const Target& t) {
  int64_t threads = 1, local = 1, locals = 0, groups = 0, lanes = 1, reduces = 0;
  for (const UOp& u : toposort(ast)) reduces += u.op() == Ops::REDUCE;
  const OptAction& a = opt_action(opt.op);
  const UOp axis = find_axis(ast, opt.axis);
  std::vector<UOp> grouped;
  for (const UOp& r : ranges_of(ast)) {
    AxisType rt = range_type(r);
    if (rt == AxisType::THREAD) threads *= const_size(r);
    // a grouped reduce sharing another's group index (gpudims) widens the workgroup once
    if (rt == AxisType::GROUP_REDUCE && shares_group(ast, r, grouped)) continue;
    if (rt == AxisType::GROUP_REDUCE) grouped.push_back(r);
    if (rt == AxisType::LOCAL || rt == AxisType::GROUP_REDUCE) local *= const_size(r), ++locals;
    groups += rt == AxisType::GROUP_REDUCE;
    if (rt == AxisType::UPCAST) lanes *= const_size(r);
  }
  if (a.makes == AxisType::GROUP_REDUCE && axis)
    for (const UOp& g : grouped)
      if (const_size(g) == opt.amount && independent(ast, g, axis)) return {};  // it joins g's group
  // what the action needs, in this order: threads, workgroups, shared memory
  if ((a.needs & KILN_TARGET_HAS_THREADS) && !t.has(KILN_TARGET_HAS_THREADS)) return "the target has no CPU threads";
  if ((a.needs & KILN_TARGET_HAS_LOCAL) && !t.has(KILN_TARGET_HAS_LOCAL)) return "the target has no workgroups";
  if ((a.needs & KILN_TARGET_HAS_SHARED) && (!t.has(KILN_TARGET_HAS_SHARED) || t.shared_max == 0)) return "the target has no shared memory";
  switch (a.makes) {
    case AxisType::THREAD:
      // several axes may be threaded: their chunks multiply (gpudims numbers them by one index)
      if (static_cast<uint64_t>(threads * opt.amount) > t.global_max[0])
        return cat("more threads than the target launches (", t.global_max[0], ")");
      return {};
    case AxisType::LOCAL:
    case AxisType::GROUP_REDUCE: {
      const bool group = a.makes == AxisType::GROUP_REDUCE;
      if (locals >= 3) return "three workgroup axes are in use already";
      if (group && groups >= 1 && locals > groups) return "grouped reduces go before workgroup (LOCAL) axes";
      uint32_t dim_max = t.local_max[0];
      for (int64_t d = 0; d <= locals; ++d) dim_max = std::min(dim_max, t.local_max[d]);
      if (opt.amount > dim_max || local * opt.amount > t.local_prod_max)
        return cat("a workgroup of ", local * opt.amount, " items exceeds the target's (", dim_max, " per axis, ",
                   t.local_prod_max, " in all)");
      // a grouped reduce keeps one partial per item, upcast copy and reduce in shared memory
      // (8 bytes: the widest accumulator), a workgroup item along an output (LOCAL) too
      if ((group || groups > 0) && static_cast<uint64_t>(local * opt.amount * lanes * reduces * 8) > t.shared_max)
        return cat("its partial sums need more than the target's ", t.shared_max, " bytes of shared memory");
      return {};
    }
    default: return {};
  }
}

}  // namespace

// (ranges no value shares with r multiply nothing: a row kernel's reduces run one after the
// other, each unrolled on its own)
int64_t copies_after(const UOp& ast, const UOp& r, int64_t amount) {
  int64_t copies = amount;
  for (const UOp& x : ranges_of(ast))
    if (expanded(range_type(x)) && !independent(ast, x, r)) copies *= const_size(x);
  return copies;
}

std::string opt_problem(const UOp& ast, const Opt& opt, const Target* target) {
  UOp r = find_axis(ast, opt.axis);
  if (!r) return cat("the kernel has no axis ", opt.axis);
  if (opt.op != OptOp::STAGE && is_staged(ast)) return "the kernel is staged (STAGE actions come last)";
  const OptAction& a = opt_action(opt.op);
  if (opt.gated && a.split != OptSplit::pad) return "only PADTO keeps its gates";
  if (a.split == OptSplit::exchange) return swap_problem(ast, r, opt);
  AxisType t = range_type(r);
  if (!(a.on & axis_bit(t)))
    return cat("it applies to ", a.on == kLoopAxes ? "output (loop) axes" : a.on == kReduceAxes ? "reduce axes" : "output or reduce axes",
               "; axis ", opt.axis, " is ", axis_type_name(t));
  if (a.split == OptSplit::stage) {
    if (opt.vectorize) return "only UPCAST and UNROLL make vector lanes";
    if (std::string why = target ? target_problem(ast, opt, *target) : std::string{}; !why.empty()) return why;
    return stage_problem(ast, r, opt, target);
  }
  if (opt.amount <= 1) return "amount must be > 1";
  if (a.expands)
    if (std::string why = row_buffer_problem(ast, r); !why.empty()) return why;
  const UOp& size = r.src(0);
  if (a.split == OptSplit::blocks && size.is_const() && size.arg_int() == opt.amount)
    return cat("one block of ", opt.amount, " is the whole axis");
  if (a.split == OptSplit::chunks) {
    if (!size.is_const()) return "the axis size is symbolic";
    // (one chunk of one would also be the axis itself: the split could not tell them apart)
    if (size.arg_int() < 2) return "the axis has one iteration: nothing to split across threads";
  } else if ((a.split == OptSplit::exact || a.split == OptSplit::blocks) && (!size.is_const() || size.arg_int() % opt.amount != 0)) {
    return cat("the axis size ", render_expr(size), " is not divisible by ", opt.amount);
  }
  if (opt.vectorize) {
    if (!a.expands) return "only UPCAST and UNROLL make vector lanes";
    if (!is_pow2(opt.amount) || opt.amount > kMaxVectorLanes) return cat("vector lanes are a power of two up to ", kMaxVectorLanes);
    for (const UOp& x : ranges_of(ast))
      if (range_vectorized(x) && !independent(ast, x, r))
        return "the kernel has vector lanes already, and some value depends on both axes (one vector axis per value)";
  }
  if (a.split == OptSplit::pad) return pad_problem(size, opt.amount);
  if (a.expands)
    if (int64_t copies = copies_after(ast, r, opt.amount); copies > kMaxExpansion)
      return cat("the kernel would hold ", copies, " copies of a value (at most ", kMaxExpansion, ")");
  if (std::string why = target ? target_problem(ast, opt, *target) : std::string{}; !why.empty()) return why;
  return a.split == OptSplit::blocks ? block_problem(ast, r, opt) : std::string{};
}

UOp apply_opt(const UOp& ast, const Opt& opt, const Target* target) {
  if (std::string why = opt_problem(ast, opt, target); !why.empty())
    fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": ", why);
  const OptAction& a = opt_action(opt.op);
  UOp r = find_axis(ast, opt.axis);
  if (a.split == OptSplit::exchange) return swap_loops(ast, r, find_axis(ast, opt.amount));
  if (a.split == OptSplit::pad) return pad_range(ast, r, opt.amount, target);
  if (a.split == OptSplit::stage) return stage_operand(ast, r, opt, next_axis(ast), target);
  if (a.split == OptSplit::blocks) return block_reduce(ast, r, opt, next_axis(ast));
  const UOp& size = r.src(0);
  const int64_t amt = opt.amount;
  const AxisType t = range_type(r);
  const int64_t axis = next_axis(ast);
  if (a.split == OptSplit::chunks) {
    int64_t n = size.arg_int(), chunk = (n + amt - 1) / amt, threads = (n + chunk - 1) / chunk;
    UOp tid = make_range(UOp::cindex(threads), axis, a.makes);
    UOp inner_size = n % chunk == 0 ? UOp::cindex(chunk) : simplify((UOp::cindex(n) - tid * chunk).minimum(UOp::cindex(chunk)));
    UOp inner = make_range(inner_size, range_axis(r), t);
    return replace_range(ast, r, tid * chunk + inner, {tid, inner});
  }
  UOp inner = make_range(UOp::cindex(amt), axis, a.makes, opt.vectorize);
  // a whole axis unrolled or upcast leaves no loop of one behind (LOCAL and GROUP keep their
  // outer range: gpudims pairs them)
  if (size.arg_int() == amt && a.expands)
    return replace_range(ast, r, inner, {inner});
  UOp outer = make_range(UOp::cindex(size.arg_int() / amt), range_axis(r), t);
  return replace_range(ast, r, outer * amt + inner, {outer, inner});
}

UOp apply_opts(const UOp& ast, std::span<const Opt> opts, const Target& target) {
  UOp out = ast;
  for (size_t i = 0; i < opts.size(); ++i) {
    if (std::string why = opt_problem(out, opts[i], &target); !why.empty())
      fail(ErrorCode::invalid_argument, "opt #", i + 1, " ", opts[i].str(), " does not apply to the kernel as the ",
           i == 0 ? "scheduler made it" : "actions before it left it", ": ", why);
    out = apply_opt(out, opts[i], &target);
  }
  return out;
}

bool OptPlan::add(const Opt& opt) {
  std::string why = opt_problem(ast_, opt, &target_);
  if (!why.empty()) {
    if (debug_level() >= 3) log_line(cat("heuristic skips ", opt.str(), ": ", why));
    return false;
  }
  ast_ = apply_opt(ast_, opt, &target_);
  opts_.push_back(opt);
  return true;
}

}  // namespace kiln
