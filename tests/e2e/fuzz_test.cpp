// tests/e2e/fuzz_test.cpp - a seeded differential fuzzer over the public Tensor API (issue 43).
//
// A case is a random program: a DAG of steps (elementwise ops with tensors and host scalars,
// broadcasting, where, views: reshape, permute, pad, shrink, flip, expand; reductions, softmax,
// var, matmul) over random inputs of odd and size-1 shapes, in float32, float16, bfloat16 or int32.
// Its value is computed by a plain host evaluator in float64 (below: nothing of kiln's is trusted)
// and compared with kiln's, run four ways:
//   eager      on cpu:0, the steps realized all at once or one by one in a random order
//   jit        through a kiln::Jit over three calls with new inputs; each call's outputs are kept
//              with clone() and compared after the last call (a clone must be a snapshot)
//   sharded    the inputs sharded over cpu:0..2 on their first axis (ctest runs this executable
//              with `devices = 3`; with fewer cpu devices the mode is skipped)
//   gradient   float32 programs: d(sum(out * w))/d(inputs), on cpu:0 and sharded, against central
//              finite differences of the host evaluator (elements near a kink are skipped)
// and a second kind of case, assigns: a state tensor assigned in place by random expressions
// (chained, a reader realized before the state, views read after), eagerly and inside a Jit that
// writes its input on every call.
//
// A failure prints the seed and case, the mode, the first wrong element and the program as a C++
// reproducer cut down to the steps the wrong value depends on. KILN_FUZZ_SEED and KILN_FUZZ_CASES
// choose the run (defaults: seed 43, cases sized for about a minute in CI); KILN_FUZZ_ONLY=N runs
// case N alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

// ---- the host evaluator: row-major float64 arrays ----

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

// Calls f(out_index, multi_index) for every element of shape s.
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

// ---- programs ----

enum class K { Input, Unary, Binary, Scalar, Where, Reshape, Permute, Pad, Shrink, Flip, Expand, Reduce, Softmax, Var, Matmul };
enum Unary { kNeg, kRelu, kAbs, kTanh, kSigmoid, kExp, kSquare, kUnaryCount };
enum Binary { kAdd, kSub, kMul, kMax, kMin, kBinaryCount };
enum Reduce { kSum, kRMax, kRMin, kMean, kReduceCount };
const char* kUnaryName[] = {"neg", "relu", "abs", "tanh", "sigmoid", "exp", "square"};
const char* kBinaryName[] = {"+", "-", "*", "maximum", "minimum"};
const char* kReduceName[] = {"sum", "max", "min", "mean"};

struct Node {
  K k = K::Input;
  int a = -1, b = -1, c = -1;
  int sub = 0;                   // Unary / Binary / Reduce kind; Scalar: 0 multiply, 1 add; Softmax: 1 log_softmax; Var: 1 std
  std::vector<int64_t> ints;     // reshape shape, permute order, pad/shrink pairs, flip axes, expand shape
  int axis = 0;
  bool keep = false;
  double s = 0;                  // a scalar
  Shape shape;
};

struct Program {
  DType dtype = dtypes::float32;
  std::vector<Node> nodes;
  std::vector<std::vector<double>> data;  // per Input node, in node order
};

bool is_float(const Program& p) { return p.dtype.is_float(); }

double round_to(DType d, double x) {
  if (d == dtypes::float32) return static_cast<double>(static_cast<float>(x));
  return x;
}

// The smallest gap the last host_eval saw at a point where the value or the gradient switches: the
// operands of a where's comparison, of maximum/minimum, relu and abs at 0, the top two of a max or
// min reduction. Where it is within rounding, kiln (in float32 or narrower) may take the other side
// of the switch, and both answers are right: the case is skipped and counted.
double g_min_gap = 0, g_where_gap = 0;  // (every switch; a where's comparison alone)

// The host value of every node.
std::vector<Arr> host_eval(const Program& p, const std::vector<std::vector<double>>& data) {
  g_min_gap = g_where_gap = std::numeric_limits<double>::infinity();
  auto gap = [](double a, double b) { g_min_gap = std::min(g_min_gap, std::fabs(a - b) / (1 + std::fabs(a))); };
  std::vector<Arr> r;
  size_t input = 0;
  for (const Node& n : p.nodes) {
    const Arr* a = n.a >= 0 ? &r[static_cast<size_t>(n.a)] : nullptr;
    Arr out;
    switch (n.k) {
      case K::Input: out = {n.shape, data[input++]}; break;
      case K::Unary:
        out = zip({a}, [&](const std::vector<double>& x) {
          double v = x[0];
          switch (n.sub) {
            case kNeg: return -v;
            case kRelu: return gap(v, 0), v > 0 ? v : 0.0;
            case kAbs: return gap(v, 0), std::fabs(v);
            case kTanh: return std::tanh(v);
            case kSigmoid: return 1 / (1 + std::exp(-v));
            case kExp: return std::exp(v * 0.25);
            default: return v * v;
          }
        });
        break;
      case K::Binary:
        out = zip({a, &r[static_cast<size_t>(n.b)]}, [&](const std::vector<double>& x) {
          switch (n.sub) {
            case kAdd: return x[0] + x[1];
            case kSub: return x[0] - x[1];
            case kMul: return x[0] * x[1];
            case kMax: return gap(x[0], x[1]), std::max(x[0], x[1]);
            default: return gap(x[0], x[1]), std::min(x[0], x[1]);
          }
        });
        break;
      case K::Scalar: out = zip({a}, [&](const std::vector<double>& x) { return n.sub == 0 ? x[0] * n.s : x[0] + n.s; }); break;
      case K::Where:
        out = zip({a, &r[static_cast<size_t>(n.b)], &r[static_cast<size_t>(n.c)]},
                  [&](const std::vector<double>& x) {
                    g_where_gap = std::min(g_where_gap, std::fabs(x[0] - x[1]) / (1 + std::fabs(x[0])));
                    return gap(x[0], x[1]), x[0] > x[1] ? x[0] : x[2];
                  });
        break;
      case K::Reshape: out = {n.shape, a->v}; break;
      case K::Permute: {
        out = {n.shape, std::vector<double>(a->v.size())};
        std::vector<int64_t> st = strides(a->shape);
        each(n.shape, [&](int64_t e, const std::vector<int64_t>& idx) {
          int64_t off = 0;
          for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[static_cast<size_t>(n.ints[d])];
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
          for (size_t d = 0; d < idx.size(); ++d) {
            int64_t i = idx[d];
            if (n.k == K::Pad) i -= n.ints[2 * d];
            if (n.k == K::Shrink) i += n.ints[2 * d];
            if (n.k == K::Flip && std::find(n.ints.begin(), n.ints.end(), static_cast<int64_t>(d)) != n.ints.end()) i = a->shape[d] - 1 - i;
            inside &= i >= 0 && i < a->shape[d];
            off += i * st[d];
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
        int64_t len = a->shape[static_cast<size_t>(n.axis)];
        std::vector<int64_t> st = strides(a->shape);
        auto row = [&](const std::vector<int64_t>& idx) {  // the reduced axis's elements at idx
          std::vector<double> v;
          int64_t base = 0;
          for (size_t d = 0; d < idx.size(); ++d) base += (static_cast<int>(d) == n.axis ? 0 : idx[d]) * st[d];
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
          double sum = std::accumulate(v.begin(), v.end(), 0.0), res;
          if (n.k == K::Var) {
            double mean = sum / len, ss = 0;
            for (double x : v) ss += (x - mean) * (x - mean);
            res = ss / (len - 1);
            if (n.sub) res = std::sqrt(res);
          } else if (n.sub == kSum) res = sum;
          else if (n.sub == kRMax || n.sub == kRMin) {
            std::vector<double> sorted = v;
            std::sort(sorted.begin(), sorted.end());
            if (sorted.size() > 1) gap(n.sub == kRMax ? sorted.back() : sorted[0], n.sub == kRMax ? sorted[sorted.size() - 2] : sorted[1]);
            res = n.sub == kRMax ? sorted.back() : sorted[0];
          }
          else res = sum / len;
          red.v[static_cast<size_t>(e)] = res;
        });
        red.shape = n.shape;  // keepdim or not: the same elements
        out = red;
        break;
      }
      case K::Matmul: {
        const Arr& b = r[static_cast<size_t>(n.b)];
        int64_t m = a->shape[0], kk = a->shape[1], nn = b.shape[1];
        out = {n.shape, std::vector<double>(static_cast<size_t>(m * nn))};
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < nn; ++j) {
            double acc = 0;
            for (int64_t q = 0; q < kk; ++q) acc += a->v[static_cast<size_t>(i * kk + q)] * b.v[static_cast<size_t>(q * nn + j)];
            out.v[static_cast<size_t>(i * nn + j)] = acc;
          }
        break;
      }
    }
    if (p.dtype == dtypes::int32)
      for (double& x : out.v) x = std::trunc(x);  // (int programs only make integers; mean is float-only)
    r.push_back(std::move(out));
  }
  return r;
}

// kiln's value of every node, built from `inputs` (one per Input node).
std::vector<Tensor> kiln_eval(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> r;
  size_t input = 0;
  for (const Node& n : p.nodes) {
    auto A = [&]() -> const Tensor& { return r[static_cast<size_t>(n.a)]; };
    auto B = [&]() -> const Tensor& { return r[static_cast<size_t>(n.b)]; };
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
          default: r.push_back(x * x);
        }
        break;
      }
      case K::Binary:
        switch (n.sub) {
          case kAdd: r.push_back(A() + B()); break;
          case kSub: r.push_back(A() - B()); break;
          case kMul: r.push_back(A() * B()); break;
          case kMax: r.push_back(A().maximum(B())); break;
          default: r.push_back(A().minimum(B()));
        }
        break;
      case K::Scalar: r.push_back(n.sub == 0 ? A() * n.s : A() + n.s); break;
      case K::Where: r.push_back(Tensor::where(A().gt(B()), A(), r[static_cast<size_t>(n.c)])); break;
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
    }
  }
  return r;
}

std::string shape_text(const Shape& s) {
  std::string t = "{";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "}";
}

// The steps `out` depends on, in order.
std::vector<bool> needed(const Program& p, int out) {
  std::vector<bool> need(p.nodes.size(), false);
  need[static_cast<size_t>(out)] = true;
  for (int i = out; i >= 0; --i) {
    if (!need[static_cast<size_t>(i)]) continue;
    for (int s : {p.nodes[static_cast<size_t>(i)].a, p.nodes[static_cast<size_t>(i)].b, p.nodes[static_cast<size_t>(i)].c})
      if (s >= 0) need[static_cast<size_t>(s)] = true;
  }
  return need;
}

// The program as C++ against the public API, cut to what node `out` depends on.
std::string reproducer(const Program& p, const std::vector<std::vector<double>>& data, int out, const std::string& device) {
  std::vector<bool> need = needed(p, out);
  std::ostringstream o;
  o.precision(17);
  size_t input = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node& n = p.nodes[i];
    if (n.k == K::Input) ++input;
    if (!need[i]) continue;
    std::string A = "t" + std::to_string(n.a), B = "t" + std::to_string(n.b), C = "t" + std::to_string(n.c);
    std::string ints;
    for (size_t k = 0; k < n.ints.size(); ++k) ints += (k ? ", " : "") + std::to_string(n.ints[k]);
    std::string pairs;
    for (size_t k = 0; k + 1 < n.ints.size(); k += 2) pairs += (k ? ", " : "") + std::string("{") + std::to_string(n.ints[k]) + ", " + std::to_string(n.ints[k + 1]) + "}";
    o << "  Tensor t" << i << " = ";
    switch (n.k) {
      case K::Input: {
        o << "Tensor::from_vector<double>({";
        const std::vector<double>& d = data[input - 1];
        for (size_t k = 0; k < d.size(); ++k) o << (k ? ", " : "") << d[k];
        o << "}, " << shape_text(n.shape) << ", \"" << device << "\").cast(dtypes::" << p.dtype.name() << ")";
        break;
      }
      case K::Unary:
        if (n.sub == kNeg) o << "-" << A;
        else if (n.sub == kExp) o << "(" << A << " * 0.25).exp()";
        else if (n.sub == kSquare) o << A << " * " << A;
        else o << A << "." << kUnaryName[n.sub] << "()";
        break;
      case K::Binary:
        if (n.sub < kMax) o << A << " " << kBinaryName[n.sub] << " " << B;
        else o << A << "." << kBinaryName[n.sub] << "(" << B << ")";
        break;
      case K::Scalar: o << A << (n.sub == 0 ? " * " : " + ") << n.s; break;
      case K::Where: o << "Tensor::where(" << A << ".gt(" << B << "), " << A << ", " << C << ")"; break;
      case K::Reshape: o << A << ".reshape({" << ints << "})"; break;
      case K::Permute: o << A << ".permute({" << ints << "})"; break;
      case K::Pad: o << A << ".pad({" << pairs << "})"; break;
      case K::Shrink: o << A << ".shrink({" << pairs << "})"; break;
      case K::Flip: o << A << ".flip({" << ints << "})"; break;
      case K::Expand: o << A << ".expand({" << ints << "})"; break;
      case K::Reduce: o << A << "." << kReduceName[n.sub] << "({" << n.axis << "}, " << (n.keep ? "true" : "false") << ")"; break;
      case K::Softmax: o << A << (n.sub ? ".log_softmax(" : ".softmax(") << n.axis << ")"; break;
      case K::Var: o << A << (n.sub ? ".std({" : ".var({") << n.axis << "}, " << (n.keep ? "true" : "false") << ")"; break;
      case K::Matmul: o << A << ".matmul(" << B << ")"; break;
    }
    o << ";  // " << shape_text(n.shape) << "\n";
  }
  o << "  std::vector<float> got = t" << out << ".cast(dtypes::float32).to_vector<float>();\n";
  return o.str();
}

// ---- the generator ----

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin(int percent = 50) { return pick(100) < percent; }
  int64_t dim() { return std::array<int64_t, 6>{1, 2, 3, 3, 5, 7}[static_cast<size_t>(pick(6))]; }

  // Exact in every dtype: multiples of 1/8 in [-2, 2] (ints: -3..3); gradient cases want no ties.
  std::vector<double> values(const Shape& s, DType d, bool smooth) {
    std::vector<double> v(static_cast<size_t>(count(s)));
    for (double& x : v) {
      if (d == dtypes::int32) x = pick(7) - 3;
      else if (smooth) x = round_to(dtypes::float32, std::uniform_real_distribution<double>(-1.5, 1.5)(rng_));
      else x = (pick(33) - 16) / 8.0;
    }
    return v;
  }

  Program program(bool smooth) {
    Program p;
    int r = pick(10);
    p.dtype = smooth || r < 6 ? dtypes::float32 : r < 7 ? dtypes::float16 : r < 8 ? dtypes::bfloat16 : dtypes::int32;
    Shape s;
    for (int d = 0, rank = 1 + pick(3); d < rank; ++d) s.push_back(dim());
    if (smooth || coin(70)) s[0] = std::max<int64_t>(s[0], 3);  // (a first axis the sharded mode can split)
    add_input(p, s, smooth);
    const int steps = 2 + pick(p.dtype.itemsize() == 2 ? 4 : 8);
    int muls = 0;
    for (int i = 0; i < steps; ++i) step(p, smooth, muls);
    return p;
  }

 private:
  int add_input(Program& p, const Shape& s, bool smooth) {
    Node n;
    n.k = K::Input;
    n.shape = s;
    p.nodes.push_back(n);
    p.data.push_back(values(s, p.dtype, smooth));
    return static_cast<int>(p.nodes.size()) - 1;
  }
  // An operand for `a`: an earlier node of a broadcastable shape, or a new input of one.
  int operand(Program& p, int a, bool smooth) {
    const Shape& sa = p.nodes[static_cast<size_t>(a)].shape;
    std::vector<int> same;
    for (size_t i = 0; i < p.nodes.size(); ++i)
      if (p.nodes[i].shape == sa && static_cast<int>(i) != a) same.push_back(static_cast<int>(i));
    if (!same.empty() && coin(40)) return same[static_cast<size_t>(pick(static_cast<int>(same.size())))];
    Shape s = sa;
    for (int64_t& d : s)
      if (coin(30)) d = 1;  // broadcast along it
    if (s.size() > 1 && coin(20)) s.erase(s.begin());  // and fewer dimensions
    return add_input(p, s, smooth);
  }
  void push(Program& p, Node n) { p.nodes.push_back(std::move(n)); }

  void step(Program& p, bool smooth, int& muls) {
    const bool fl = is_float(p), half = p.dtype.itemsize() == 2;
    int a = static_cast<int>(p.nodes.size()) - 1;
    if (coin(25)) a = pick(static_cast<int>(p.nodes.size()));
    const Shape sa = p.nodes[static_cast<size_t>(a)].shape;
    const size_t rank = sa.size();
    Node n;
    n.k = K::Unary;
    n.a = a;
    switch (pick(15)) {
      case 0: case 1:
        n.sub = pick(kUnaryCount);
        if (!fl && n.sub >= kTanh && n.sub <= kExp) n.sub = kNeg;
        if (half && n.sub == kSquare) n.sub = kTanh;
        if (n.sub == kSquare && ++muls > 2) n.sub = kAbs;
        n.shape = sa;
        break;
      case 2: case 3: case 4: {
        n.k = K::Binary;
        n.sub = pick(kBinaryCount);
        if (n.sub == kMul && (++muls > 2 || half)) n.sub = kAdd;
        n.b = operand(p, a, smooth);
        n.shape = broadcast_shape(sa, p.nodes[static_cast<size_t>(n.b)].shape);
        break;
      }
      case 5:
        if (!fl) return step(p, smooth, muls);
        n.k = K::Scalar;
        n.sub = pick(2);
        n.s = std::array<double, 6>{0.5, -1.25, 3, 0.1, 2.75, -0.3}[static_cast<size_t>(pick(6))];
        n.shape = sa;
        break;
      case 6: {
        n.k = K::Where;
        n.b = operand(p, a, smooth);
        n.c = operand(p, a, smooth);
        n.shape = broadcast_shape(broadcast_shape(sa, p.nodes[static_cast<size_t>(n.b)].shape), p.nodes[static_cast<size_t>(n.c)].shape);
        break;
      }
      case 7: {  // reshape to another factorisation
        n.k = K::Reshape;
        int64_t total = count(sa);
        Shape s;
        int64_t left = total;
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
        for (int64_t o : order) n.shape.push_back(sa[static_cast<size_t>(o)]);
        break;
      }
      case 9: case 10: {  // pad or shrink
        n.k = coin() ? K::Pad : K::Shrink;
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
        n.shape = sa;
        break;
      }
      case 12: {
        n.k = K::Expand;
        n.shape = sa;
        bool any = false;
        for (int64_t& d : n.shape)
          if (d == 1) d = 2 + pick(3), any = true;
        if (!any) return step(p, smooth, muls);
        n.ints = n.shape;
        break;
      }
      case 13: {  // reduce, softmax or var over a random axis
        if (rank == 0) return step(p, smooth, muls);
        n.axis = pick(static_cast<int>(rank));
        n.keep = coin();
        int what = pick(fl ? 4 : 2);
        if (what <= 1) {
          n.k = K::Reduce;
          n.sub = pick(fl ? kReduceCount : kMean);
        } else if (what == 2) {
          n.k = K::Softmax;
          n.sub = pick(2);
        } else {
          if (sa[static_cast<size_t>(n.axis)] < 2 || half) return step(p, smooth, muls);
          n.k = K::Var;
          n.sub = pick(2);
        }
        if (n.k == K::Softmax) {
          n.shape = sa;
        } else {
          for (size_t d = 0; d < rank; ++d)
            if (static_cast<int>(d) != n.axis) n.shape.push_back(sa[d]);
            else if (n.keep) n.shape.push_back(1);
        }
        break;
      }
      default: {
        if (rank != 2 || half || (!fl && ++muls > 2)) return step(p, smooth, muls);
        n.k = K::Matmul;
        int64_t cols = dim();
        n.b = add_input(p, {sa[1], cols}, smooth);
        n.shape = {sa[0], cols};
        break;
      }
    }
    push(p, std::move(n));
  }

  std::mt19937_64 rng_;
};

// ---- running and comparing ----

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

Tensor make_input(const Program& p, const std::vector<double>& v, const Shape& s, const std::string& device) {
  if (p.dtype == dtypes::int32) {
    std::vector<int32_t> i(v.begin(), v.end());
    return Tensor::from_vector<int32_t>(i, s, device);
  }
  return Tensor::from_vector<double>(v, s, device).cast(p.dtype).realize();
}

std::vector<Tensor> inputs_of(const Program& p, const std::vector<std::vector<double>>& data, const std::string& device,
                              const std::vector<std::string>& shard_over = {}) {
  std::vector<Tensor> out;
  size_t k = 0;
  for (const Node& n : p.nodes) {
    if (n.k != K::Input) continue;
    Tensor t = make_input(p, data[k++], n.shape, device);
    if (!shard_over.empty()) {
      bool split = !n.shape.empty() && n.shape[0] >= static_cast<int64_t>(shard_over.size());
      t = split ? t.shard(shard_over, 0) : t.shard(shard_over);
    }
    out.push_back(t);
  }
  return out;
}

// What a sharded program may run into by design (DESIGN.md 5.1): a reshape that would move elements
// between the parts, and the rows of one part (a shrink of the shard axis within one device) being
// a tensor on that device, which does not mix with the rows of another device's part.
bool documented_sharding_error(const Error& e) {
  std::string m = e.what();
  return m.find("would move elements between the parts") != std::string::npos ||
         m.find("operands are on different devices (cpu:") != std::string::npos;
}

double tolerance(DType d) { return d == dtypes::int32 ? 0 : d == dtypes::float32 ? 2e-4 : 4e-2; }

// The first node whose value differs from the host's, with a message; -1 when all agree.
int first_mismatch(const Program& p, const std::vector<Arr>& want, const std::vector<std::vector<double>>& got, std::string& why) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].size() != want[i].v.size()) {
      why = "node " + std::to_string(i) + " has " + std::to_string(got[i].size()) + " elements, expected " + std::to_string(want[i].v.size());
      return static_cast<int>(i);
    }
    // the tolerance scales with the node's magnitude: float programs accumulate rounding
    double scale = 1;
    for (double x : want[i].v) scale = std::max(scale, std::fabs(x));
    for (size_t e = 0; e < got[i].size(); ++e) {
      double w = want[i].v[e], g = got[i][e];
      if (std::isnan(w) && std::isnan(g)) continue;
      double tol = tolerance(p.dtype) * (p.dtype.itemsize() == 2 ? scale : 1 + std::fabs(w));
      if (!(std::fabs(g - w) <= tol)) {
        std::ostringstream o;
        o.precision(9);
        o << "node " << i << " element " << e << ": got " << g << ", expected " << w;
        why = o.str();
        return static_cast<int>(i);
      }
    }
  }
  return -1;
}

std::vector<std::vector<double>> read_all(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.cast(dtypes::float64).to_vector<double>());
  return out;
}

struct Fuzz {
  uint64_t seed;
  int64_t cases;
  std::vector<std::string> devs;  // cpu devices for the sharded mode (3 or more), else empty
  int failures = 0;
  std::map<std::string, int> ran, skipped;

  void fail(const std::string& mode, int64_t c, const Program& p, const std::vector<std::vector<double>>& data, int node,
            const std::string& why, const std::string& device = "cpu:0") {
    ++failures;
    ADD_FAILURE() << "fuzz: seed " << seed << " case " << c << " (" << mode << "): " << why
                  << "\nrerun it alone with KILN_FUZZ_SEED=" << seed << " KILN_FUZZ_ONLY=" << c
                  << "; a reproducer (the steps node " << node << " depends on):\n"
                  << reproducer(p, data, node, device);
  }

  // One call of `f`, with kiln::Error turned into a failure (a valid program never throws).
  template <typename F>
  bool guarded(const std::string& mode, int64_t c, const Program& p, const std::vector<std::vector<double>>& data, F&& f) {
    try {
      f();
      return true;
    } catch (const Error& e) {
      fail(mode, c, p, data, static_cast<int>(p.nodes.size()) - 1, std::string("kiln::Error: ") + e.what());
      return false;
    }
  }

  // Whether the last host_eval's values can be compared: a where whose comparison is within the
  // dtype's rounding may pick the other side in kiln (both right).
  bool comparable(const Program& p, const std::string& mode) {
    if (p.dtype == dtypes::int32 || g_where_gap > (p.dtype == dtypes::float32 ? 1e-4 : 5e-2)) return true;
    ++skipped[mode + " (a comparison within rounding)"];
    return false;
  }

  void eager(int64_t c, const Program& p, Gen& g) {
    std::vector<Arr> want = host_eval(p, p.data);
    if (!comparable(p, "eager")) return;
    ++ran["eager"];
    guarded("eager", c, p, p.data, [&] {
      std::vector<Tensor> got = kiln_eval(p, inputs_of(p, p.data, "cpu:0"));
      if (g.coin()) {
        Tensor::realize_all(got);
      } else {  // one by one, in a random order (each realize redirects the graphs built on it)
        std::vector<size_t> order(got.size());
        std::iota(order.begin(), order.end(), size_t{0});
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(g.pick(static_cast<int>(i)))]);
        for (size_t i : order) got[i].realize();
      }
      std::string why;
      if (int bad = first_mismatch(p, want, read_all(got), why); bad >= 0) fail("eager", c, p, p.data, bad, why);
    });
  }

  void jit(int64_t c, const Program& p, Gen& g) {
    ++ran["jit"];
    Jit f([&p](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
      std::vector<Tensor> all = kiln_eval(p, in);
      return std::vector<Tensor>{all.back(), all[all.size() / 2]};
    });
    std::vector<std::vector<std::vector<double>>> datas;
    std::vector<std::vector<Tensor>> kept;
    guarded("jit", c, p, p.data, [&] {
      for (int call = 0; call < 3; ++call) {
        std::vector<std::vector<double>> data = p.data;
        if (call > 0) {
          size_t k = 0;
          for (const Node& n : p.nodes)
            if (n.k == K::Input) data[k++] = g.values(n.shape, p.dtype, false);
        }
        std::vector<Tensor> out;
        try {
          out = f(inputs_of(p, data, "cpu:0"));
        } catch (const Error& e) {
          // a function whose outputs are its inputs or views of them runs nothing and cannot be
          // captured (jit.hpp, a documented error)
          if (std::string(e.what()).find("the function ran no kernel and no copy") == std::string::npos) throw;
          ++skipped["jit (the outputs are views of the inputs)"];
          return;
        }
        std::vector<Arr> want = host_eval(p, data);
        if (!comparable(p, "jit")) return;
        std::vector<Arr> w{want.back(), want[want.size() / 2]};
        std::vector<std::vector<double>> got = read_all(out);
        for (size_t o = 0; o < 2; ++o) {
          std::string why;
          int node = o == 0 ? static_cast<int>(p.nodes.size()) - 1 : static_cast<int>(p.nodes.size() / 2);
          if (first_mismatch(p, {w[o]}, {got[o]}, why) >= 0) {
            fail("jit call " + std::to_string(call + 1), c, p, data, node, why);
            return;
          }
        }
        std::vector<Tensor> clones;
        for (const Tensor& t : out) clones.push_back(t.clone());
        kept.push_back(clones);
        datas.push_back(data);
      }
      // each call's clones still hold that call's values
      for (size_t call = 0; call < kept.size(); ++call) {
        std::vector<Arr> want = host_eval(p, datas[call]);
        std::vector<Arr> w{want.back(), want[want.size() / 2]};
        std::vector<std::vector<double>> got = read_all(kept[call]);
        std::string why;
        if (first_mismatch(p, w, got, why) >= 0) {
          fail("jit: clone of call " + std::to_string(call + 1) + "'s output, read after call 3", c, p, datas[call],
               static_cast<int>(p.nodes.size()) - 1, why);
          return;
        }
      }
    });
  }

  void sharded(int64_t c, const Program& p) {
    if (devs.empty()) {
      ++skipped["sharded (needs 3 cpu devices)"];
      return;
    }
    std::vector<Arr> want = host_eval(p, p.data);
    if (!comparable(p, "sharded")) return;
    ++ran["sharded"];
    guarded("sharded", c, p, p.data, [&] {
      std::vector<Tensor> got;
      try {
        got = kiln_eval(p, inputs_of(p, p.data, "cpu:0", devs));
      } catch (const Error& e) {
        if (!documented_sharding_error(e)) throw;
        ++skipped["sharded (a documented limit of sharding)"];
        return;
      }
      Tensor::realize_all(got);
      std::string why;
      if (int bad = first_mismatch(p, want, read_all(got), why); bad >= 0) fail("sharded", c, p, p.data, bad, why);
    });
  }

  // d(sum(out * w))/d(input k): host central differences in float64, skipping elements where a
  // kink is within reach (the estimates at h and h/4 disagree).
  void gradient(int64_t c, const Program& p, bool on_shards) {
    if (on_shards && devs.empty()) return;
    const int out = static_cast<int>(p.nodes.size()) - 1;
    const Shape& so = p.nodes[static_cast<size_t>(out)].shape;
    std::vector<double> w(static_cast<size_t>(count(so)));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5 + 0.25 * std::sin(static_cast<double>(i) * 1.7);
    host_eval(p, p.data);
    if (g_min_gap < 1e-4) {
      ++skipped[std::string(on_shards ? "gradient, sharded" : "gradient") + " (a switch within rounding of its point)"];
      return;
    }
    ++ran[on_shards ? "gradient, sharded" : "gradient"];
    auto loss = [&](const std::vector<std::vector<double>>& data) {
      Arr r = host_eval(p, data)[static_cast<size_t>(out)];
      double s = 0;
      for (size_t i = 0; i < r.v.size(); ++i) s += r.v[i] * w[i];
      return s;
    };
    const std::string mode = on_shards ? "gradient, sharded" : "gradient";
    guarded(mode, c, p, p.data, [&] {
      std::vector<Tensor> in = inputs_of(p, p.data, "cpu:0", on_shards ? devs : std::vector<std::string>{});
      std::vector<Tensor> all;
      try {
        all = kiln_eval(p, in);
      } catch (const Error& e) {  // (only the forward program: the gradient itself must never throw)
        if (!on_shards || !documented_sharding_error(e)) throw;
        ++skipped["gradient, sharded (a documented limit of sharding)"];
        return;
      }
      Tensor wt = Tensor::from_vector<double>(w, so, "cpu:0").cast(dtypes::float32);
      if (on_shards) wt = wt.shard(devs);
      Tensor l = (all.back() * wt).sum();
      std::vector<Tensor> grads = l.gradient(in);
      size_t k = 0;
      for (size_t i = 0; i < p.nodes.size(); ++i) {
        if (p.nodes[i].k != K::Input) continue;
        std::vector<double> got = grads[k].cast(dtypes::float64).to_vector<double>();
        for (size_t e = 0; e < got.size(); ++e) {
          auto fd = [&](double h) {
            auto up = p.data, down = p.data;
            up[k][e] += h, down[k][e] -= h;
            return (loss(up) - loss(down)) / (2 * h);
          };
          double d1 = fd(1e-3), d2 = fd(2.5e-4);
          if (std::fabs(d1 - d2) > 1e-4 * (1 + std::fabs(d2))) continue;  // a kink within reach
          if (!(std::fabs(got[e] - d2) <= 2e-3 * (1 + std::fabs(d2)))) {
            std::ostringstream o;
            o.precision(9);
            o << "d loss / d input node " << i << " element " << e << ": got " << got[e] << ", finite differences " << d2
              << " (loss = (t" << out << " * w).sum(), w[i] = 0.5 + 0.25 sin(1.7 i))";
            fail(mode, c, p, p.data, out, o.str());
            return;
          }
        }
        ++k;
      }
    });
  }

  // A state assigned in place: s.assign(e1(s, x)) with a reader realized first or the state first,
  // a second chained assign, views read after; then the same inside a Jit over four calls.
  void assigns(int64_t c, Gen& g) {
    ++ran["assign"];
    Shape s{g.dim(), g.dim()};
    std::vector<double> s0 = g.values(s, dtypes::float32, false), x0 = g.values(s, dtypes::float32, false);
    const double k1 = std::array<double, 4>{0.5, 2, -1.5, 0.25}[static_cast<size_t>(g.pick(4))];
    const int form = g.pick(3);
    auto e1 = [&](const Tensor& st, const Tensor& x) {
      return form == 0 ? st + x : form == 1 ? st * k1 + x : st.maximum(x) - 1.0;
    };
    auto e1_host = [&](double st, double x) { return form == 0 ? st + x : form == 1 ? st * k1 + x : std::max(st, x) - 1.0; };
    auto e1_text = [&](const std::string& st, const std::string& x) {
      std::ostringstream o;
      if (form == 0) o << st << " + " << x;
      else if (form == 1) o << st << " * " << k1 << " + " << x;
      else o << st << ".maximum(" << x << ") - 1.0";
      return o.str();
    };
    std::string steps;
    auto check = [&](const std::string& what, const std::vector<float>& got, const std::vector<double>& want) {
      for (size_t i = 0; i < want.size(); ++i)
        if (std::fabs(got[i] - want[i]) > 1e-5 * (1 + std::fabs(want[i]))) {
          ++failures;
          ADD_FAILURE() << "fuzz: seed " << seed << " case " << c << " (assign): " << what << " element " << i << ": got " << got[i]
                        << ", expected " << want[i] << "\nthe program:\n" << steps;
          return false;
        }
      return true;
    };
    try {
      Tensor st = Tensor::from_vector<double>(s0, s, "cpu:0").cast(dtypes::float32).contiguous().realize();
      Tensor x = Tensor::from_vector<double>(x0, s, "cpu:0").cast(dtypes::float32).realize();
      std::vector<double> want(s0.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(e1_host(s0[i], x0[i]));
      st.assign(e1(st, x));
      auto literal = [](const std::vector<double>& v) {
        std::ostringstream o;
        for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
        return o.str();
      };
      steps = "  Tensor st = Tensor::from_vector<double>({" + literal(s0) + "}, " + shape_text(s) +
              ", \"cpu:0\").cast(dtypes::float32).contiguous().realize();\n  Tensor x = Tensor::from_vector<double>({" + literal(x0) +
              "}, " + shape_text(s) + ", \"cpu:0\").cast(dtypes::float32);\n  st.assign(" + e1_text("st", "x") + ");\n";
      if (g.coin()) {
        steps += "  (st * 1.0).to_vector<float>();  // a reader first\n";
        if (!check("a reader realized before the state", (st * 1.0).to_vector<float>(), want)) return;
      }
      steps += "  st.to_vector<float>();\n";
      if (!check("the state", st.to_vector<float>(), want)) return;
      if (!check("the state read again", st.to_vector<float>(), want)) return;
      // chained: another assign, read through a view first or not
      st.assign(st * 2.0);
      for (double& v : want) v *= 2;
      steps += "  st.assign(st * 2.0);\n";
      if (g.coin()) {
        steps += "  st.reshape({-1}).to_vector<float>();  // a view first\n";
        if (!check("a view of the state after a chained assign", st.reshape({-1}).to_vector<float>(), want)) return;
      }
      if (!check("the state after a chained assign", st.to_vector<float>(), want)) return;
      // inside a Jit: the state is the function's input, assigned in place; the output reads it
      Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
        Tensor t = in[0];
        t.assign(e1(t, in[1]));
        return std::vector<Tensor>{t * 1.0};
      });
      std::vector<Tensor> clones;
      std::vector<std::vector<double>> wants;
      steps += "  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { Tensor t = in[0]; t.assign(" +
               e1_text("t", "in[1]") + "); return std::vector<Tensor>{t * 1.0}; });\n  // called 4 times: f({st, new x}), the outputs kept with clone()\n";
      for (int call = 0; call < 4; ++call) {
        std::vector<double> xv = g.values(s, dtypes::float32, false);
        Tensor xc = Tensor::from_vector<double>(xv, s, "cpu:0").cast(dtypes::float32).realize();
        for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(e1_host(want[i], xv[i]));
        std::vector<Tensor> out = f({st, xc});
        if (!check("jit call " + std::to_string(call + 1) + "'s output", out[0].to_vector<float>(), want)) return;
        if (!check("the state after jit call " + std::to_string(call + 1), st.to_vector<float>(), want)) return;
        clones.push_back(out[0].clone());
        wants.push_back(want);
      }
      for (size_t call = 0; call < clones.size(); ++call)
        if (!check("a clone of jit call " + std::to_string(call + 1) + "'s output, read after the last call", clones[call].to_vector<float>(),
                   wants[call]))
          return;
    } catch (const Error& e) {
      ++failures;
      ADD_FAILURE() << "fuzz: seed " << seed << " case " << c << " (assign): kiln::Error: " << e.what() << "\nthe program:\n" << steps;
    }
  }
};

TEST(Fuzz, RandomProgramsAgreeWithAPlainReferenceEveryWay) {
  Fuzz z{static_cast<uint64_t>(env_int("KILN_FUZZ_SEED", 43)), env_int("KILN_FUZZ_CASES", 2000), {}, 0, {}, {}};
  std::vector<std::string> cpus = cpu_devices();
  if (cpus.size() >= 3) z.devs.assign(cpus.begin(), cpus.begin() + 3);
  const int64_t only = env_int("KILN_FUZZ_ONLY", -1);  // one case alone (what a failure says to rerun)
  for (int64_t c = only >= 0 ? only : 0; c < (only >= 0 ? only + 1 : z.cases) && z.failures < 5; ++c) {
    Gen g(z.seed * 1000003 + static_cast<uint64_t>(c));
    if (c % 5 == 4) {
      z.assigns(c, g);
      continue;
    }
    const bool smooth = c % 5 == 3;  // a gradient case: float32 inputs without ties
    Program p = g.program(smooth);
    if (smooth) {
      z.gradient(c, p, false);
      z.gradient(c, p, true);
      continue;
    }
    z.eager(c, p, g);
    if (c % 3 == 0) z.jit(c, p, g);
    if (p.dtype != dtypes::int32 || c % 2 == 0) z.sharded(c, p);
  }
  std::string summary;
  for (const auto& [mode, n] : z.ran) summary += " " + mode + ": " + std::to_string(n);
  for (const auto& [why, n] : z.skipped) summary += "; skipped " + why + ": " + std::to_string(n);
  std::printf("fuzz: seed %llu, %lld cases;%s\n", static_cast<unsigned long long>(z.seed), static_cast<long long>(z.cases), summary.c_str());
}

}  // namespace
