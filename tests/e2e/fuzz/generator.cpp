// tests/e2e/fuzz/generator.cpp - the fuzzer's generator, Gen: random programs over odd and size-1
// shapes, one dtype family each (a comparison makes bools, a cast or a where brings them back),
// drawn step by step from one std::mt19937_64, with input values exact in their dtype. A step that
// would break the assign rules (program.cpp) is drawn again; the number of multiplications is capped
// so that float and int32 values stay far from their ends. The same seed draws the same program.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "program.hpp"

namespace kiln::fuzz {

std::vector<double> Gen::values(const Shape& s, DType d, bool smooth) {
  std::vector<double> v(static_cast<size_t>(count(s)));
  for (double& x : v) {
    if (d.is_bool()) x = pick(2);
    else if (d == dtypes::int8) x = coin(60) ? pick(9) - 4 : pick(256) - 128;
    else if (d == dtypes::uint8) x = coin(60) ? pick(9) : pick(256);
    else if (d.is_unsigned()) x = pick(9);
    else if (d.is_int()) x = pick(7) - 3;
    else if (smooth) x = static_cast<float>(std::uniform_real_distribution<double>(-1.5, 1.5)(rng_));
    else x = (pick(257) - 128) / 64.0;
  }
  return v;
}

Program Gen::program(bool smooth, int shard_devices) {
  Program p;
  shard_devices_ = shard_devices;
  const int r = pick(100);
  const DType base = smooth || r < 42 ? dtypes::float32 : r < 52 ? dtypes::float16 : r < 62 ? dtypes::bfloat16 : r < 77 ? dtypes::int32
                     : r < 85 ? dtypes::int8 : r < 93 ? dtypes::uint8 : dtypes::bool_;
  base_ = base;
  Shape s;
  for (int d = 0, rank = 1 + pick(3); d < rank; ++d) s.push_back(dim());
  if (smooth || coin(70)) {  // (an axis the sharded mode can split)
    int64_t& x = s[static_cast<size_t>(pick(static_cast<int>(s.size())))];
    x = std::max<int64_t>(x, 3);
  }
  add_input(p, s, base, smooth);
  const int steps = 2 + pick(is_half(base) ? 5 : 9);
  int muls = 0;
  for (int i = 0; i < steps; ++i) {
    for (int tries = 0; tries < 20; ++tries) {  // a step that would break the assign rules is drawn again
      Program before = p;
      step(p, smooth, muls);
      if (analyse(p).valid) break;
      p = before;
    }
  }
  p.seed = rng_();
  p.at_once = coin(40);
  return p;
}

int Gen::add_input(Program& p, const Shape& s, DType d, bool smooth) {
  Node n;
  n.k = K::Input;
  n.shape = s;
  n.dtype = d;
  n.values = values(s, d, smooth);
  std::vector<int> splittable;  // (a part per device: an axis of at least as many rows)
  for (size_t q = 0; q < s.size(); ++q)
    if (s[q] >= shard_devices_) splittable.push_back(static_cast<int>(q));
  n.shard = splittable.empty() || coin(20) ? -1 : splittable[static_cast<size_t>(pick(static_cast<int>(splittable.size())))];
  p.nodes.push_back(n);
  return static_cast<int>(p.nodes.size()) - 1;
}

// The steps a new step may read: not stale, so not read before a later assign.
std::vector<int> Gen::usable(const Program& p) {
  std::vector<int> out;
  Reads r = analyse(p);
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (r.stale_at[i] == std::numeric_limits<int>::max()) out.push_back(static_cast<int>(i));
  return out;
}

// An operand of dtype d broadcastable with shape s: a usable step of that shape and dtype, or a
// new input of s with some axes 1 (broadcast) and maybe fewer of them.
int Gen::operand(Program& p, const Shape& s0, DType d, int besides, bool smooth) {
  std::vector<int> same;
  for (int i : usable(p))
    if (p.nodes[static_cast<size_t>(i)].shape == s0 && p.nodes[static_cast<size_t>(i)].dtype == d && i != besides) same.push_back(i);
  if (!same.empty() && coin(40)) return same[static_cast<size_t>(pick(static_cast<int>(same.size())))];
  Shape s = s0;
  for (int64_t& x : s)
    if (coin(30)) x = 1;
  if (s.size() > 1 && coin(20)) s.erase(s.begin());
  return add_input(p, s, d, smooth);
}

void Gen::step(Program& p, bool smooth, int& muls) {
  std::vector<int> live = usable(p);
  int a = live.back();
  if (coin(25)) a = live[static_cast<size_t>(pick(static_cast<int>(live.size())))];
  const Node& na = p.nodes[static_cast<size_t>(a)];
  const Shape sa = na.shape;
  const DType da = na.dtype;
  const size_t rank = sa.size();
  const bool fl = da.is_float(), boolean = da.is_bool(), half = is_half(da);
  Node n;
  n.k = K::Unary;
  n.a = a;
  n.shape = sa;
  n.dtype = da;
  switch (pick(smooth ? 15 : 20)) {
    case 0: case 1:
      if (boolean) {
        n.sub = kNot;
        break;
      }
      n.sub = pick(kNot);
      if (!fl && n.sub >= kTanh && n.sub <= kExp) n.sub = kNeg;
      if (half && n.sub == kSquare) n.sub = kTanh;
      if (n.sub == kSquare && fl && ++muls > 2) n.sub = kAbs;
      if (da.is_unsigned() && n.sub == kAbs) n.sub = kRelu;  // (abs of an unsigned is itself: tested by relu)
      break;
    case 2: case 3: case 4: {
      n.k = K::Binary;
      n.sub = boolean ? std::array<int, 5>{kMax, kMin, kAnd, kOr, kXor}[static_cast<size_t>(pick(5))] : pick(fl ? kAnd : kXor + 1);
      if (fl && n.sub == kMul && (++muls > 2 || half)) n.sub = kAdd;
      if (da == dtypes::int32 && n.sub == kMul && ++muls > 2) n.sub = kSub;  // (int32 stays far from its ends)
      n.b = operand(p, sa, da, a, smooth);
      n.shape = broadcast_shape(sa, p.nodes[static_cast<size_t>(n.b)].shape);
      break;
    }
    case 5:
      if (boolean) return step(p, smooth, muls);
      n.k = K::Scalar;
      n.sub = pick(2);
      if (fl) n.s = std::array<double, 6>{0.5, -1.25, 3, 0.1, 2.75, -0.3}[static_cast<size_t>(pick(6))];
      else n.s = std::array<double, 6>{2, -1, 3, 5, -7, 100}[static_cast<size_t>(pick(6))];
      if (da.is_unsigned()) n.s = std::fabs(n.s);  // (a negative scalar has no value of an unsigned dtype)
      if (da == dtypes::int32 && n.sub == 0 && ++muls > 2) n.sub = 1;
      break;
    case 6: {
      n.k = K::Where;
      if (boolean) {  // where(a, b, c): a is the condition
        n.sub = 1;
        const DType vd = base_.is_bool() ? dtypes::int32 : base_;
        n.b = operand(p, sa, vd, -1, smooth);
        n.c = operand(p, sa, vd, -1, smooth);
        n.dtype = vd;
      } else {
        n.b = operand(p, sa, da, a, smooth);
        n.c = operand(p, sa, da, a, smooth);
      }
      n.shape = broadcast_shape(broadcast_shape(sa, p.nodes[static_cast<size_t>(n.b)].shape), p.nodes[static_cast<size_t>(n.c)].shape);
      break;
    }
    case 7: {  // reshape to another factorisation
      n.k = K::Reshape;
      Shape s;
      int64_t left = count(sa);
      for (int d = 0, r = 1 + pick(3); d < r - 1; ++d) {
        std::vector<int64_t> divs;
        for (int64_t q = 1; q <= left; ++q)
          if (left % q == 0) divs.push_back(q);
        s.push_back(divs[static_cast<size_t>(pick(static_cast<int>(divs.size())))]);
        left /= s.back();
      }
      s.push_back(left);
      n.ints = s;
      n.shape = s;
      break;
    }
    case 8: {
      if (rank < 2) return step(p, smooth, muls);
      n.k = K::Permute;
      std::vector<int64_t> order(rank);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng_);
      n.ints = order;
      n.shape.clear();
      for (int64_t o : order) n.shape.push_back(sa[static_cast<size_t>(o)]);
      break;
    }
    case 9: case 10: {  // pad or shrink
      n.k = coin() ? K::Pad : K::Shrink;
      n.shape.clear();
      for (int64_t d : sa) {
        if (n.k == K::Pad) {
          int64_t lo = pick(3), hi = pick(3);
          n.ints.insert(n.ints.end(), {lo, hi});
          n.shape.push_back(d + lo + hi);
        } else {
          int64_t lo = pick(static_cast<int>(d)), hi = lo + 1 + pick(static_cast<int>(d - lo));
          n.ints.insert(n.ints.end(), {lo, hi});
          n.shape.push_back(hi - lo);
        }
      }
      break;
    }
    case 11: {
      if (rank == 0) return step(p, smooth, muls);
      n.k = K::Flip;
      for (size_t d = 0; d < rank; ++d)
        if (coin()) n.ints.push_back(static_cast<int64_t>(d));
      if (n.ints.empty()) n.ints.push_back(0);
      break;
    }
    case 12: {
      n.k = K::Expand;
      bool any = false;
      for (int64_t& d : n.shape)
        if (d == 1) d = 2 + pick(3), any = true;
      if (!any) return step(p, smooth, muls);
      n.ints = n.shape;
      break;
    }
    case 13: {  // a reduction, softmax or var over a random axis
      if (rank == 0) return step(p, smooth, muls);
      n.axis = pick(static_cast<int>(rank));
      n.keep = coin();
      const int what = pick(boolean ? 2 : fl ? 4 : 3);  // 0, 1: a reduction; 2: softmax (floats) or var; 3: var
      if (what <= 1) {
        n.k = K::Reduce;
        n.sub = boolean ? pick(3) : pick(4);  // (bool: sum, max as any, min as all)
        n.dtype = n.sub == kSum ? sum_dtype(da) : n.sub == kMean && !fl ? dtypes::float32 : da;
      } else if (what == 2 && fl) {
        n.k = K::Softmax;
        n.sub = pick(2);
      } else {
        if (sa[static_cast<size_t>(n.axis)] < 2 || half) return step(p, smooth, muls);
        n.k = K::Var;
        n.sub = pick(2);
        n.dtype = fl ? da : dtypes::float32;
      }
      if (n.k == K::Softmax) break;
      n.shape.clear();
      for (size_t d = 0; d < rank; ++d)
        if (static_cast<int>(d) != n.axis) n.shape.push_back(sa[d]);
        else if (n.keep) n.shape.push_back(1);
      break;
    }
    case 14: {
      if (rank != 2 || half || boolean || (!fl && da != dtypes::int32) || ++muls > 2) return step(p, smooth, muls);
      n.k = K::Matmul;
      const int64_t cols = dim();
      n.b = add_input(p, {sa[1], cols}, da, smooth);
      n.shape = {sa[0], cols};
      break;
    }
    case 15: case 16: {  // a comparison (bool), or a bool cast back to the program's dtype
      if (boolean && !base_.is_bool() && coin()) {
        n.k = K::Cast;
        n.dtype = base_;
        break;
      }
      if (!fl && !boolean && coin(20)) {
        n.k = K::Cast;
        n.dtype = dtypes::float32;
        break;
      }
      n.k = K::Compare;
      n.sub = fl ? pick(2) : boolean ? kEq + pick(2) : pick(4);  // (floats: no eq/ne, all rounding)
      n.b = operand(p, sa, da, a, smooth);
      n.shape = broadcast_shape(sa, p.nodes[static_cast<size_t>(n.b)].shape);
      n.dtype = dtypes::bool_;
      break;
    }
    case 17: case 18: {  // an assign to an input: a new expression of it or another step (chained: to one assigned before)
      std::vector<int> inputs, assigned = assigned_inputs(p);
      for (size_t i = 0; i < p.nodes.size(); ++i)
        if (p.nodes[i].k == K::Input) inputs.push_back(static_cast<int>(i));
      if (!assigned.empty() && coin()) inputs = assigned;
      const int h = inputs[static_cast<size_t>(pick(static_cast<int>(inputs.size())))];
      int target = h;  // its latest handle
      for (size_t i = 0; i < p.nodes.size(); ++i)
        if (root(p, static_cast<int>(i)) == h) target = static_cast<int>(i);
      const Node t = p.nodes[static_cast<size_t>(target)];
      int value = -1;
      if (coin(70)) {
        Node e;
        e.a = target;
        e.shape = t.shape;
        e.dtype = t.dtype;
        if (t.dtype.is_bool()) {
          e.k = K::Unary;
          e.sub = kNot;
        } else if (coin()) {
          e.k = K::Scalar;
          e.sub = pick(2);
          e.s = t.dtype.is_float() ? std::array<double, 3>{0.5, -1.25, 1}[static_cast<size_t>(pick(3))] : 1 + pick(3);
        } else {
          e.k = K::Binary;
          e.sub = coin() ? kAdd : kMax;
          e.b = operand(p, t.shape, t.dtype, target, smooth);
        }
        push(p, e);
        value = static_cast<int>(p.nodes.size()) - 1;
      } else {
        std::vector<int> fit;
        for (int i : usable(p))
          if (p.nodes[static_cast<size_t>(i)].dtype == t.dtype && broadcasts_to(p.nodes[static_cast<size_t>(i)].shape, t.shape) && root(p, i) != h)
            fit.push_back(i);
        if (fit.empty()) return;
        value = fit[static_cast<size_t>(pick(static_cast<int>(fit.size())))];
      }
      n.k = K::Assign;
      n.a = target;
      n.b = value;
      n.shape = t.shape;
      n.dtype = t.dtype;
      break;
    }
    default:
      n.k = K::Clone;
      break;
  }
  push(p, std::move(n));
}

}  // namespace kiln::fuzz
