// codegen/opt.cpp - applying optimisation actions, and the hand-coded heuristic.
#include "codegen/opt.hpp"

#include <algorithm>
#include <optional>

#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "plugin/device.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

int64_t range_axis(const UOp& r) { return r.arg_ints()[0]; }
AxisType range_type(const UOp& r) { return static_cast<AxisType>(r.arg_ints()[1]); }
bool range_vectorized(const UOp& r) { return r.arg_ints().size() > 2 && r.arg_ints()[2]; }

std::string Opt::str() const {
  static const char* const names[] = {"UPCAST", "UNROLL", "LOCAL", "THREAD", "SWAP", "GROUP"};
  const char* n = names[static_cast<int>(op)];
  return cat(n, "(", axis, ", ", amount, vectorize ? ", vector)" : ")");
}

namespace {

// A typical per-core L2 (the target does not report cache sizes yet).
constexpr int64_t kL2Bytes = int64_t{1} << 20;

UOp ci(int64_t v) { return UOp::cint(dtypes::index, v); }

UOp make_range(const UOp& size, int64_t axis, AxisType t, bool vec = false) {
  std::vector<int64_t> arg{axis, static_cast<int64_t>(t)};
  if (vec) arg.push_back(1);
  return UOp::make(Ops::RANGE, dtypes::index, {size}, Arg{arg});
}

std::vector<UOp> ranges_of(const UOp& ast) {
  std::vector<UOp> out;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::RANGE) out.push_back(u);
  return out;
}

// Rebuilds every END that closes `r` so it closes `replacement` ranges instead (in that order).
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

// SWAP: exchanges two output ranges wherever an END lists both.
UOp swap_loops(const UOp& ast, const UOp& a, const Opt& opt) {
  UOp b;
  for (const UOp& x : ranges_of(ast))
    if (range_axis(x) == opt.amount) b = x;
  if (!b || opt.amount == opt.axis) fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": no other axis ", opt.amount);
  if (range_type(a) != AxisType::LOOP || range_type(b) != AxisType::LOOP)
    fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": SWAP exchanges output (loop) axes");
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

bool stride_of(const UOp& idx, const UOp& r, int64_t& stride) {
  UOp i0 = simplify(substitute(idx, {{r, ci(0)}}));
  UOp i1 = simplify(substitute(idx, {{r, ci(1)}}));
  UOp d = simplify(i1 - i0);
  if (!d.is_const()) return false;
  stride = d.arg_int();
  // linear over the whole range: check the last value too
  if (!r.src(0).is_const()) return true;
  int64_t n = r.src(0).arg_int();
  if (n <= 2) return true;
  UOp in = simplify(substitute(idx, {{r, ci(n - 1)}}));
  UOp dn = simplify(in - i0);
  return dn.is_const() && dn.arg_int() == stride * (n - 1);
}

UOp apply_opt(const UOp& ast, const Opt& opt) {
  UOp r;
  for (const UOp& x : ranges_of(ast))
    if (range_axis(x) == opt.axis) r = x;
  if (!r) fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": the kernel has no axis ", opt.axis);
  if (opt.op == OptOp::SWAP) return swap_loops(ast, r, opt);
  const UOp& size = r.src(0);
  int64_t amt = opt.amount;
  AxisType t = range_type(r);
  bool reduce = t == AxisType::REDUCE;
  if (amt <= 1) fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": amount must be > 1");
  if (opt.op == OptOp::GROUP && !reduce) fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": GROUP is for reduce axes");
  if ((opt.op == OptOp::UNROLL) != reduce && opt.op != OptOp::THREAD && opt.op != OptOp::LOCAL && opt.op != OptOp::GROUP)
    fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": ", reduce ? "UNROLL" : "UPCAST", " is for ", reduce ? "reduce" : "output",
         " axes");
  if ((opt.op == OptOp::THREAD || opt.op == OptOp::LOCAL) && reduce)
    fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": a reduce axis cannot be split across threads");
  int64_t axis = next_axis(ast);
  if (opt.op == OptOp::THREAD) {
    if (!size.is_const()) fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": the axis size is symbolic");
    int64_t n = size.arg_int(), chunk = (n + amt - 1) / amt, threads = (n + chunk - 1) / chunk;
    UOp tid = make_range(ci(threads), axis, AxisType::THREAD);
    UOp inner_size = n % chunk == 0 ? ci(chunk) : simplify((ci(n) - tid * chunk).minimum(ci(chunk)));
    UOp inner = make_range(inner_size, range_axis(r), t);
    return replace_range(ast, r, tid * chunk + inner, {tid, inner});
  }
  if (!size.is_const() || size.arg_int() % amt != 0)
    fail(ErrorCode::invalid_argument, "opt ", opt.str(), ": the axis size ", render_expr(size), " is not divisible by ", amt);
  AxisType inner_t = opt.op == OptOp::LOCAL    ? AxisType::LOCAL
                     : opt.op == OptOp::GROUP  ? AxisType::GROUP_REDUCE
                     : opt.op == OptOp::UNROLL ? AxisType::UNROLL
                                               : AxisType::UPCAST;
  UOp inner = make_range(ci(amt), axis, inner_t, opt.vectorize);
  // a whole axis unrolled or upcast leaves no loop of one behind (LOCAL and GROUP keep their
  // outer range: gpudims pairs them)
  if (size.arg_int() == amt && (opt.op == OptOp::UNROLL || opt.op == OptOp::UPCAST))
    return replace_range(ast, r, inner, {inner});
  UOp outer = make_range(ci(size.arg_int() / amt), range_axis(r), t);
  return replace_range(ast, r, outer * amt + inner, {outer, inner});
}

KernelShape inspect_kernel(const UOp& ast) {
  KernelShape k;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::END && u.src(0).op() == Ops::STORE)
      for (size_t i = 1; i < u.nsrc(); ++i) k.out.push_back(u.src(i));
    if (u.op() == Ops::STORE) {
      k.store_index = u.src(0).src(1);
      k.itemsize = u.src(1).dtype().scalar_size();
    }
    if (u.op() == Ops::LOAD) k.load_indices.push_back(u.src(0).src(1));
    if (u.op() == Ops::RANGE && range_type(u) == AxisType::REDUCE) k.reduce.push_back(u);
  }
  for (const UOp& r : k.out)
    if (has_stride(k.store_index, r, 1)) k.contiguous = r;
  return k;
}

int64_t const_size(const UOp& r) { return r.src(0).is_const() ? r.src(0).arg_int() : 0; }

bool has_stride(const UOp& idx, const UOp& r, int64_t want) {
  int64_t s;
  return idx && stride_of(idx, r, s) && s == want;
}

std::vector<Opt> hand_coded_optimizations(const UOp& ast, const Target& target) {
  std::vector<Opt> opts;
  KernelShape k = inspect_kernel(ast);
  if (!k.store_index) return opts;
  int64_t lanes = std::max<int64_t>(1, static_cast<int64_t>(target.max_vector_width) * 4 / std::max(1, k.itemsize));
  bool cpu = target.has(KILN_TARGET_HAS_THREADS);
  const UOp& contiguous = k.contiguous;
  // Loads whose index moves along r; "contiguous along r" when each moves by exactly one element.
  auto contiguous_loads = [&](const UOp& r) {
    bool any = false;
    for (const UOp& idx : k.load_indices) {
      if (has_stride(idx, r, 0)) continue;
      if (!has_stride(idx, r, 1)) return false;
      any = true;
    }
    return any;
  };
  // Some input does not move along r: it is reused from registers when r is upcast.
  auto reused = [&](const UOp& r) {
    for (const UOp& idx : k.load_indices)
      if (has_stride(idx, r, 0)) return true;
    return false;
  };
  // Every load that moves along `v` stays put along r: upcasting r reuses v's vector loads.
  auto reuses_loads_of = [&](const UOp& r, const UOp& v) {
    for (const UOp& idx : k.load_indices)
      if (!has_stride(idx, v, 0) && !has_stride(idx, r, 0)) return false;
    return true;
  };
  auto upcast_amount = [&](const UOp& r) {
    int64_t n = const_size(r);
    for (const Opt& o : opts)
      if (o.axis == range_axis(r) && o.op == OptOp::UPCAST) n /= o.amount;
    return n;
  };
  // A register tile needs registers: 32 vector registers with AVX-512 (16 lanes), else 16.
  int tile_rows = target.max_vector_width >= 16 ? 4 : 2;
  int64_t vec = 0;
  std::optional<Opt> swap;  // applied last: THREAD still splits the outermost axis
  bool register_tile = false;
  if (!k.reduce.empty() && contiguous && reused(contiguous) && contiguous_loads(contiguous) && lanes > 1 &&
      const_size(contiguous) % lanes == 0) {
    // matmul-like (C = A @ B): a register tile. Vector lanes along the contiguous output axis
    // (loads of B are vectors), two vectors, and rows of an output axis along which B's vectors
    // are reused (A's elements broadcast): 2 x 8 vector accumulators with 32 vector registers
    // (AVX-512), 2 x 4 with 16. (Measured on AVX-512: 8 rows beat 4, 6 and 12; two vectors
    // beat one, three and four.)
    opts.push_back({OptOp::UPCAST, range_axis(contiguous), lanes, true});
    vec = lanes;
    register_tile = true;
    if ((const_size(contiguous) / lanes) % 2 == 0) opts.push_back({OptOp::UPCAST, range_axis(contiguous), 2});
    for (auto it = k.out.rbegin(); it != k.out.rend(); ++it)
      if (!(*it == contiguous) && const_size(*it) % 4 == 0 && const_size(*it) >= 8 && reuses_loads_of(*it, contiguous)) {
        int64_t rows = tile_rows * 2 <= const_size(*it) && const_size(*it) % (tile_rows * 2) == 0 ? tile_rows * 2 : 4;
        opts.push_back({OptOp::UPCAST, range_axis(*it), rows});
        // Rows outside columns stream all of B through the caches once per row tile. When B is
        // larger than the L2 but one column panel of it (K x tile width) is small, walk the
        // column panels outside and the row tiles inside: the panel stays in L2.
        int64_t k_len = 1;
        for (const UOp& red : k.reduce) k_len *= std::max<int64_t>(1, const_size(red));
        int64_t panel = k_len * lanes * 2 * k.itemsize, whole = k_len * const_size(contiguous) * k.itemsize;
        auto pos = [&](const UOp& r) { return std::find(k.out.begin(), k.out.end(), r) - k.out.begin(); };
        if (whole > kL2Bytes && panel <= kL2Bytes / 4 && pos(*it) < pos(contiguous))
          swap = {OptOp::SWAP, range_axis(*it), range_axis(contiguous)};
        break;
      }
  } else if (!k.reduce.empty()) {
    // a reduction: vector lanes along a reduce axis the inputs walk contiguously (or not at all)
    UOp red = k.reduce.back();
    bool walkable = !k.load_indices.empty();
    for (const UOp& idx : k.load_indices) walkable &= has_stride(idx, red, 1) || has_stride(idx, red, 0);
    if (walkable && lanes > 1 && const_size(red) % lanes == 0) {
      opts.push_back({OptOp::UNROLL, range_axis(red), lanes, true});
      vec = lanes;
      // dot products (C = A @ B.T): a tile of output axes along which an input is reused keeps
      // several vector accumulators busy per loaded vector
      int tiled = 0;
      for (auto it = k.out.rbegin(); it != k.out.rend() && tiled < 2; ++it)
        if (const_size(*it) % 4 == 0 && const_size(*it) >= 8 && reused(*it) && const_size(red) >= 4 * lanes) {
          opts.push_back({OptOp::UPCAST, range_axis(*it), tiled == 0 ? 4 : tile_rows});
          ++tiled;
        }
      if (!tiled && (const_size(red) / lanes) % 2 == 0 && const_size(red) / lanes >= 4)
        opts.push_back({OptOp::UNROLL, range_axis(red), 2});
    } else if (const_size(red) % 4 == 0 && const_size(red) >= 16) {
      opts.push_back({OptOp::UNROLL, range_axis(red), 4});
    }
  } else if (contiguous && lanes > 1 && const_size(contiguous) % lanes == 0) {
    opts.push_back({OptOp::UPCAST, range_axis(contiguous), lanes, true});
    vec = lanes;
  }
  (void)vec;
  // Small reduce windows (a pooling window, a depthwise filter's taps) are unrolled whole: the
  // loop and its counter go, and neighbouring taps' index math folds into constant offsets. Only
  // where the copies stay few (at most 4 per window, 16 over all such windows), and not under a
  // register tile: there the copies multiply the tile's code (conv2d 3x3: 7.9 -> 10.7+ ms).
  int64_t copies = register_tile ? 17 : 1;
  for (const UOp& red : k.reduce) {
    int64_t n = const_size(red);
    bool touched = std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.axis == range_axis(red); });
    if (touched || n < 2 || n > 4 || copies * n > 16) continue;
    opts.push_back({OptOp::UNROLL, range_axis(red), n});
    copies *= n;
  }
  // parallelism: CPU threads over the outermost output axis (GPU workgroups: opt_gpu.cpp)
  int64_t work = 1;
  for (const UOp& r : k.out) work *= std::max<int64_t>(1, const_size(r));
  for (const UOp& r : k.reduce) work *= std::max<int64_t>(1, const_size(r));
  if (cpu && target.threads > 1 && !k.out.empty() && work >= 65536) {
    const UOp& outer = k.out.front();
    int64_t n = upcast_amount(outer);  // what is left of the axis after the upcasts
    if (n >= 2) opts.push_back({OptOp::THREAD, range_axis(outer), std::min<int64_t>(target.threads, n)});
  }
  if (target.has(KILN_TARGET_HAS_LOCAL)) add_workgroup_opts(k, target, opts);
  if (swap) opts.push_back(*swap);
  return opts;
}

UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied) {
  if (knob(Knob::noopt)) return ast;
  UOp out = ast;
  for (const Opt& o : hand_coded_optimizations(ast, target)) {
    out = apply_opt(out, o);
    if (applied) applied->push_back(o);
  }
  return out;
}

}  // namespace kiln
