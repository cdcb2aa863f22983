// tests/e2e/fuzz/host_eval.cpp - the fuzzer's host evaluator: a program's value computed plainly in
// float64 and exact integers (integer dtypes wrap as two's complement, as kiln's kernels do), with
// nothing of kiln's trusted beyond DType's properties. Its arrays are row-major Arrs; while it
// evaluates it records in g_gaps how close each comparison and each switch came to its point, so the
// modes can skip what rounding leaves undecided.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "program.hpp"

namespace kiln::fuzz {

// ---- the host evaluator's arrays: row-major, float64 (integers exact) ----

int64_t count(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

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

namespace {

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

}  // namespace

// ---- dtypes ----

bool is_half(DType d) { return d == dtypes::float16 || d == dtypes::bfloat16; }

std::string cpp_dtype(DType d) { return d.is_bool() ? "dtypes::bool_" : "dtypes::" + d.name(); }

namespace {

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

}  // namespace

// The dtype kiln sums d in (reduce.cpp's sum_acc_dtype: small integers and bools in 32 bits; half
// floats are summed in float32 and cast back, so their sum keeps their dtype).
DType sum_dtype(DType d) {
  if (d.is_bool()) return dtypes::int32;
  if (d.is_int() && d.scalar_size() < 4) return d.is_unsigned() ? dtypes::uint32 : dtypes::int32;
  return d;
}

// ---- the host evaluator ----

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

}  // namespace kiln::fuzz
