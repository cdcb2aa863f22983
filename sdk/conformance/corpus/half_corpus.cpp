// sdk/conformance/corpus/half_corpus.cpp - float16 and bfloat16 variants of the float32 cases,
// each checked against float64 within the error bound kiln's 16-bit semantics give that op.
//
// The semantics (codegen/decompose.cpp, tensor/reduce.cpp, tensor/nn.cpp): every elementwise op
// computes in float32 and rounds its result to the 16-bit type (so fused == unfused); sums
// accumulate in float32 and round once; matmul takes each product in float32 (exact: 11 + 11 or
// 8 + 8 significant bits fit in 24) and accumulates there, rounding once; softmax and layernorm
// compute in float32 and round once (tensor/norm.cpp). Other composite ops (exp = exp2(x log2 e),
// sigmoid, tanh, mean) round after each of their ops, so their bounds count those roundings and
// how later ops amplify them.
//
// A variant's inputs are the float32 case's rounded to the type; its reference is the float32
// case's loops run in float64 on those rounded inputs (Float64Reference), unrounded; and it is
// `bounded`: the device's result r must satisfy |r - ref| <= atol + rtol |ref| on every device.
// With u the unit roundoff (2^-11 float16, 2^-8 bfloat16), each bound below is "k roundings":
// rtol = k u, plus, for every case, 2^-20 relative for the float32 functions' own error and the
// float32 roundings inside an op (a few float32 ulps, far under u), and for float16 an absolute
// 2^-24 (its subnormal spacing: a rounding near zero is absolute, not relative).
#include <algorithm>
#include <cmath>

#include "op_corpus.hpp"

namespace kiln::testing {

namespace {

using A = std::vector<HostArray>;
using T = std::vector<Tensor>;

struct Tol {
  double rtol, atol = 0;
};
// The bound of one op on the given (rounded) inputs, for unit roundoff u.
using Bound = std::function<Tol(const A& in, double u)>;

double max_abs(const HostArray& a) {
  double m = 0;
  for (double x : a.v) m = std::max(m, std::fabs(x));
  return m;
}
double sum_abs(const HostArray& a) {
  double s = 0;
  for (double x : a.v) s += std::fabs(x);
  return s;
}
// float32 accumulation of n terms: |error| <= n 2^-24 sum|terms| (sum|x| of the whole input
// bounds every output's own)
double acc_f32(int64_t n, double sum_abs_terms) { return static_cast<double>(n) * std::ldexp(sum_abs_terms, -24); }

const OpCase& case_named(const std::vector<OpCase>& c, const std::string& name) {
  for (const OpCase& x : c)
    if (x.name == name) return x;
  throw std::runtime_error("half corpus: no float32 case " + name);
}

// The `d` variant of the float32 case `f` (its float32 inputs rounded to d, or `inputs` instead).
OpCase half_of(const OpCase& f, DType d, const Bound& bound, const A& inputs = {}) {
  OpCase h = f;
  h.name = f.name + (d == dtypes::float16 ? "_f16" : "_bf16");
  if (!inputs.empty()) h.inputs = inputs;
  for (HostArray& a : h.inputs)
    if (a.dtype == dtypes::float32) a = cast(a, d);
  h.reference = [ref = f.reference, d](const A& in) {
    A wide = in;
    for (HostArray& a : wide)
      if (a.dtype == d) a.dtype = dtypes::float64;
    Float64Reference exact;
    HostArray r = ref(wide);
    if (r.dtype.is_float()) r.dtype = d;  // the values stay float64: the bound is to the exact result
    return r;
  };
  double u = d == dtypes::float16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  Tol t = bound(h.inputs, u);
  h.rtol = t.rtol + std::ldexp(1.0, -20);
  h.atol = t.atol + (d == dtypes::float16 ? std::ldexp(1.0, -24) : 1e-30);
  h.bounded = true;
  return h;
}

Bound roundings(double k, double atol = 0) {
  return [k, atol](const A&, double u) { return Tol{k * u, atol}; };
}

// Round trips through the type: float32 -> d -> float32 is to_dtype exactly (round to nearest
// even, overflow to infinity, subnormals, NaN and signed zeros kept), and d -> float32 -> d is the
// identity.
void add_round_trips(std::vector<OpCase>& c, DType d) {
  std::string tag = d == dtypes::float16 ? "f16" : "bf16";
  const double u = d == dtypes::float16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double top = d == dtypes::float16 ? 65504 : 3.3895313892515355e38, tiny = d == dtypes::float16 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -133);
  HostArray x{{0}, {0.0, -0.0, INFINITY, -INFINITY, NAN, 1 + u, 1 + 3 * u, -(1 + u + u / 64), 1 - u / 2, top, -top * (1 + u / 2),
                    top * (1 + u), 0.5 * tiny, 1.5 * tiny, -2.5 * tiny, 3 * tiny + tiny / 8, 1e-3, -333.3, 0.1},
              dtypes::float32};
  for (double& v : x.v) v = static_cast<float>(v);
  x.shape[0] = static_cast<int64_t>(x.v.size());
  c.push_back({"cast_f32_" + tag + "_f32", {x}, [d](const T& t) { return t[0].cast(d).cast(dtypes::float32); },
               [d](const A& a) { return cast(cast(a[0], d), dtypes::float32); }, 0, 0, true});
  HostArray h = cast(x, d);
  c.push_back({"cast_" + tag + "_f32_" + tag, {h}, [d](const T& t) { return t[0].cast(dtypes::float32).cast(d); },
               [](const A& a) { return a[0]; }, 0, 0, true});
}

}  // namespace

void add_half_cases(std::vector<OpCase>& c) {
  // (x - mean) / sqrt(var + eps) over the last axis, in float32 as the other cases; its 16-bit
  // variants below are the point
  c.push_back({"layernorm", {make_array({4, 16}, dtypes::float32, 91, -2, 2)}, [](const T& t) { return t[0].layernorm({-1}, 1e-5); },
               [](const A& a) {
                 HostArray r{a[0].shape, {}, dtypes::float32};
                 int64_t n = a[0].shape[1];
                 for (int64_t i = 0; i < a[0].shape[0]; ++i) {
                   double m = 0, v = 0;
                   for (int64_t j = 0; j < n; ++j) m += a[0].v[i * n + j];
                   m /= static_cast<double>(n);
                   for (int64_t j = 0; j < n; ++j) v += (a[0].v[i * n + j] - m) * (a[0].v[i * n + j] - m);
                   v /= static_cast<double>(n);
                   for (int64_t j = 0; j < n; ++j) r.v.push_back(to_dtype((a[0].v[i * n + j] - m) / std::sqrt(v + 1e-5), dtypes::float32));
                 }
                 return r;
               }, 1e-5, 1e-5});

  std::vector<OpCase> out;
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    auto add = [&](const std::string& name, const Bound& b, const A& inputs = {}) { out.push_back(half_of(case_named(c, name), d, b, inputs)); };
    // one op, one rounding of the float32 result
    for (const char* name : {"sqrt", "reciprocal", "add", "mul", "div"}) add(name, roundings(1));
    // exact: the result is one of the inputs
    for (const char* name : {"maximum", "where", "max_1"}) add(name, roundings(0));
    // exp(x) = exp2(t), t = x log2 e rounded: t's error u|x| log2 e scales exp by 2^(u|x| log2 e)
    // = 1 + u|x|; then exp2's rounding
    add("exp", [](const A& in, double u) { return Tol{(1 + max_abs(in[0])) * u}; });
    // log(x) = log2(x) ln 2: two roundings, relative to the result; near x = 1, where log -> 0,
    // the float32 log2's absolute error (an ulp of 1)
    add("log", roundings(2, std::ldexp(1.0, -22)));
    // one rounding; |x| <= 10, so the float32 sin's absolute error is an ulp of 8 at most
    add("sin", roundings(1, std::ldexp(1.0, -20)));
    // 1 / (1 + e), e = exp(-x) with (1 + |x|) u (exp above); 1 + e keeps e/(1+e) of it and
    // rounds; then the reciprocal: (3 + |x|) u
    add("sigmoid", [](const A& in, double u) { return Tol{(3 + max_abs(in[0])) * u}; });
    // |x| < 0.3: x + x^3 (series) where the series term, under 3% of the result, carries its
    // roundings (< 10 u of it) and the add rounds: < 1.5 u. Above: t = exp(-2|x|) (<= (1 + 2|x|) u,
    // t <= 0.55), (1 - t) / (1 + t): u + t/(1-t) (1+2|x|) u, u + t/(1+t) (1+2|x|) u and the
    // division's u; at most 5.5 u (at |x| = 0.3), so 6 u
    add("tanh", roundings(6));
    // sums: float32 accumulation, one rounding
    for (const char* name : {"sum_1", "sum_all"}) {
      int64_t n = std::string(name) == "sum_1" ? 4 : 60;
      add(name, [n](const A& in, double u) { return Tol{u, acc_f32(n, sum_abs(in[0]))}; });
    }
    // mean = (sum rounded) / n rounded (n = 15 is exact in both types): 2 roundings, and the
    // accumulation's error divided by n
    add("mean", [](const A& in, double u) { return Tol{2 * u, acc_f32(15, sum_abs(in[0])) / 15}; });
    // exact products accumulated in float32 (k = 7 terms, each |a b| <= max|a| max|b|), one rounding
    add("matmul", [](const A& in, double u) { return Tol{u, acc_f32(7, 7 * max_abs(in[0]) * max_abs(in[1]))}; });
    // softmax and layernorm of a 16-bit tensor compute in float32 and round once (tensor/
    // reduce.cpp, norm.cpp): one rounding u, plus their float32 error in units of v = 2^-24.
    // softmax: x - max rounds (v |x - max|), exp adds (1 + |x - max|) v: (2 D + 1) v for D the
    // largest |x - max|; the sum rounds, its reciprocal and the product round: (4 D + 5) v.
    add("softmax", [](const A& in, double u) { return Tol{u + (4 * 2 * max_abs(in[0]) + 5) * std::ldexp(1.0, -24)}; });
    // layernorm: y = x - mean carries 2 v |mean| absolute; var = mean(y^2) 4 v |mean| sigma + 5 v
    // var; + eps, sqrt and reciprocal round and halve var's relative error: 1/sigma is within
    // 2 v |mean|/sigma + 5 v; the product rounds. So 2 v r absolute and (7 + 2 r) v relative, r
    // the largest |mean|/sigma of a row, then the one rounding to the type.
    add("layernorm", [](const A& in, double u) {
      const HostArray& x = in[0];
      int64_t n = x.shape[1];
      double worst = 0;
      for (int64_t i = 0; i < x.shape[0]; ++i) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < n; ++j) m += x.v[i * n + j];
        m /= static_cast<double>(n);
        for (int64_t j = 0; j < n; ++j) v += (x.v[i * n + j] - m) * (x.v[i * n + j] - m);
        worst = std::max(worst, std::fabs(m) / std::sqrt(v / static_cast<double>(n)));
      }
      double v = std::ldexp(1.0, -24);
      return Tol{u + (7 + 2 * worst) * v, 2 * worst * v};
    });
    // more one-rounding and exact ops: x + 1.5, x^0.5 (sqrt), the minimum, max pooling
    for (const char* name : {"add_scalar", "pow_half"}) add(name, roundings(1));
    for (const char* name : {"minimum", "max_pool2d", "max_pool2d_pad_stride", "max_pool2d_gap"}) add(name, roundings(0));
    // pow computes in float32 (exp2(y log2 x)) and rounds once: one rounding, plus the float32
    // pow's own error, which the float32 case bounds by 1e-4 relative
    for (const char* name : {"pow", "pow_scalar"}) add(name, [](const A&, double u) { return Tol{u + 1e-4}; });
    // average pooling (no padding, or padding counted: a mean of k*k terms): as mean above
    add("avg_pool2d", [](const A& in, double u) { return Tol{2 * u, acc_f32(4, 4 * max_abs(in[0])) / 4}; });
    add("avg_pool2d_pad_stride", [](const A& in, double u) { return Tol{2 * u, acc_f32(9, 9 * max_abs(in[0])) / 9}; });
    // log_softmax computes in float32 and rounds once. In units v = 2^-24: x - max rounds (D v,
    // D the largest |x - max| <= 2 max|x|); the sum of exps is within (2 D + 1) v relative (softmax
    // above), so its log within (2 D + 1) v + |log s| v absolute (log s <= log n + 0, n = 9 < e^3);
    // the subtraction rounds (|r| <= D + 3): (4 D + 7) v absolute at most, so (8 max|x| + 8) v
    add("log_softmax", [](const A& in, double u) { return Tol{u, (8 * max_abs(in[0]) + 8) * std::ldexp(1.0, -24)}; });
    // convolutions: exact products of K = (in channels / groups) kh kw terms accumulated in float32
    // and rounded once (as matmul), then the bias added and rounded: the first rounding is at most
    // u K max|x| max|w| absolute (the sum may cancel against the bias), the second u relative
    for (const char* name : {"conv2d", "conv2d_pad", "conv2d_stride", "conv2d_dilation", "conv2d_groups", "conv2d_patches",
                             "conv2d_pointwise_stride"}) {
      add(name, [](const A& in, double u) {
        const std::vector<int64_t>& w = in[1].shape;
        const int64_t k = w[1] * w[2] * w[3];
        const double most = static_cast<double>(k) * max_abs(in[0]) * max_abs(in[1]);
        return Tol{u, u * most + acc_f32(k, most)};
      });
    }
    add_round_trips(out, d);
  }
  c.insert(c.end(), out.begin(), out.end());
}

}  // namespace kiln::testing
