// tests/e2e/fuzz_test.cpp - a seeded differential fuzzer over the public Tensor API (issue 43).
//
// A case is a random program held as data: a list of steps over named tensors (t0, t1, ...) built
// from random inputs of odd and size-1 shapes. Steps: elementwise ops with tensors and host scalars,
// broadcasting, comparisons, where, casts, views (reshape, permute, pad, shrink, flip, expand),
// reductions (sum, max, min, mean, var, std, softmax, log_softmax over a random axis), matmul,
// clone, and assigns to an input (chained, read before and after). Inputs are float32, float16,
// bfloat16, int32, int8, uint8 or bool; a step's dtype follows kiln's rules (a comparison is bool, an
// int8 sum is int32, an integer mean is float32), and integers wrap as two's complement.
//
// Its value is computed by a plain host evaluator in float64 and exact integers (below: nothing of
// kiln's is trusted) and compared with kiln's, run these ways:
//   eager      on cpu:0, the steps realized all at once or one by one in a random order
//   ref        the same on the reference executor "ref", float inputs in float64 (a tight tolerance:
//              it checks the decompositions and the rewrites without float32's rounding)
//   jit        through a kiln::Jit over three calls with new inputs (an input the program assigns is
//              a state passed again every call); every call's outputs and states are compared, and
//              each call's outputs are kept with clone() and compared again after the last call
//   sharded    the inputs split over cpu:0..2 along a random axis or replicated (ctest runs this
//              executable with `devices = 3`; with fewer cpu devices the mode is skipped, and says so)
//   gradient   float32 programs: d((out * w).sum()) / d(each input), random w, on cpu:0 and
//              sharded, against central finite differences of the host evaluator in float64
//              (elements where a kink is within reach are skipped)
//
// A failure names the seed, the case, the mode and the first wrong element, prints the program as a
// C++ reproducer of that mode (the exact API calls, the inputs as literals), then shrinks it (steps
// nothing reads dropped, steps bypassed or replaced by an input holding their value, each change
// kept while the same mode still fails) and prints the smallest failing one. KILN_FUZZ_SEED and
// KILN_FUZZ_CASES choose the run (defaults: seed 43, cases sized for about two minutes on two cores
// with a cold kernel cache); KILN_FUZZ_ONLY=N runs case N alone; KILN_FUZZ_MODES=jit,sharded (a
// list of eager, ref, jit, sharded, gradient, "sharded gradient") runs only those modes.
//
// What is not compared, because its value is not fixed by the contract (tensor.hpp):
//  - a tensor that reads an input's buffer as it was before a later assign to that input: kiln
//    follows tinygrad (a reader realized before the assign sees the old contents, one realized after
//    sees the new), so its value depends on when it is realized. Such steps still run (they feed the
//    assign); they are not read, and no later step uses them. A clone of an unassigned input is a
//    snapshot (copied at once) and is compared.
//  - a comparison whose two sides are within the dtype's rounding of each other (either answer is
//    right); a gradient at a switch (relu, maximum, a max's top two) within 1e-4 of its point
//  - a float value out of its dtype's range, or near its end (kiln's inf against a finite float64)
//  - a sharded program that runs into a documented limit of sharding (a reshape that would move
//    elements between the parts; rows of one part, cut by a shrink, mixed with another device's).
//    Only the forward program may: the gradient of a program that ran must never throw.
// Each is counted and printed with the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

// ---- the host evaluator's arrays: row-major, float64 (integers exact) ----

struct Arr {
  Shape shape;
  std::vector<double> v;
};

int64_t count(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Calls f(flat_index, multi_index) for every element of shape s.
template <typename F>
void each(const Shape& s, F f) {
  std::vector<int64_t> idx(s.size(), 0);
  int64_t n = count(s);
  for (int64_t e = 0; e < n; ++e) {
    f(e, idx);
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1, db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) { return from.size() <= to.size() && broadcast_shape(from, to) == to; }

double at_broadcast(const Arr& a, const std::vector<int64_t>& idx) {
  std::vector<int64_t> st = strides(a.shape);
  int64_t off = 0;
  size_t lead = idx.size() - a.shape.size();
  for (size_t d = 0; d < a.shape.size(); ++d) off += (a.shape[d] == 1 ? 0 : idx[lead + d]) * st[d];
  return a.v[static_cast<size_t>(off)];
}

Arr zip(const std::vector<const Arr*>& in, const std::function<double(const std::vector<double>&)>& f) {
  Shape s = in[0]->shape;
  for (const Arr* a : in) s = broadcast_shape(s, a->shape);
  Arr out{s, std::vector<double>(static_cast<size_t>(count(s)))};
  std::vector<double> args(in.size());
  each(s, [&](int64_t e, const std::vector<int64_t>& idx) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = at_broadcast(*in[k], idx);
    out.v[static_cast<size_t>(e)] = f(args);
  });
  return out;
}

// ---- dtypes ----

bool is_half(DType d) { return d == dtypes::float16 || d == dtypes::bfloat16; }

std::string cpp_dtype(DType d) { return d.is_bool() ? "dtypes::bool_" : "dtypes::" + d.name(); }

// An integer value's two's complement bits (x is an exact integer, |x| < 2^53).
uint64_t bits_of(double x) { return static_cast<uint64_t>(static_cast<int64_t>(x)); }

// The integer dtype d's value of the low bits of u (two's complement wrap-around, as kiln's kernels).
double wrap(DType d, uint64_t u) {
  const int bits = d.scalar_size() * 8;
  if (bits >= 64) return static_cast<double>(static_cast<int64_t>(u));
  u &= (uint64_t{1} << bits) - 1;
  if (!d.is_unsigned() && (u >> (bits - 1)) != 0) return static_cast<double>(static_cast<int64_t>(u) - (int64_t{1} << bits));
  return static_cast<double>(u);
}

// The dtype kiln sums d in (reduce.cpp's sum_acc_dtype: small integers and bools in 32 bits; half
// floats are summed in float32 and cast back, so their sum keeps their dtype).
DType sum_dtype(DType d) {
  if (d.is_bool()) return dtypes::int32;
  if (d.is_int() && d.scalar_size() < 4) return d.is_unsigned() ? dtypes::uint32 : dtypes::int32;
  return d;
}

// ---- programs ----

enum class K { Input, Unary, Binary, Scalar, Compare, Where, Cast, Reshape, Permute, Pad, Shrink, Flip, Expand, Reduce, Softmax, Var, Matmul, Assign, Clone };
enum Unary { kNeg, kRelu, kAbs, kTanh, kSigmoid, kExp, kSquare, kNot };
enum Binary { kAdd, kSub, kMul, kMax, kMin, kAnd, kOr, kXor };
enum Cmp { kLt, kGt, kEq, kNe };
enum Reduce { kSum, kRMax, kRMin, kMean };
const char* kUnaryName[] = {"neg", "relu", "abs", "tanh", "sigmoid", "exp", "square", "logical_not"};
const char* kBinaryName[] = {"+", "-", "*", "maximum", "minimum", "&", "|", "^"};
const char* kCmpName[] = {"lt", "gt", "eq", "ne"};
const char* kReduceName[] = {"sum", "max", "min", "mean"};

// One step: t<i> = op(t<a>, t<b>, t<c>).
struct Node {
  K k = K::Input;
  int a = -1, b = -1, c = -1;  // operands (Assign: a the target, b the value)
  int sub = 0;  // Unary/Binary/Cmp/Reduce kind; Scalar: 0 multiply, 1 add; Where: 0 where(a > b, a, c),
                // 1 where(a, b, c) with a bool; Softmax: 1 log_softmax; Var: 1 std
  std::vector<int64_t> ints;  // reshape shape, permute order, pad/shrink pairs, flip axes, expand shape
  int axis = 0;
  bool keep = false;
  double s = 0;  // Scalar: the host scalar (an integer for integer tensors)
  Shape shape;
  DType dtype = dtypes::float32;  // Cast: the dtype cast to
  std::vector<double> values;     // Input: its elements
  int shard = -1;                 // Input, when sharded: the axis split over the devices; -1 replicated
};

struct Program {
  std::vector<Node> nodes;
  uint64_t seed = 0;     // orders the one-by-one realizes and draws the Jit's later inputs
  bool at_once = true;   // eager: Tensor::realize_all of every compared step, else one realize each
};

std::vector<int> operands(const Node& n) {
  std::vector<int> o;
  for (int x : {n.a, n.b, n.c})
    if (x >= 0) o.push_back(x);
  return o;
}

// The input whose buffer node i is a handle of (an Input, or an Assign to one), else -1.
int root(const Program& p, int i) {
  const Node& n = p.nodes[static_cast<size_t>(i)];
  if (n.k == K::Input) return i;
  if (n.k == K::Assign) return root(p, n.a);
  return -1;
}

// The analysis of a program's assigns: which inputs' buffers each step reads (as they were when the
// step was built), which steps are stale (a later assign writes a buffer they read: their value
// depends on when they are realized), and whether the program keeps to what is fixed.
struct Reads {
  std::vector<std::set<int>> roots;  // per step
  std::vector<int> stale_at;         // per step: the first later assign that makes it stale, or INT_MAX
  bool valid = true;
};

Reads analyse(const Program& p) {
  const size_t n = p.nodes.size();
  Reads r;
  r.roots.resize(n);
  r.stale_at.assign(n, std::numeric_limits<int>::max());
  auto reads_of = [&](int o) {  // what reading step o reads: its reads, and its own buffer if a handle
    std::set<int> s = r.roots[static_cast<size_t>(o)];
    if (int h = root(p, o); h >= 0) s.insert(h);
    return s;
  };
  for (size_t i = 0; i < n; ++i) {
    const Node& x = p.nodes[i];
    if (x.k == K::Input) continue;
    // a clone of an input no assign has touched yet is copied at once (tensor.hpp): a snapshot
    if (x.k == K::Clone && p.nodes[static_cast<size_t>(x.a)].k == K::Input) {
      bool assigned = false;
      for (size_t j = 0; j < i; ++j) assigned |= p.nodes[j].k == K::Assign && root(p, static_cast<int>(j)) == x.a;
      if (!assigned) continue;
    }
    if (x.k == K::Assign) {
      r.roots[i] = reads_of(x.b);
    } else {
      for (int o : operands(x))
        for (int h : reads_of(o)) r.roots[i].insert(h);
    }
  }
  for (size_t j = 0; j < n; ++j) {
    if (p.nodes[j].k != K::Assign) continue;
    const int h = root(p, static_cast<int>(j));
    for (size_t i = 0; i < j; ++i) {
      if (!r.roots[i].count(h) || root(p, static_cast<int>(i)) == h) continue;
      if (p.nodes[i].k == K::Assign) r.valid = false;  // another input's assign read this one's old contents
      r.stale_at[i] = std::min(r.stale_at[i], static_cast<int>(j));
    }
  }
  for (size_t k = 0; k < n; ++k)
    for (int o : operands(p.nodes[k]))
      if (r.stale_at[static_cast<size_t>(o)] < static_cast<int>(k)) r.valid = false;  // read after it went stale
  return r;
}

// The steps whose values the contract fixes (see the file comment), in order.
std::vector<int> compared(const Program& p) {
  Reads r = analyse(p);
  std::vector<int> out;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (r.stale_at[i] == std::numeric_limits<int>::max()) out.push_back(static_cast<int>(i));
  return out;
}

// The inputs some step assigns.
std::vector<int> assigned_inputs(const Program& p) {
  std::set<int> s;
  for (size_t j = 0; j < p.nodes.size(); ++j)
    if (p.nodes[j].k == K::Assign) s.insert(root(p, static_cast<int>(j)));
  return {s.begin(), s.end()};
}

// ---- the host evaluator ----

// What the last host_eval saw at the points where a value or a gradient switches: the smallest gap
// (relative) between the two sides of a float comparison, per dtype class, and of any switch (also
// maximum/minimum, relu and abs at 0, a max or min reduction's top two) for gradients. Where a gap
// is within rounding, kiln may take the other side and both answers are right.
struct Gaps {
  double cmp_f32 = 0, cmp_half = 0, any = 0;
};
Gaps g_gaps;

// The value of every step (an assign's target reads the assigned value from then on).
std::vector<Arr> host_eval(const Program& p) {
  g_gaps = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  auto gap = [](double a, double b) { return std::fabs(a - b) / (1 + std::fabs(a)); };
  auto any_gap = [&](double a, double b) { g_gaps.any = std::min(g_gaps.any, gap(a, b)); };
  auto cmp_gap = [&](DType d, double a, double b) {
    if (!d.is_float()) return;
    double& g = is_half(d) ? g_gaps.cmp_half : g_gaps.cmp_f32;
    g = std::min(g, gap(a, b));
    any_gap(a, b);
  };
  std::vector<Arr> r;
  for (const Node& n : p.nodes) {
    const Arr* a = n.a >= 0 ? &r[static_cast<size_t>(n.a)] : nullptr;
    const Arr* b = n.b >= 0 ? &r[static_cast<size_t>(n.b)] : nullptr;
    const DType da = a ? p.nodes[static_cast<size_t>(n.a)].dtype : n.dtype, d = n.dtype;
    const bool integer = d.is_int();
    Arr out;
    switch (n.k) {
      case K::Input: out = {n.shape, n.values}; break;
      case K::Unary:
        out = zip({a}, [&](const std::vector<double>& x) {
          double v = x[0];
          switch (n.sub) {
            case kNeg: return integer ? wrap(d, 0 - bits_of(v)) : -v;
            case kRelu: return any_gap(v, 0), v > 0 ? v : 0.0;
            case kAbs: return any_gap(v, 0), integer && v < 0 ? wrap(d, 0 - bits_of(v)) : std::fabs(v);
            case kTanh: return std::tanh(v);
            case kSigmoid: return 1 / (1 + std::exp(-v));
            case kExp: return std::exp(v * 0.25);
            case kSquare: return integer ? wrap(d, bits_of(v) * bits_of(v)) : v * v;
            default: return v == 0 ? 1.0 : 0.0;  // logical_not
          }
        });
        break;
      case K::Binary:
        out = zip({a, b}, [&](const std::vector<double>& x) {
          const uint64_t u = bits_of(x[0]), w = bits_of(x[1]);
          switch (n.sub) {
            case kAdd: return integer ? wrap(d, u + w) : x[0] + x[1];
            case kSub: return integer ? wrap(d, u - w) : x[0] - x[1];
            case kMul: return integer ? wrap(d, u * w) : x[0] * x[1];
            case kMax: return any_gap(x[0], x[1]), std::max(x[0], x[1]);
            case kMin: return any_gap(x[0], x[1]), std::min(x[0], x[1]);
            case kAnd: return d.is_bool() ? double(x[0] != 0 && x[1] != 0) : wrap(d, u & w);
            case kOr: return d.is_bool() ? double(x[0] != 0 || x[1] != 0) : wrap(d, u | w);
            default: return d.is_bool() ? double((x[0] != 0) != (x[1] != 0)) : wrap(d, u ^ w);
          }
        });
        break;
      case K::Scalar:
        out = zip({a}, [&](const std::vector<double>& x) {
          if (integer) return wrap(d, n.sub == 0 ? bits_of(x[0]) * bits_of(n.s) : bits_of(x[0]) + bits_of(n.s));
          return n.sub == 0 ? x[0] * n.s : x[0] + n.s;
        });
        break;
      case K::Compare:
        out = zip({a, b}, [&](const std::vector<double>& x) {
          cmp_gap(da, x[0], x[1]);
          switch (n.sub) {
            case kLt: return double(x[0] < x[1]);
            case kGt: return double(x[0] > x[1]);
            case kEq: return double(x[0] == x[1]);
            default: return double(x[0] != x[1]);
          }
        });
        break;
      case K::Where:
        out = zip({a, b, &r[static_cast<size_t>(n.c)]}, [&](const std::vector<double>& x) {
          if (n.sub == 1) return x[0] != 0 ? x[1] : x[2];
          cmp_gap(da, x[0], x[1]);
          return x[0] > x[1] ? x[0] : x[2];
        });
        break;
      case K::Cast: out = *a; break;  // (bool to anything, integers to float32: exact or within rounding)
      case K::Reshape: out = {n.shape, a->v}; break;
      case K::Permute: {
        out = {n.shape, std::vector<double>(a->v.size())};
        std::vector<int64_t> st = strides(a->shape);
        each(n.shape, [&](int64_t e, const std::vector<int64_t>& idx) {
          int64_t off = 0;
          for (size_t q = 0; q < idx.size(); ++q) off += idx[q] * st[static_cast<size_t>(n.ints[q])];
          out.v[static_cast<size_t>(e)] = a->v[static_cast<size_t>(off)];
        });
        break;
      }
      case K::Pad: case K::Shrink: case K::Flip: {
        out = {n.shape, std::vector<double>(static_cast<size_t>(count(n.shape)))};
        std::vector<int64_t> st = strides(a->shape);
        each(n.shape, [&](int64_t e, const std::vector<int64_t>& idx) {
          int64_t off = 0;
          bool inside = true;
          for (size_t q = 0; q < idx.size(); ++q) {
            int64_t i = idx[q];
            if (n.k == K::Pad) i -= n.ints[2 * q];
            if (n.k == K::Shrink) i += n.ints[2 * q];
            if (n.k == K::Flip && std::find(n.ints.begin(), n.ints.end(), static_cast<int64_t>(q)) != n.ints.end()) i = a->shape[q] - 1 - i;
            inside &= i >= 0 && i < a->shape[q];
            off += i * st[q];
          }
          out.v[static_cast<size_t>(e)] = inside ? a->v[static_cast<size_t>(off)] : 0.0;
        });
        break;
      }
      case K::Expand:
        out = {n.shape, std::vector<double>(static_cast<size_t>(count(n.shape)))};
        each(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) { out.v[static_cast<size_t>(i)] = at_broadcast(*a, idx); });
        break;
      case K::Reduce: case K::Softmax: case K::Var: {
        Shape kept = a->shape;
        kept[static_cast<size_t>(n.axis)] = 1;
        const int64_t len = a->shape[static_cast<size_t>(n.axis)];
        std::vector<int64_t> st = strides(a->shape);
        auto row = [&](const std::vector<int64_t>& idx) {  // the reduced axis's elements at idx
          std::vector<double> v;
          int64_t base = 0;
          for (size_t q = 0; q < idx.size(); ++q) base += (static_cast<int>(q) == n.axis ? 0 : idx[q]) * st[q];
          for (int64_t i = 0; i < len; ++i) v.push_back(a->v[static_cast<size_t>(base + i * st[static_cast<size_t>(n.axis)])]);
          return v;
        };
        if (n.k == K::Softmax) {
          out = {a->shape, std::vector<double>(a->v.size())};
          each(a->shape, [&](int64_t e, const std::vector<int64_t>& idx) {
            std::vector<double> v = row(idx);
            double m = *std::max_element(v.begin(), v.end()), z = 0;
            for (double x : v) z += std::exp(x - m);
            double x = a->v[static_cast<size_t>(e)];
            out.v[static_cast<size_t>(e)] = n.sub ? x - m - std::log(z) : std::exp(x - m) / z;
          });
          break;
        }
        Arr red{kept, std::vector<double>(static_cast<size_t>(count(kept)))};
        each(kept, [&](int64_t e, const std::vector<int64_t>& idx) {
          std::vector<double> v = row(idx);
          double res;
          if (n.k == K::Var) {
            double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(len), ss = 0;
            for (double x : v) ss += (x - mean) * (x - mean);
            res = ss / static_cast<double>(len - 1);
            if (n.sub) res = std::sqrt(res);
          } else if (n.sub == kSum || n.sub == kMean) {
            if (da.is_int() || da.is_bool()) {  // exact, in the accumulator's width
              uint64_t acc = 0;
              for (double x : v) acc += bits_of(x);
              res = wrap(sum_dtype(da), acc);
            } else {
              res = std::accumulate(v.begin(), v.end(), 0.0);
            }
            if (n.sub == kMean) res /= static_cast<double>(len);
          } else {
            std::vector<double> sorted = v;
            std::sort(sorted.begin(), sorted.end());
            if (sorted.size() > 1) any_gap(n.sub == kRMax ? sorted.back() : sorted[0], n.sub == kRMax ? sorted[sorted.size() - 2] : sorted[1]);
            res = n.sub == kRMax ? sorted.back() : sorted[0];
          }
          red.v[static_cast<size_t>(e)] = res;
        });
        red.shape = n.shape;  // keepdim or not: the same elements
        out = red;
        break;
      }
      case K::Matmul: {
        const int64_t m = a->shape[0], kk = a->shape[1], nn = b->shape[1];
        out = {n.shape, std::vector<double>(static_cast<size_t>(m * nn))};
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < nn; ++j) {
            double acc = 0;
            uint64_t iacc = 0;
            for (int64_t q = 0; q < kk; ++q) {
              double x = a->v[static_cast<size_t>(i * kk + q)], y = b->v[static_cast<size_t>(q * nn + j)];
              acc += x * y;
              iacc += bits_of(x) * bits_of(y);
            }
            out.v[static_cast<size_t>(i * nn + j)] = integer ? wrap(d, iacc) : acc;
          }
        break;
      }
      case K::Assign: {  // the value broadcast to the target's shape; the target reads it from now on
        const Node& t = p.nodes[static_cast<size_t>(n.a)];
        out = {t.shape, std::vector<double>(static_cast<size_t>(count(t.shape)))};
        each(t.shape, [&](int64_t i, const std::vector<int64_t>& idx) { out.v[static_cast<size_t>(i)] = at_broadcast(*b, idx); });
        const int h = root(p, n.a);
        for (size_t j = 0; j < r.size(); ++j)
          if (root(p, static_cast<int>(j)) == h) r[j] = out;
        break;
      }
      case K::Clone: out = *a; break;
    }
    r.push_back(std::move(out));
  }
  return r;
}

// ---- running a program on kiln ----

// Where and how a program runs: the device of its inputs, float dtypes as float64 (the ref mode), the
// devices its inputs are sharded over (empty: none).
struct Placement {
  std::string device = "cpu:0";
  bool f64 = false;
  std::vector<std::string> shard_over;
};

DType run_dtype(DType d, const Placement& at) { return at.f64 && d.is_float() ? dtypes::float64 : d; }

// Input n with values v, placed as `at` says (realized; sharded parts too). `source`: where to put
// the unsharded tensor it was sharded from, when that was realized.
Tensor make_input(const Node& n, const std::vector<double>& v, const Placement& at, std::vector<Tensor>* sources = nullptr) {
  const DType d = run_dtype(n.dtype, at);
  auto host = [&]() {
    if (d.is_bool()) return Tensor::from_vector<bool>(std::vector<bool>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::int8) return Tensor::from_vector<int8_t>(std::vector<int8_t>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::uint8) return Tensor::from_vector<uint8_t>(std::vector<uint8_t>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::int32) return Tensor::from_vector<int32_t>(std::vector<int32_t>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::uint32) return Tensor::from_vector<uint32_t>(std::vector<uint32_t>(v.begin(), v.end()), n.shape, at.device);
    return Tensor::from_vector<double>(v, n.shape, at.device).cast(d);
  };
  Tensor t = host();
  t.realize();  // (a sharded input is cut from a realized tensor, which must not change: shards are copies)
  if (sources && !at.shard_over.empty()) sources->push_back(t);
  if (!at.shard_over.empty()) {
    t = n.shard >= 0 ? t.shard(at.shard_over, n.shard) : t.shard(at.shard_over);
    t.realize();
  }
  return t;
}

std::vector<Tensor> make_inputs(const Program& p, const Placement& at, std::vector<Tensor>* sources = nullptr) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (p.nodes[i].k == K::Input) out.push_back(make_input(p.nodes[i], p.nodes[i].values, at, sources));
  return out;
}

// kiln's value of every step, from `inputs` (one per Input step, in order).
std::vector<Tensor> kiln_eval(const Program& p, const std::vector<Tensor>& inputs, const Placement& at) {
  std::vector<Tensor> r;
  size_t input = 0;
  for (const Node& n : p.nodes) {
    auto A = [&]() -> Tensor& { return r[static_cast<size_t>(n.a)]; };
    auto B = [&]() -> const Tensor& { return r[static_cast<size_t>(n.b)]; };
    auto C = [&]() -> const Tensor& { return r[static_cast<size_t>(n.c)]; };
    const bool integer = n.dtype.is_int();
    std::vector<int> ints(n.ints.begin(), n.ints.end());
    Pads pairs;
    for (size_t i = 0; i + 1 < n.ints.size(); i += 2) pairs.push_back({n.ints[i], n.ints[i + 1]});
    switch (n.k) {
      case K::Input: r.push_back(inputs[input++]); break;
      case K::Unary: {
        const Tensor& x = A();
        switch (n.sub) {
          case kNeg: r.push_back(-x); break;
          case kRelu: r.push_back(x.relu()); break;
          case kAbs: r.push_back(x.abs()); break;
          case kTanh: r.push_back(x.tanh()); break;
          case kSigmoid: r.push_back(x.sigmoid()); break;
          case kExp: r.push_back((x * 0.25).exp()); break;
          case kSquare: r.push_back(x * x); break;
          default: r.push_back(x.logical_not());
        }
        break;
      }
      case K::Binary:
        switch (n.sub) {
          case kAdd: r.push_back(A() + B()); break;
          case kSub: r.push_back(A() - B()); break;
          case kMul: r.push_back(A() * B()); break;
          case kMax: r.push_back(A().maximum(B())); break;
          case kMin: r.push_back(A().minimum(B())); break;
          case kAnd: r.push_back(A() & B()); break;
          case kOr: r.push_back(A() | B()); break;
          default: r.push_back(A() ^ B());
        }
        break;
      case K::Scalar:
        if (integer) r.push_back(n.sub == 0 ? A() * static_cast<int64_t>(n.s) : A() + static_cast<int64_t>(n.s));
        else r.push_back(n.sub == 0 ? A() * n.s : A() + n.s);
        break;
      case K::Compare:
        switch (n.sub) {
          case kLt: r.push_back(A().lt(B())); break;
          case kGt: r.push_back(A().gt(B())); break;
          case kEq: r.push_back(A().eq(B())); break;
          default: r.push_back(A().ne(B()));
        }
        break;
      case K::Where: r.push_back(n.sub == 1 ? Tensor::where(A(), B(), C()) : Tensor::where(A().gt(B()), A(), C())); break;
      case K::Cast: r.push_back(A().cast(run_dtype(n.dtype, at))); break;
      case K::Reshape: r.push_back(A().reshape(n.ints)); break;
      case K::Permute: r.push_back(A().permute(ints)); break;
      case K::Pad: r.push_back(A().pad(pairs)); break;
      case K::Shrink: r.push_back(A().shrink(pairs)); break;
      case K::Flip: r.push_back(A().flip(ints)); break;
      case K::Expand: r.push_back(A().expand(n.ints)); break;
      case K::Reduce:
        switch (n.sub) {
          case kSum: r.push_back(A().sum({n.axis}, n.keep)); break;
          case kRMax: r.push_back(A().max({n.axis}, n.keep)); break;
          case kRMin: r.push_back(A().min({n.axis}, n.keep)); break;
          default: r.push_back(A().mean({n.axis}, n.keep));
        }
        break;
      case K::Softmax: r.push_back(n.sub ? A().log_softmax(n.axis) : A().softmax(n.axis)); break;
      case K::Var: r.push_back(n.sub ? A().std({n.axis}, n.keep) : A().var({n.axis}, n.keep)); break;
      case K::Matmul: r.push_back(A().matmul(B())); break;
      case K::Assign: A().assign(B()); r.push_back(A()); break;
      case K::Clone: r.push_back(A().clone()); break;
    }
  }
  return r;
}

// ---- the reproducer: the program as C++ against the public API ----

std::string num(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  std::string s = o.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::string t = "{";
  for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
  return t + "}";
}

std::string devices_text(const std::vector<std::string>& devs) {
  std::string t = "{";
  for (size_t i = 0; i < devs.size(); ++i) t += (i ? ", \"" : "\"") + devs[i] + "\"";
  return t + "}";
}

// The expression make_input evaluates, with the values as literals.
std::string input_text(const Node& n, const std::vector<double>& v, const Placement& at) {
  const DType d = run_dtype(n.dtype, at);
  std::ostringstream o;
  const char* type = d.is_bool() ? "bool" : d == dtypes::int8 ? "int8_t" : d == dtypes::uint8 ? "uint8_t" : d == dtypes::int32 ? "int32_t"
                     : d == dtypes::uint32 ? "uint32_t" : "double";
  o << "Tensor::from_vector<" << type << ">({";
  for (size_t k = 0; k < v.size(); ++k) {
    o << (k ? ", " : "");
    if (d.is_bool()) o << (v[k] != 0 ? "true" : "false");
    else if (d.is_int()) o << static_cast<int64_t>(v[k]);
    else o << num(v[k]);
  }
  o << "}, " << ints_text(n.shape) << ", \"" << at.device << "\")";
  if (d.is_float()) o << ".cast(" << cpp_dtype(d) << ")";
  o << ".realize()";
  if (!at.shard_over.empty()) {
    o << ".shard(" << devices_text(at.shard_over);
    if (n.shard >= 0) o << ", " << n.shard;
    o << ").realize()";
  }
  return o.str();
}

// The steps as statements; `input(i, k)` is the expression of Input step i (the k-th input).
std::string steps_text(const Program& p, const Placement& at, const std::function<std::string(int, int)>& input, const std::string& indent) {
  std::ostringstream o;
  int k = 0;
  const std::vector<int> cmp = compared(p);
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node& n = p.nodes[i];
    std::string A = "t" + std::to_string(n.a), B = "t" + std::to_string(n.b), C = "t" + std::to_string(n.c);
    std::string pairs;
    for (size_t q = 0; q + 1 < n.ints.size(); q += 2)
      pairs += (q ? ", " : "") + std::string("{") + std::to_string(n.ints[q]) + ", " + std::to_string(n.ints[q + 1]) + "}";
    const bool integer = n.dtype.is_int();
    o << indent;
    if (n.k == K::Assign) {
      o << A << ".assign(" << B << ");\n" << indent;
    }
    o << "Tensor t" << i << " = ";
    switch (n.k) {
      case K::Input: o << input(static_cast<int>(i), k++); break;
      case K::Unary:
        if (n.sub == kNeg) o << "-" << A;
        else if (n.sub == kExp) o << "(" << A << " * 0.25).exp()";
        else if (n.sub == kSquare) o << A << " * " << A;
        else o << A << "." << kUnaryName[n.sub] << "()";
        break;
      case K::Binary:
        if (n.sub == kMax || n.sub == kMin) o << A << "." << kBinaryName[n.sub] << "(" << B << ")";
        else o << A << " " << kBinaryName[n.sub] << " " << B;
        break;
      case K::Scalar:
        o << A << (n.sub == 0 ? " * " : " + ");
        if (integer) o << static_cast<int64_t>(n.s);
        else o << num(n.s);
        break;
      case K::Compare: o << A << "." << kCmpName[n.sub] << "(" << B << ")"; break;
      case K::Where:
        if (n.sub == 1) o << "Tensor::where(" << A << ", " << B << ", " << C << ")";
        else o << "Tensor::where(" << A << ".gt(" << B << "), " << A << ", " << C << ")";
        break;
      case K::Cast: o << A << ".cast(" << cpp_dtype(run_dtype(n.dtype, at)) << ")"; break;
      case K::Reshape: o << A << ".reshape(" << ints_text(n.ints) << ")"; break;
      case K::Permute: o << A << ".permute(" << ints_text(n.ints) << ")"; break;
      case K::Pad: o << A << ".pad({" << pairs << "})"; break;
      case K::Shrink: o << A << ".shrink({" << pairs << "})"; break;
      case K::Flip: o << A << ".flip(" << ints_text(n.ints) << ")"; break;
      case K::Expand: o << A << ".expand(" << ints_text(n.ints) << ")"; break;
      case K::Reduce: o << A << "." << kReduceName[n.sub] << "({" << n.axis << "}, " << (n.keep ? "true" : "false") << ")"; break;
      case K::Softmax: o << A << (n.sub ? ".log_softmax(" : ".softmax(") << n.axis << ")"; break;
      case K::Var: o << A << (n.sub ? ".std({" : ".var({") << n.axis << "}, " << (n.keep ? "true" : "false") << ")"; break;
      case K::Matmul: o << A << ".matmul(" << B << ")"; break;
      case K::Assign: o << A; break;
      case K::Clone: o << A << ".clone()"; break;
    }
    o << ";  // " << ints_text(n.shape) << " " << run_dtype(n.dtype, at).name();
    if (std::find(cmp.begin(), cmp.end(), static_cast<int>(i)) == cmp.end()) o << " (not read: a later assign writes what it reads)";
    o << "\n";
  }
  return o.str();
}

// ---- the generator ----

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin(int percent = 50) { return pick(100) < percent; }
  int64_t dim() { return std::array<int64_t, 6>{1, 2, 3, 3, 5, 7}[static_cast<size_t>(pick(6))]; }
  uint64_t next() { return rng_(); }

  // Exact in every dtype: floats are multiples of 1/64 in [-2, 2] (gradient cases: any float32 in
  // [-1.5, 1.5], so that ties are rare); narrow integers reach their ends, where they wrap.
  std::vector<double> values(const Shape& s, DType d, bool smooth) {
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

  // A random program; `smooth`: float32 and differentiable (no comparisons, casts, assigns or clones).
  Program program(bool smooth, int shard_devices) {
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

 private:
  int add_input(Program& p, const Shape& s, DType d, bool smooth) {
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
  std::vector<int> usable(const Program& p) {
    std::vector<int> out;
    Reads r = analyse(p);
    for (size_t i = 0; i < p.nodes.size(); ++i)
      if (r.stale_at[i] == std::numeric_limits<int>::max()) out.push_back(static_cast<int>(i));
    return out;
  }

  // An operand of dtype d broadcastable with shape s: a usable step of that shape and dtype, or a
  // new input of s with some axes 1 (broadcast) and maybe fewer of them.
  int operand(Program& p, const Shape& s0, DType d, int besides, bool smooth) {
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

  void push(Program& p, Node n) { p.nodes.push_back(std::move(n)); }

  void step(Program& p, bool smooth, int& muls) {
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

  std::mt19937_64 rng_;
  DType base_ = dtypes::float32;
  int shard_devices_ = 3;
};

// ---- comparing ----

int64_t env_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : def;
}

std::vector<std::string> cpu_devices() {
  std::vector<std::string> out;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) out.push_back(d);
  return out;
}

// What a sharded program may run into by design (DESIGN.md 5.1 and tensor.hpp: placements that
// cannot combine throw): a reshape that would move elements between the parts, and the rows of one
// part (what a shrink of the shard axis keeps within one device) being a tensor on that device,
// which does not mix with another device's.
bool documented_sharding_error(const Error& e) {
  std::string m = e.what();
  return m.find("would move elements between the parts") != std::string::npos ||
         m.find("operands are on different devices (cpu:") != std::string::npos;
}

// Whether `got` (a step of dtype d, run as run_d) may be kiln's answer for `want`: integers and
// bools exactly; floats within a tolerance that scales with the magnitude (float programs
// accumulate rounding; half precision relative to the step's largest value).
bool close(DType run_d, double w, double g, double scale) {
  if (!run_d.is_float() || g == w) return g == w;
  if (run_d == dtypes::float64) return std::fabs(g - w) <= 1e-6 * (1 + std::fabs(w));
  if (run_d == dtypes::float32) return std::fabs(g - w) <= 2e-4 * (1 + std::fabs(w));
  return std::fabs(g - w) <= 4e-2 * scale;
}

// Compares step `node`'s value; "" when it agrees, else what differs.
std::string mismatch(const Program& p, int node, const Arr& want, const std::vector<double>& got, const Placement& at) {
  const DType d = run_dtype(p.nodes[static_cast<size_t>(node)].dtype, at);
  std::ostringstream o;
  o.precision(9);
  if (got.size() != want.v.size()) {
    o << "t" << node << " has " << got.size() << " elements, expected " << want.v.size();
    return o.str();
  }
  double scale = 1;
  for (double x : want.v) scale = std::max(scale, std::fabs(x));
  for (size_t e = 0; e < got.size(); ++e)
    if (!close(d, want.v[e], got[e], scale)) {
      o << "t" << node << " element " << e << ": got " << got[e] << ", expected " << want.v[e];
      return o.str();
    }
  return "";
}

template <typename T>
std::vector<double> doubles(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

// A tensor's elements, read in its own dtype where the host has one (a cast would be a kernel more
// to compile per read); half floats through float32, exactly.
std::vector<double> read(const Tensor& t) {
  const DType d = t.dtype();
  if (d == dtypes::float64) return t.to_vector<double>();
  if (d == dtypes::float32 || is_half(d)) return doubles(t.to_vector<float>());
  if (d == dtypes::int32) return doubles(t.to_vector<int32_t>());
  if (d == dtypes::uint32) return doubles(t.to_vector<uint32_t>());
  if (d == dtypes::int8) return doubles(t.to_vector<int8_t>());
  if (d == dtypes::uint8) return doubles(t.to_vector<uint8_t>());
  if (d.is_bool()) return doubles(t.to_vector<bool>());
  return t.cast(dtypes::float64).to_vector<double>();
}

// The outcome of one check of a program in one mode.
struct Outcome {
  enum Kind { Pass, Fail, Skip } kind = Pass;
  std::string why;    // Fail: what was wrong; Skip: why it was not compared
  std::string repro;  // Fail: the C++ reproducer
};

Outcome skip(const std::string& why) { return {Outcome::Skip, why, ""}; }

// Whether a float step's host value is out of its dtype's range, or near enough to its end that
// kiln's rounding may overflow (x * x of float32 1.8e19 is inf or not): not compared.
bool beyond_range(const Program& p, const std::vector<Arr>& want, const Placement& at) {
  for (size_t i = 0; i < want.size(); ++i) {
    const DType d = run_dtype(p.nodes[i].dtype, at);
    if (!d.is_float()) continue;
    for (double x : want[i].v)
      if (!(std::fabs(x) < d.fmax_finite() / 64)) return true;
  }
  return false;
}

// Whether the host's values are fixed to within rounding (see Gaps).
bool ambiguous(bool f64) {
  if (f64) return std::min(g_gaps.cmp_f32, g_gaps.cmp_half) < 1e-6;
  return g_gaps.cmp_f32 < 1e-4 || g_gaps.cmp_half < 5e-2;
}

// The order the one-by-one eager mode realizes the compared steps in (from the program's seed).
std::vector<int> realize_order(const Program& p) {
  std::vector<int> order = compared(p);
  std::mt19937_64 rng(p.seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// eager, sharded and ref: build every step, realize the compared ones (all at once, or one by one
// in the program's order), and read them.
Outcome run_eager(const Program& p, const Placement& at) {
  const std::vector<Arr> want = host_eval(p);
  if (ambiguous(at.f64)) return skip("a comparison within rounding");
  if (beyond_range(p, want, at)) return skip("a value beyond its dtype's range");
  const std::vector<int> cmp = compared(p), order = realize_order(p);
  auto repro = [&](const std::string& why) {
    std::ostringstream o;
    o << steps_text(p, at, [&](int i, int) { return input_text(p.nodes[static_cast<size_t>(i)], p.nodes[static_cast<size_t>(i)].values, at); }, "  ");
    if (p.at_once) {
      o << "  std::vector<Tensor> all{";
      for (size_t q = 0; q < cmp.size(); ++q) o << (q ? ", t" : "t") << cmp[q];
      o << "};\n  Tensor::realize_all(all);\n";
    } else {
      for (int i : order) o << "  t" << i << ".realize();\n";
    }
    o << "  // " << why << "\n";
    return o.str();
  };
  try {
    std::vector<Tensor> sources;  // (sharded: what the inputs were sharded from; a shard is a copy)
    std::vector<Tensor> r = kiln_eval(p, make_inputs(p, at, &sources), at);
    if (p.at_once) {
      std::vector<Tensor> all;
      for (int i : cmp) all.push_back(r[static_cast<size_t>(i)]);
      Tensor::realize_all(all);
    } else {
      for (int i : order) r[static_cast<size_t>(i)].realize();
    }
    for (int i : cmp) {
      std::string why = mismatch(p, i, want[static_cast<size_t>(i)], read(r[static_cast<size_t>(i)]), at);
      if (!why.empty()) {
        std::string full = why + " (read with t" + std::to_string(i) + ".to_vector)";
        return {Outcome::Fail, why, repro(full)};
      }
    }
    size_t k = 0;
    for (size_t i = 0; i < p.nodes.size() && k < sources.size(); ++i) {
      if (p.nodes[i].k != K::Input) continue;
      std::string why = mismatch(p, static_cast<int>(i), {p.nodes[i].shape, p.nodes[i].values}, read(sources[k++]), at);
      if (!why.empty()) return {Outcome::Fail, "the source of sharded input " + why, repro("the tensor t" + std::to_string(i) + " was sharded from changed: " + why)};
    }
  } catch (const Error& e) {
    if (!at.shard_over.empty() && documented_sharding_error(e)) return skip("a documented limit of sharding");
    std::string why = std::string("kiln::Error: ") + e.what();
    return {Outcome::Fail, why, repro("throws " + why)};
  }
  return {};
}

// jit: a Jit of the program over three calls. Its outputs: the last compared step that is not an
// input, one from the middle, and every assigned input (a state: the same tensor is passed on every
// call, the other inputs are new each call).
Outcome run_jit(const Program& p, const Placement& at) {
  const std::vector<int> cmp = compared(p), states = assigned_inputs(p);
  std::vector<int> outs, computed;
  for (int i : cmp)
    if (p.nodes[static_cast<size_t>(i)].k != K::Input) computed.push_back(i);
  if (computed.empty()) return skip("nothing but its inputs to return");
  outs.push_back(computed.back());
  if (computed.size() > 1) outs.push_back(computed[computed.size() / 2 - (computed.size() % 2 == 0 ? 1 : 0)]);
  for (int s : states) outs.push_back(s);
  std::vector<int> input_index;  // per step: its position among the inputs, or -1
  int k = 0;
  for (const Node& n : p.nodes) input_index.push_back(n.k == K::Input ? k++ : -1);

  Jit f([&p, &at, &outs](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    std::vector<Tensor> r = kiln_eval(p, in, at), o;
    for (int i : outs) o.push_back(r[static_cast<size_t>(i)]);
    return o;
  });

  std::ostringstream text;
  text << "  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {\n"
       << steps_text(p, at, [&](int, int q) { return "in[" + std::to_string(q) + "]"; }, "    ") << "    return std::vector<Tensor>{";
  for (size_t q = 0; q < outs.size(); ++q) text << (q ? ", t" : "t") << outs[q];
  text << "};\n  });\n";
  std::map<int, Tensor> state_tensors;
  for (int s : states) {
    const Node& n = p.nodes[static_cast<size_t>(s)];
    state_tensors.emplace(s, make_input(n, n.values, at));
    text << "  Tensor s" << s << " = " << input_text(n, n.values, at) << ";  // assigned on every call\n";
  }
  text << "  std::vector<std::vector<Tensor>> kept;  // each call's outputs, cloned\n";
  auto fail = [&](const std::string& why) { return Outcome{Outcome::Fail, why, text.str() + "  // " + why + "\n"}; };

  Gen fresh(p.seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<Program> calls;
  std::vector<std::vector<Tensor>> kept;
  try {
    for (int call = 1; call <= 3; ++call) {
      Program pc = p;
      std::vector<Tensor> in;
      text << "  std::vector<Tensor> out" << call << " = f({";
      for (size_t i = 0; i < pc.nodes.size(); ++i) {
        Node& n = pc.nodes[i];
        if (n.k != K::Input) continue;
        if (state_tensors.count(static_cast<int>(i))) {  // the state as the last call left it
          if (call > 1) n.values = read(state_tensors.at(static_cast<int>(i)));
          in.push_back(state_tensors.at(static_cast<int>(i)));
          text << (input_index[i] ? ", s" : "s") << i;
        } else {
          if (call > 1) n.values = fresh.values(n.shape, n.dtype, false);
          in.push_back(make_input(n, n.values, at));
          text << (input_index[i] ? ", " : "") << input_text(n, n.values, at);
        }
      }
      text << "});\n";
      std::vector<Tensor> out;
      try {
        out = f(in);
      } catch (const Error& e) {
        // a function whose outputs are its inputs or views of them runs nothing and cannot be
        // captured (jit.hpp, a documented error)
        if (std::string(e.what()).find("ran no kernel and no copy") == std::string::npos) throw;
        return skip("the function runs no kernel");
      }
      std::vector<Tensor> clones;
      for (const Tensor& t : out) clones.push_back(t.clone());
      kept.push_back(clones);
      text << "  kept.push_back({";
      for (size_t q = 0; q < out.size(); ++q) text << (q ? ", out" : "out") << call << "[" << q << "].clone()";
      text << "});\n";
      const std::vector<Arr> want = host_eval(pc);
      if (ambiguous(at.f64)) return skip("a comparison within rounding");
      if (beyond_range(pc, want, at)) return skip("a value beyond its dtype's range");
      for (size_t q = 0; q < outs.size(); ++q) {
        std::string why = mismatch(p, outs[q], want[static_cast<size_t>(outs[q])], read(out[q]), at);
        if (!why.empty()) return fail("call " + std::to_string(call) + ", out" + std::to_string(call) + "[" + std::to_string(q) + "] (" + why + ")");
      }
      for (int s : states) {
        std::string why = mismatch(p, s, want[static_cast<size_t>(s)], read(state_tensors.at(s)), at);
        if (!why.empty()) return fail("after call " + std::to_string(call) + ", the state s" + std::to_string(s) + " (" + why + ")");
      }
      calls.push_back(pc);
    }
    // every call's clones still hold that call's values
    for (size_t call = 0; call < kept.size(); ++call) {
      const std::vector<Arr> want = host_eval(calls[call]);
      for (size_t q = 0; q < outs.size(); ++q) {
        std::string why = mismatch(p, outs[q], want[static_cast<size_t>(outs[q])], read(kept[call][q]), at);
        if (!why.empty())
          return fail("kept[" + std::to_string(call) + "][" + std::to_string(q) + "], the clone of call " + std::to_string(call + 1) +
                      "'s output read after call 3 (" + why + ")");
      }
    }
  } catch (const Error& e) {
    return fail(std::string("kiln::Error: ") + e.what());
  }
  return {};
}

// gradient: d((t_last * w).sum()) / d(each input), against central differences of the host's loss.
Outcome run_gradient(const Program& p, const Placement& at) {
  const int out = static_cast<int>(p.nodes.size()) - 1;
  const Shape& so = p.nodes[static_cast<size_t>(out)].shape;
  std::vector<double> w(static_cast<size_t>(count(so)));
  std::mt19937_64 rng(p.seed);
  for (double& x : w) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  if (beyond_range(p, host_eval(p), at)) return skip("a value beyond its dtype's range");
  if (g_gaps.any < 1e-4) return skip("a switch within rounding of its point");
  auto loss = [&](const Program& q) {
    Arr r = host_eval(q)[static_cast<size_t>(out)];
    double s = 0;
    for (size_t i = 0; i < r.v.size(); ++i) s += r.v[i] * w[i];
    return s;
  };
  Placement wat = at;
  Node wn;
  wn.shape = so;
  wn.dtype = dtypes::float32;
  std::vector<int> inputs;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (p.nodes[i].k == K::Input) inputs.push_back(static_cast<int>(i));
  auto repro = [&](const std::string& why) {
    std::ostringstream o;
    o << steps_text(p, at, [&](int i, int) { return input_text(p.nodes[static_cast<size_t>(i)], p.nodes[static_cast<size_t>(i)].values, at); }, "  ");
    o << "  Tensor w = " << input_text(wn, w, wat) << ";\n  Tensor loss = (t" << out << " * w).sum();\n  std::vector<Tensor> g = loss.gradient({";
    for (size_t q = 0; q < inputs.size(); ++q) o << (q ? ", t" : "t") << inputs[q];
    o << "});\n  // " << why << "\n";
    return o.str();
  };
  std::vector<Tensor> grads;
  try {
    std::vector<Tensor> in = make_inputs(p, at), all;
    try {
      all = kiln_eval(p, in, at);
    } catch (const Error& e) {  // (only the forward program: the gradient itself must never throw)
      if (at.shard_over.empty() || !documented_sharding_error(e)) throw;
      return skip("a documented limit of sharding");
    }
    wn.shard = -1;
    Tensor wt = make_input(wn, w, wat);
    Tensor l = (all.back() * wt).sum();
    grads = l.gradient(in);
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::vector<double> got = read(grads[k]);
      for (size_t e = 0; e < got.size(); ++e) {
        auto fd = [&](double h) {
          Program up = p, down = p;
          up.nodes[static_cast<size_t>(inputs[k])].values[e] += h;
          down.nodes[static_cast<size_t>(inputs[k])].values[e] -= h;
          return (loss(up) - loss(down)) / (2 * h);
        };
        double d1 = fd(1e-3), d2 = fd(2.5e-4);
        if (std::fabs(d1 - d2) > 1e-4 * (1 + std::fabs(d2))) continue;  // a kink within reach
        if (!(std::fabs(got[e] - d2) <= 2e-3 * (1 + std::fabs(d2)))) {
          std::ostringstream o;
          o.precision(9);
          o << "g[" << k << "] (d loss / d t" << inputs[k] << ") element " << e << ": got " << got[e] << ", central differences of the loss in float64 "
            << d2;
          return {Outcome::Fail, o.str(), repro(o.str())};
        }
      }
    }
  } catch (const Error& e) {
    std::string why = std::string("kiln::Error: ") + e.what();
    return {Outcome::Fail, why, repro("throws " + why)};
  }
  return {};
}

// ---- shrinking ----

// p without step i: reads of it read `instead` (an earlier step, or -1 when nothing reads it);
// later steps move down one.
Program without(const Program& p, int i, int instead) {
  Program q = p;
  q.nodes.erase(q.nodes.begin() + i);
  for (Node& n : q.nodes)
    for (int* o : {&n.a, &n.b, &n.c}) {
      if (*o == i) *o = instead;
      else if (*o > i) --*o;
    }
  return q;
}

bool read_by_any(const Program& p, int i) {
  for (const Node& n : p.nodes)
    for (int o : operands(n))
      if (o == i) return true;
  return false;
}

// Whether q is a program the generator could have made: operands earlier than their step, of the
// shapes and dtypes the step needs (a bypass keeps them), and the assign rules kept.
bool valid(const Program& q) {
  if (q.nodes.empty() || q.nodes[0].k != K::Input) return false;
  for (size_t i = 0; i < q.nodes.size(); ++i) {
    const Node& n = q.nodes[i];
    for (int o : operands(n))
      if (o < 0 || o >= static_cast<int>(i)) return false;
    if (n.k == K::Assign && (root(q, n.a) < 0 || root(q, n.b) == root(q, n.a))) return false;
  }
  return analyse(q).valid;
}

// Host values rounded to dtype d, as an input holding them would be.
std::vector<double> rounded(const std::vector<double>& v, const Shape& s, DType d) {
  if (!d.is_float()) return v;
  return Tensor::from_vector<double>(v, s, "ref").cast(d).cast(dtypes::float64).to_vector<double>();
}

// Smaller programs that may still fail: each step (last first) dropped when nothing reads it,
// bypassed (its readers read its first operand, of the same shape and dtype), or replaced by an
// input holding its value.
std::vector<Program> smaller(const Program& p) {
  std::vector<Program> out;
  std::vector<Arr> values;
  bool evaluated = false;
  for (int i = static_cast<int>(p.nodes.size()) - 1; i >= 0; --i) {
    const Node& n = p.nodes[static_cast<size_t>(i)];
    if (!read_by_any(p, i) && p.nodes.size() > 1) out.push_back(without(p, i, -1));
    if (n.k == K::Input) continue;
    const Node& a = p.nodes[static_cast<size_t>(n.a)];
    if (a.shape == n.shape && a.dtype == n.dtype) out.push_back(without(p, i, n.a));
    if (n.k == K::Assign) continue;  // (an input of its value would leave its target unassigned)
    if (!evaluated) values = host_eval(p), evaluated = true;
    Program q = p;
    Node in;
    in.shape = n.shape;
    in.dtype = n.dtype;
    in.values = rounded(values[static_cast<size_t>(i)].v, n.shape, n.dtype);
    for (size_t d = 0; d < n.shape.size(); ++d)
      if (n.shape[d] >= 3) {
        in.shard = static_cast<int>(d);
        break;
      }
    q.nodes[static_cast<size_t>(i)] = in;
    out.push_back(q);
  }
  return out;
}

struct Shrunk {
  Program p;
  Outcome o;
  int tries = 0;
};

// The smallest failing program found from p in at most 40 s or 300 checks.
Shrunk shrink(const Program& p, const Outcome& o, const std::function<Outcome(const Program&)>& check) {
  Shrunk best{p, o, 0};
  const auto start = std::chrono::steady_clock::now();
  bool progress = true;
  while (progress) {
    progress = false;
    for (const Program& q : smaller(best.p)) {
      if (best.tries >= 300 || std::chrono::steady_clock::now() - start > std::chrono::seconds(40)) return best;
      if (!valid(q)) continue;
      ++best.tries;
      Outcome r = check(q);
      if (r.kind == Outcome::Fail) {
        best.p = q;
        best.o = r;
        progress = true;
        break;
      }
    }
  }
  return best;
}

// ---- the run ----

struct Fuzz {
  uint64_t seed = 43;
  int64_t cases = 0;
  std::vector<std::string> devs;  // cpu devices for the sharded modes (3), else empty
  std::vector<std::string> modes;  // the modes to run (KILN_FUZZ_MODES); empty: all
  int failures = 0;
  std::map<std::string, int> ran, skipped, made;  // (made: what the programs held, printed as coverage)

  // Runs one mode on p; a failure is reported with its reproducer, shrunk.
  void check(int64_t c, const std::string& mode, const Program& p, const std::function<Outcome(const Program&)>& f) {
    if (!modes.empty() && std::find(modes.begin(), modes.end(), mode) == modes.end()) return;
    Outcome o = f(p);
    if (o.kind == Outcome::Skip) {
      ++skipped[mode + " (" + o.why + ")"];
      return;
    }
    ++ran[mode];
    if (o.kind == Outcome::Pass) return;
    ++failures;
    Shrunk s = shrink(p, o, f);
    ADD_FAILURE() << "fuzz: seed " << seed << " case " << c << " (" << mode << "): " << o.why << "\nrerun it alone with KILN_FUZZ_SEED=" << seed
                  << " KILN_FUZZ_ONLY=" << c << "\nthe program (" << p.nodes.size() << " steps):\n"
                  << o.repro << "shrunk to " << s.p.nodes.size() << " steps (" << s.tries << " tries), which fails with: " << s.o.why << "\n"
                  << s.o.repro;
  }

  void run_case(int64_t c) {
    Gen g(seed * 1000003 + static_cast<uint64_t>(c));
    const bool smooth = c % 4 == 3;  // a gradient case: float32, differentiable, few ties
    Program p = g.program(smooth, 3);
    ++made[p.nodes[0].dtype.name() + " inputs"];
    std::map<int, int> assigns;
    bool clone = false;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      if (p.nodes[i].k == K::Assign) ++assigns[root(p, static_cast<int>(i))];
      clone |= p.nodes[i].k == K::Clone;
    }
    if (!assigns.empty()) ++made["with assigns"];
    if (std::any_of(assigns.begin(), assigns.end(), [](const auto& a) { return a.second > 1; })) ++made["with chained assigns"];
    if (clone) ++made["with clones"];
    const Placement cpu, ref{"ref", true, {}}, sharded{"cpu:0", false, devs};
    if (smooth) {
      check(c, "gradient", p, [&](const Program& q) { return run_gradient(q, cpu); });
      if (devs.empty()) ++skipped["sharded gradient (fewer than 3 cpu devices)"];
      else check(c, "sharded gradient", p, [&](const Program& q) { return run_gradient(q, sharded); });
      return;
    }
    check(c, "eager", p, [&](const Program& q) { return run_eager(q, cpu); });
    check(c, "ref", p, [&](const Program& q) { return run_eager(q, ref); });
    if (c % 2 == 0) check(c, "jit", p, [&](const Program& q) { return run_jit(q, cpu); });
    if (devs.empty()) ++skipped["sharded (fewer than 3 cpu devices)"];
    else if (c % 2 == 1) check(c, "sharded", p, [&](const Program& q) { return run_eager(q, sharded); });
  }
};

TEST(Fuzz, RandomProgramsAgreeWithAPlainReferenceEveryWay) {
  Fuzz z;
  z.seed = static_cast<uint64_t>(env_int("KILN_FUZZ_SEED", 43));
  z.cases = env_int("KILN_FUZZ_CASES", 1800);  // about 105 s on two idle cores with a cold kernel cache, 20 s warm
  std::vector<std::string> cpus = cpu_devices();
  if (cpus.size() >= 3) z.devs.assign(cpus.begin(), cpus.begin() + 3);
  else std::printf("fuzz: fewer than 3 cpu devices (%zu): the sharded modes are skipped (ctest runs this with devices = 3)\n", cpus.size());
  if (const char* m = std::getenv("KILN_FUZZ_MODES")) {  // e.g. "jit,sharded gradient": only these
    std::stringstream list(m);
    for (std::string mode; std::getline(list, mode, ',');)
      if (!mode.empty()) z.modes.push_back(mode);
  }
  const int64_t only = env_int("KILN_FUZZ_ONLY", -1);  // one case alone (what a failure says to rerun)
  for (int64_t c = only >= 0 ? only : 0; c < (only >= 0 ? only + 1 : z.cases) && z.failures < 3; ++c) z.run_case(c);
  std::string summary;
  for (const auto& [mode, n] : z.ran) summary += " " + mode + ": " + std::to_string(n) + ";";
  if (z.ran.empty()) summary += " nothing;";
  for (const auto& [why, n] : z.skipped) summary += " skipped " + why + ": " + std::to_string(n) + ";";
  summary += " programs:";
  for (const auto& [what, n] : z.made) summary += " " + std::to_string(n) + " " + what + ";";
  std::printf("fuzz: seed %llu, %lld cases; ran%s\n", static_cast<unsigned long long>(z.seed), static_cast<long long>(z.cases), summary.c_str());
}

}  // namespace
