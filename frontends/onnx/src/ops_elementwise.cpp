// ops_elementwise.cpp - ONNX operators: arithmetic, comparisons, logic, activations, math, bits, casts.
//
// Every output keeps the dtype ONNX gives it: the input's for arithmetic and math (Pow: the base's),
// bool for comparisons and logic. kiln's float functions compute integers in float32, so the ops
// whose spec allows only floats check for them instead of returning a float for an integer input.
#include "ops.hpp"
#include "tensor_proto.hpp"

namespace kiln::onnx::detail {
namespace {

// A scalar of `like`'s dtype and device, broadcasting against it.
Tensor scalar(const Tensor& like, double v) { return Tensor::full({}, v, like.dtype(), like.device()); }

// Input i, which the operator's spec constrains to floating point.
const Tensor& float_in(const Node& n, size_t i = 0) {
  const Tensor& t = n.in(i);
  if (!t.dtype().is_float())
    n.fail("input " + std::to_string(i) + " is " + t.dtype().name() + "; this operator takes float16, bfloat16, float or double",
           ErrorCode::invalid_argument);
  return t;
}

// f(x), computing float16 and bfloat16 in float32 and rounding once at the end, as numpy (the
// reference) and onnxruntime do: kiln's compositions (exp as exp2 of a product, ...) would round at
// every step, several half-precision ulps off in all.
template <typename F>
Tensor in_float32(const Tensor& x, F f) {
  if (x.dtype() != dtypes::float16 && x.dtype() != dtypes::bfloat16) return f(x);
  return f(x.cast(dtypes::float32)).cast(x.dtype());
}

// Input i, which the spec constrains to bool (And, Or, Xor, Not).
const Tensor& bool_in(const Node& n, size_t i = 0) {
  const Tensor& t = n.in(i);
  if (!t.dtype().is_bool())
    n.fail("input " + std::to_string(i) + " is " + t.dtype().name() + "; this operator takes bool", ErrorCode::invalid_argument);
  return t;
}

// The two operands of a binary operator. From opset 7 they broadcast as numpy does. Before, B
// broadcasts onto A only with broadcast=1, B being one element or a contiguous run of A's
// dimensions starting at `axis` (a suffix when axis is absent), so the result has A's shape.
std::pair<Tensor, Tensor> operands(const Node& n) {
  Tensor a = n.in(0), b = n.in(1);
  if (n.opset() >= 7) return {a, b};
  if (n.attr_int("broadcast", 0) == 0) {
    if (a.shape() != b.shape())
      n.fail("operands of different shapes need broadcast=1 before opset 7", ErrorCode::invalid_argument);
    return {a, b};
  }
  const int ra = a.ndim(), rb = b.ndim();
  if (rb > ra) n.fail("with legacy broadcast, B's rank may not exceed A's", ErrorCode::invalid_argument);
  if (b.numel() == 1) return {a, b.reshape({})};
  const int64_t axis = n.has_attr("axis") ? n.axis(n.attr_int("axis", 0), ra) : ra - rb;
  if (axis + rb > ra) n.fail("legacy broadcast: B's shape runs past A's from axis " + std::to_string(axis), ErrorCode::invalid_argument);
  Shape s = b.shape();
  for (int i = 0; i < rb; ++i)
    if (s[i] != a.shape()[axis + i])
      n.fail("legacy broadcast: B's dimension " + std::to_string(i) + " (" + std::to_string(s[i]) + ") differs from A's dimension " +
                 std::to_string(axis + i) + " (" + std::to_string(a.shape()[axis + i]) + "); 1-dimension expansion is not defined before opset 7",
             ErrorCode::invalid_argument);
  s.resize(ra - axis, 1);  // trailing 1s align B's last dimension with A's axis + rb - 1
  return {a, b.reshape(s)};
}

// ---- arithmetic ----
std::vector<Tensor> add(const Node& n) { auto [a, b] = operands(n); return {a + b}; }
std::vector<Tensor> sub(const Node& n) { auto [a, b] = operands(n); return {a - b}; }
std::vector<Tensor> mul(const Node& n) { auto [a, b] = operands(n); return {a * b}; }
// Integers divide truncating toward zero (C), floats divide exactly.
std::vector<Tensor> div(const Node& n) {
  auto [a, b] = operands(n);
  return {a.dtype().is_int() ? a.idiv(b) : a / b};
}
// The base's dtype whatever the exponent's. A float base takes the exponent in its own dtype
// (half precision computing in float32). Integer ** integer is exact (kiln squares and
// multiplies); an integer base with a float exponent is the real power truncated, computed in
// double. Float pow (exp2(e log2 b)) is a few ulps off an exact integer power (5 ** 3.0 came out
// 124.99999), so a result within 1e-12 of an integer is that integer before truncating.
std::vector<Tensor> pow(const Node& n) {
  auto [a, b] = operands(n);
  if (a.dtype().is_float()) return {in_float32(a, [&](const Tensor& x) { return x.pow(b.cast(x.dtype())); })};
  if (!b.dtype().is_float()) return {a.pow(b).cast(a.dtype())};
  Tensor p = a.cast(dtypes::float64).pow(b.cast(dtypes::float64)), near = p.round();
  Tensor snapped = Tensor::where((p - near).abs().le(near.abs().maximum(scalar(near, 1)) * 1e-12), near, p);
  return {snapped.trunc().cast(a.dtype())};
}
// fmod=1: C's fmod (the dividend's sign); fmod=0: Python's % (the divisor's sign), integers only.
std::vector<Tensor> mod(const Node& n) {
  const Tensor &a = n.in(0), &b = n.in(1);
  const int64_t fmod = n.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) n.fail("fmod must be 0 or 1, got " + std::to_string(fmod), ErrorCode::invalid_argument);
  if (fmod == 1) return {a.fmod(b)};
  if (a.dtype().is_float()) n.fail("floating-point inputs need fmod=1 (fmod=0 is Python's %, defined for integers)", ErrorCode::invalid_argument);
  return {a.remainder(b)};
}
std::vector<Tensor> neg(const Node& n) { return {-n.in(0)}; }
std::vector<Tensor> abs(const Node& n) { return {n.in(0).abs()}; }
std::vector<Tensor> sign(const Node& n) { return {n.in(0).sign()}; }

// Max, Min, Sum: one or more inputs folded pairwise, broadcasting together.
template <Tensor (*Fold)(const Tensor&, const Tensor&)>
std::vector<Tensor> variadic(const Node& n) {
  Tensor r = n.in(0);
  for (size_t i = 1; i < n.num_inputs(); ++i) r = Fold(r, n.in(i));
  return {r};
}
Tensor max2(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor min2(const Tensor& a, const Tensor& b) { return a.minimum(b); }
Tensor sum2(const Tensor& a, const Tensor& b) { return a + b; }
std::vector<Tensor> mean(const Node& n) {
  float_in(n);  // (an integer mean would divide into float32)
  Tensor s = variadic<sum2>(n)[0];
  return {s / scalar(s, static_cast<double>(n.num_inputs()))};
}

// Clip: bounds are attributes (default: float's lowest and max) before opset 11, optional inputs
// after. min > max makes everything max (min applies first).
std::vector<Tensor> clip(const Node& n) {
  const Tensor& x = n.in(0);
  std::optional<Tensor> lo, hi;
  if (n.opset() < 11) {
    if (n.has_attr("min")) lo = scalar(x, n.attr_float("min", 0));
    if (n.has_attr("max")) hi = scalar(x, n.attr_float("max", 0));
  } else {
    lo = n.opt(1), hi = n.opt(2);
  }
  for (const auto& bound : {lo, hi})
    if (bound && bound->numel() != 1) n.fail("min and max must be scalars (one element)", ErrorCode::invalid_argument);
  if (lo) lo = lo->reshape({});
  if (hi) hi = hi->reshape({});
  if (!lo && !hi) return {x};
  return {x.clip(lo, hi)};
}

// ---- math (floats only) ----
template <Tensor (Tensor::*F)() const>
std::vector<Tensor> unary(const Node& n) {
  return {in_float32(float_in(n), [](const Tensor& x) { return (x.*F)(); })};
}

// ---- activations ----
std::vector<Tensor> relu(const Node& n) { return {n.in(0).relu()}; }
std::vector<Tensor> elu(const Node& n) {
  const double alpha = n.attr_float("alpha", 1.0);
  return {in_float32(float_in(n), [&](const Tensor& x) { return x.elu(alpha); })};
}
std::vector<Tensor> celu(const Node& n) {
  const double alpha = n.attr_float("alpha", 1.0);
  return {in_float32(float_in(n), [&](const Tensor& x) { return x.celu(alpha); })};
}
std::vector<Tensor> selu(const Node& n) {
  // the defaults are the float32 values the spec lists
  const double alpha = n.attr_float("alpha", 1.67326319217681884765625), gamma = n.attr_float("gamma", 1.05070102214813232421875);
  return {in_float32(float_in(n), [&](const Tensor& x) { return x.selu(alpha, gamma); })};
}
std::vector<Tensor> leaky_relu(const Node& n) {
  const double alpha = n.attr_float("alpha", 0.01);
  return {in_float32(float_in(n), [&](const Tensor& x) { return x.leaky_relu(alpha); })};
}
std::vector<Tensor> thresholded_relu(const Node& n) {
  const Tensor& x = float_in(n);
  return {Tensor::where(x.gt(scalar(x, n.attr_float("alpha", 1.0))), x, scalar(x, 0))};
}
std::vector<Tensor> hard_sigmoid(const Node& n) {
  const double alpha = n.attr_float("alpha", 0.2), beta = n.attr_float("beta", 0.5);
  return {in_float32(float_in(n), [&](const Tensor& x) { return x.hardsigmoid(alpha, beta); })};
}
std::vector<Tensor> softplus(const Node& n) {
  return {in_float32(float_in(n), [](const Tensor& x) { return x.softplus(); })};
}
std::vector<Tensor> gelu(const Node& n) {
  const std::string approximate = n.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    n.fail("approximate must be 'none' or 'tanh', got '" + approximate + "'", ErrorCode::invalid_argument);
  return {in_float32(float_in(n), [&](const Tensor& x) { return x.gelu(approximate); })};
}
// x where x >= 0, slope * x elsewhere; slope broadcasts onto x (numpy's rule from opset 7). Before,
// a slope of one value is shared and one of C values is per channel (axis 1).
std::vector<Tensor> prelu(const Node& n) {
  const Tensor& x = n.in(0);
  Tensor slope = n.in(1);
  if (n.opset() < 7 && slope.numel() != 1 && x.ndim() >= 2 && slope.ndim() == 1 && slope.shape()[0] == x.shape()[1]) {
    Shape s(x.ndim() - 1, 1);
    s[0] = slope.shape()[0];
    slope = slope.reshape(s);
  }
  return {Tensor::where(x.lt(scalar(x, 0)), x * slope, x)};
}
// x + bias below -lambd, x - bias above lambd, 0 between; integers compute in float and truncate
// back, as the spec's "same datatype" output with float attributes implies.
std::vector<Tensor> shrink(const Node& n) {
  const Tensor& x = n.in(0);
  Tensor f = x.dtype().is_float() ? x : x.cast(dtypes::float64);
  const double bias = n.attr_float("bias", 0.0), lambd = n.attr_float("lambd", 0.5);
  Tensor y = Tensor::where(f.lt(scalar(f, -lambd)), f + scalar(f, bias),
                           Tensor::where(f.gt(scalar(f, lambd)), f - scalar(f, bias), scalar(f, 0)));
  return {y.cast(x.dtype())};
}

// ---- comparisons and logic (bool results) ----
std::vector<Tensor> equal(const Node& n) { auto [a, b] = operands(n); return {a.eq(b)}; }
std::vector<Tensor> greater(const Node& n) { auto [a, b] = operands(n); return {a.gt(b)}; }
std::vector<Tensor> less(const Node& n) { auto [a, b] = operands(n); return {a.lt(b)}; }
std::vector<Tensor> greater_equal(const Node& n) { return {n.in(0).ge(n.in(1))}; }
std::vector<Tensor> less_equal(const Node& n) { return {n.in(0).le(n.in(1))}; }
std::pair<Tensor, Tensor> bool_operands(const Node& n) {
  bool_in(n, 0), bool_in(n, 1);
  return operands(n);
}
std::vector<Tensor> logical_and(const Node& n) { auto [a, b] = bool_operands(n); return {a & b}; }
std::vector<Tensor> logical_or(const Node& n) { auto [a, b] = bool_operands(n); return {a | b}; }
std::vector<Tensor> logical_xor(const Node& n) { auto [a, b] = bool_operands(n); return {a ^ b}; }
std::vector<Tensor> logical_not(const Node& n) { return {bool_in(n).logical_not()}; }
std::vector<Tensor> is_nan(const Node& n) { return {float_in(n).isnan()}; }
std::vector<Tensor> is_inf(const Node& n) {
  return {float_in(n).isinf(n.attr_int("detect_positive", 1) != 0, n.attr_int("detect_negative", 1) != 0)};
}
std::vector<Tensor> where(const Node& n) { return {Tensor::where(bool_in(n, 0), n.in(1), n.in(2))}; }

// ---- bits ----
std::vector<Tensor> bitwise_and(const Node& n) { return {n.in(0) & n.in(1)}; }
std::vector<Tensor> bitwise_or(const Node& n) { return {n.in(0) | n.in(1)}; }
std::vector<Tensor> bitwise_xor(const Node& n) { return {n.in(0) ^ n.in(1)}; }
std::vector<Tensor> bitwise_not(const Node& n) { return {n.in(0).bitwise_not()}; }
// Unsigned integers only; shifting by the type's width or more leaves no bits (0), where C's
// shift would be undefined.
std::vector<Tensor> bit_shift(const Node& n) {
  const Tensor &x = n.in(0), &s = n.in(1);
  if (!x.dtype().is_unsigned()) n.fail("BitShift is defined for unsigned integers, got " + x.dtype().name(), ErrorCode::invalid_argument);
  const std::string dir = n.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") n.fail("direction must be 'LEFT' or 'RIGHT', got '" + dir + "'", ErrorCode::invalid_argument);
  Tensor shifted = dir == "LEFT" ? x.lshift(s) : x.rshift(s);
  Tensor too_far = s.ge(scalar(s, x.dtype().itemsize() * 8.0));
  return {Tensor::where(too_far, scalar(shifted, 0), shifted)};
}

// ---- casts ----
// The kiln dtype of an ONNX element type, failing loudly for those kiln lacks (string, float8,
// int4, complex, ...).
DType cast_target(const Node& n, int32_t onnx_type) {
  auto d = dtype_of(onnx_type);
  if (!d)
    n.fail(std::string("casting to or from ") + onnx_type_name(onnx_type) + " (element type " + std::to_string(onnx_type) +
           ") is not supported: kiln has no such dtype");
  return *d;
}
// `saturate` (opset 19) only changes casts to float8 types, which kiln refuses anyway. Before
// opset 6, `to` is the type's name ("FLOAT").
std::vector<Tensor> cast(const Node& n) {
  int32_t to = -1;
  if (n.opset() < 6) {
    const std::string name = n.attr_string("to", "");
    for (int32_t t = 0; t < 64 && to < 0; ++t)
      if (name == onnx_type_name(t)) to = t;
    if (to < 0) n.fail("'to' names no ONNX element type: '" + name + "'", ErrorCode::invalid_argument);
  } else {
    if (!n.has_attr("to")) n.fail("attribute 'to' is required", ErrorCode::invalid_argument);
    to = static_cast<int32_t>(n.attr_int("to", 0));
  }
  return {n.in(0).cast(cast_target(n, to))};
}
std::vector<Tensor> cast_like(const Node& n) { return {n.in(0).cast(n.in(1).dtype())}; }
std::vector<Tensor> identity(const Node& n) { return {n.in(0)}; }

}  // namespace

void elementwise_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      // arithmetic
      {"Add", 1, {"broadcast", "axis", "consumed_inputs"}, add},
      {"Sub", 1, {"broadcast", "axis", "consumed_inputs"}, sub},
      {"Mul", 1, {"broadcast", "axis", "consumed_inputs"}, mul},
      {"Div", 1, {"broadcast", "axis", "consumed_inputs"}, div},
      {"Pow", 1, {"broadcast", "axis"}, pow},
      {"Mod", 10, {"fmod"}, mod},
      {"Neg", 1, {"consumed_inputs"}, neg},
      {"Abs", 1, {"consumed_inputs"}, abs},
      {"Sign", 9, {}, sign},
      {"Reciprocal", 1, {"consumed_inputs"}, unary<&Tensor::reciprocal>},
      {"Max", 1, {"consumed_inputs"}, variadic<max2>},
      {"Min", 1, {"consumed_inputs"}, variadic<min2>},
      {"Sum", 1, {"consumed_inputs"}, variadic<sum2>},
      {"Mean", 1, {"consumed_inputs"}, mean},
      {"Clip", 1, {"min", "max", "consumed_inputs"}, clip},
      // math
      {"Sqrt", 1, {"consumed_inputs"}, unary<&Tensor::sqrt>},
      {"Exp", 1, {"consumed_inputs"}, unary<&Tensor::exp>},
      {"Log", 1, {"consumed_inputs"}, unary<&Tensor::log>},
      {"Floor", 1, {"consumed_inputs"}, unary<&Tensor::floor>},
      {"Ceil", 1, {"consumed_inputs"}, unary<&Tensor::ceil>},
      {"Round", 11, {}, unary<&Tensor::round>},  // half to even
      {"Erf", 9, {}, unary<&Tensor::erf>},
      {"Sin", 7, {}, unary<&Tensor::sin>},
      {"Cos", 7, {}, unary<&Tensor::cos>},
      {"Tan", 7, {}, unary<&Tensor::tan>},
      {"Asin", 7, {}, unary<&Tensor::asin>},
      {"Acos", 7, {}, unary<&Tensor::acos>},
      {"Atan", 7, {}, unary<&Tensor::atan>},
      {"Sinh", 9, {}, unary<&Tensor::sinh>},
      {"Cosh", 9, {}, unary<&Tensor::cosh>},
      {"Tanh", 1, {"consumed_inputs"}, unary<&Tensor::tanh>},
      {"Asinh", 9, {}, unary<&Tensor::asinh>},
      {"Acosh", 9, {}, unary<&Tensor::acosh>},
      {"Atanh", 9, {}, unary<&Tensor::atanh>},
      {"Sigmoid", 1, {"consumed_inputs"}, unary<&Tensor::sigmoid>},
      // activations
      {"Relu", 1, {"consumed_inputs"}, relu},
      {"Elu", 1, {"alpha", "consumed_inputs"}, elu},
      {"Celu", 12, {"alpha"}, celu},
      {"Selu", 1, {"alpha", "gamma", "consumed_inputs"}, selu},
      {"LeakyRelu", 1, {"alpha", "consumed_inputs"}, leaky_relu},
      {"ThresholdedRelu", 10, {"alpha"}, thresholded_relu},
      {"HardSigmoid", 1, {"alpha", "beta", "consumed_inputs"}, hard_sigmoid},
      {"HardSwish", 14, {}, unary<&Tensor::hardswish>},  // x hardsigmoid(1/6, 1/2)
      {"Softplus", 1, {}, softplus},
      {"Softsign", 1, {}, unary<&Tensor::softsign>},
      {"Mish", 18, {}, unary<&Tensor::mish>},
      {"Gelu", 20, {"approximate"}, gelu},
      {"PRelu", 1, {"consumed_inputs"}, prelu},
      {"Shrink", 9, {"bias", "lambd"}, shrink},
      // comparisons and logic
      {"Equal", 1, {"broadcast", "axis"}, equal},
      {"Greater", 1, {"broadcast", "axis"}, greater},
      {"Less", 1, {"broadcast", "axis"}, less},
      {"GreaterOrEqual", 12, {}, greater_equal},
      {"LessOrEqual", 12, {}, less_equal},
      {"And", 1, {"broadcast", "axis"}, logical_and},
      {"Or", 1, {"broadcast", "axis"}, logical_or},
      {"Xor", 1, {"broadcast", "axis"}, logical_xor},
      {"Not", 1, {}, logical_not},
      {"IsNaN", 9, {}, is_nan},
      {"IsInf", 10, {"detect_positive", "detect_negative"}, is_inf},
      {"Where", 9, {}, where},
      // bits
      {"BitwiseAnd", 18, {}, bitwise_and},
      {"BitwiseOr", 18, {}, bitwise_or},
      {"BitwiseXor", 18, {}, bitwise_xor},
      {"BitwiseNot", 18, {}, bitwise_not},
      {"BitShift", 11, {"direction"}, bit_shift},
      // casts
      {"Cast", 1, {"to", "saturate"}, cast},
      {"CastLike", 15, {"saturate"}, cast_like},
      {"Identity", 1, {}, identity},
  });
}

}  // namespace kiln::onnx::detail
