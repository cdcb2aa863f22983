// tests/ops/math_test.cpp - tensor/math.cpp and tensor/loss.cpp against plain C++ references
// (<cmath>, loops): values at odd shapes and at the edges (inf, nan, -0.0, halfway points, large
// magnitudes), gradients against finite differences and torch's values at the kinks, Python's
// division semantics on integers, the reductions over size-0 axes, the losses and attention, and
// the errors each one names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "error_check.hpp"
#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::vector<double> map(const std::vector<double>& v, const std::function<double(double)>& f) {
  std::vector<double> r;
  for (double x : v) r.push_back(f(x));
  return r;
}


std::vector<double> grad_of(const std::function<Tensor(const Tensor&)>& f, const std::vector<double>& v) {
  Tensor x = host_tensor(v, {static_cast<int64_t>(v.size())});
  return f(x).sum().gradient({x})[0].cast(dtypes::float64).to_vector<double>();
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
    else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << "element " << i;
    else EXPECT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::abs(want[i])) << "element " << i;
  }
}

struct Unary {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
  std::function<double(double)> ref;
  double lo, hi;
  bool grad;
};

double softplus_ref(double x, double b) { return x * b > 20 ? x : std::log1p(std::exp(b * x)) / b; }
double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<Unary> unaries() {
  return {
      {"asin", [](const Tensor& x) { return x.asin(); }, [](double x) { return std::asin(x); }, -0.95, 0.95, true},
      {"acos", [](const Tensor& x) { return x.acos(); }, [](double x) { return std::acos(x); }, -0.95, 0.95, true},
      {"atan", [](const Tensor& x) { return x.atan(); }, [](double x) { return std::atan(x); }, -5, 5, true},
      {"atan large", [](const Tensor& x) { return x.atan(); }, [](double x) { return std::atan(x); }, 300, 400, true},
      {"sinh", [](const Tensor& x) { return x.sinh(); }, [](double x) { return std::sinh(x); }, -3, 3, true},
      {"sinh near 0", [](const Tensor& x) { return x.sinh(); }, [](double x) { return std::sinh(x); }, -1e-3, 1e-3, true},
      {"sinh near overflow", [](const Tensor& x) { return x.sinh(); }, [](double x) { return std::sinh(double(float(x))); }, 88.8, 89.3, false},
      {"cosh near overflow", [](const Tensor& x) { return x.cosh(); }, [](double x) { return std::cosh(double(float(x))); }, -89.3, -88.8, false},
      {"cosh", [](const Tensor& x) { return x.cosh(); }, [](double x) { return std::cosh(x); }, -3, 3, true},
      {"asinh", [](const Tensor& x) { return x.asinh(); }, [](double x) { return std::asinh(x); }, -3, 3, true},
      {"asinh -300", [](const Tensor& x) { return x.asinh(); }, [](double x) { return std::asinh(x); }, -303, -300, true},
      {"acosh", [](const Tensor& x) { return x.acosh(); }, [](double x) { return std::acosh(x); }, 1.1, 4, true},
      {"atanh", [](const Tensor& x) { return x.atanh(); }, [](double x) { return std::atanh(x); }, -0.9, 0.9, true},
      {"log10", [](const Tensor& x) { return x.log10(); }, [](double x) { return std::log10(x); }, 0.1, 100, true},
      {"erf", [](const Tensor& x) { return x.erf(); }, [](double x) { return std::erf(x); }, -3, 3, true},
      {"softsign", [](const Tensor& x) { return x.softsign(); }, [](double x) { return x / (1 + std::abs(x)); }, -3, 3, true},
      {"softplus", [](const Tensor& x) { return x.softplus(); }, [](double x) { return softplus_ref(x, 1); }, -3, 3, true},
      {"softplus beta 3", [](const Tensor& x) { return x.softplus(3); }, [](double x) { return softplus_ref(x, 3); }, -3, 3, true},
      {"softplus large", [](const Tensor& x) { return x.softplus(); }, [](double x) { return softplus_ref(x, 1); }, 300, 400, true},
      {"softplus very negative", [](const Tensor& x) { return x.softplus(); }, [](double x) { return softplus_ref(x, 1); }, -400, -300, true},
      {"logsigmoid", [](const Tensor& x) { return x.logsigmoid(); }, [](double x) { return -softplus_ref(-x, 1); }, -3, 3, true},
      {"hardsigmoid", [](const Tensor& x) { return x.hardsigmoid(); }, [](double x) { return std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5, true},
      {"gelu none", [](const Tensor& x) { return x.gelu("none"); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3, true},
      {"gelu tanh", [](const Tensor& x) { return x.gelu("tanh"); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -3, 3, true},
      {"quick_gelu", [](const Tensor& x) { return x.quick_gelu(); }, [](double x) { return x * sigmoid_ref(1.702 * x); }, -3, 3, true},
      {"elu", [](const Tensor& x) { return x.elu(0.5); }, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, -3, 3, true},
      {"celu", [](const Tensor& x) { return x.celu(2); }, [](double x) { return x > 0 ? x : 2 * std::expm1(x / 2); }, -3, 3, true},
      {"selu", [](const Tensor& x) { return x.selu(); },
       [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x)); }, -3, 3, true},
      {"relu6", [](const Tensor& x) { return x.relu6(); }, [](double x) { return std::clamp(x, 0.0, 6.0); }, -3, 9, true},
      {"hardswish", [](const Tensor& x) { return x.hardswish(); }, [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; }, -5, 5, true},
      {"mish", [](const Tensor& x) { return x.mish(); }, [](double x) { return x * std::tanh(softplus_ref(x, 1)); }, -3, 3, true},
      {"hardtanh", [](const Tensor& x) { return x.hardtanh(-0.5, 1.5); }, [](double x) { return std::clamp(x, -0.5, 1.5); }, -3, 3, true},
      {"leaky_relu", [](const Tensor& x) { return x.leaky_relu(0.2); }, [](double x) { return x > 0 ? x : 0.2 * x; }, -3, 3, true},
      {"swish", [](const Tensor& x) { return x.swish(); }, [](double x) { return x * sigmoid_ref(x); }, -3, 3, true},
      {"trunc", [](const Tensor& x) { return x.trunc(); }, [](double x) { return std::trunc(x); }, -5, 5, false},
      {"floor", [](const Tensor& x) { return x.floor(); }, [](double x) { return std::floor(x); }, -5, 5, false},
      {"ceil", [](const Tensor& x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -5, 5, false},
      {"round", [](const Tensor& x) { return x.round(); }, [](double x) { return std::nearbyint(x); }, -5, 5, false},
  };
}

}  // namespace

TEST(MathUnary, ValuesAndGradientsMatchTheReferences) {
  for (const Unary& u : unaries()) {
    SCOPED_TRACE(u.name);
    Shape shape{3, 7};
    std::vector<double> v = sample(shape, 11, u.lo, u.hi);
    EXPECT_EQ(compare(u.f(host_tensor(v, shape)), shape, map(v, u.ref), 1e-4, 2e-6), "");
    if (u.grad) {
      std::vector<double> g = sample({9}, 5, u.lo, u.hi);
      EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return u.f(x[0]); }, {{g, {9}}}, 1e-3, 1e-5), "");
    }
  }
}

TEST(MathUnary, ZeroDimensionalAndSizeZeroInputsKeepTheirShape) {
  for (const Unary& u : unaries()) {
    SCOPED_TRACE(u.name);
    double x = (u.lo + u.hi) / 2 + 0.1;
    EXPECT_EQ(compare(u.f(host_tensor({x}, {})), {}, {u.ref(x)}, 1e-4, 2e-6), "");
    EXPECT_EQ(u.f(host_tensor({}, {2, 0})).shape(), (Shape{2, 0}));
  }
}

TEST(MathUnary, RoundingAtHalvesAndLargeValues) {
  std::vector<double> v{1.499, 1.5, 1.501, 1.0, 2.1, 0.0, -5.0, -2.499, -2.5, -2.501, 2.5, -1.5, 0.5, -0.5, 1e12, -1e12, kInf, -kInf};
  for (double& x : v) x = static_cast<float>(x);  // the references round what the float32 tensor holds
  Tensor t = host_tensor(v, {static_cast<int64_t>(v.size())});
  Shape s{static_cast<int64_t>(v.size())};
  EXPECT_EQ(compare(t.round(), s, map(v, [](double x) { return std::nearbyint(x); }), 0, 0), "");  // half to even
  EXPECT_EQ(compare(t.floor(), s, map(v, [](double x) { return std::floor(x); }), 0, 0), "");
  EXPECT_EQ(compare(t.ceil(), s, map(v, [](double x) { return std::ceil(x); }), 0, 0), "");
  EXPECT_EQ(compare(t.trunc(), s, map(v, [](double x) { return std::trunc(x); }), 0, 0), "");
  std::vector<float> z = host_tensor({-0.4, -0.5, 0.4}, {3}).round().to_vector<float>();  // a zero keeps x's sign
  EXPECT_TRUE(std::signbit(z[0]) && std::signbit(z[1]) && !std::signbit(z[2]));
  // integers are their own rounding; the gradient through rounding is 0 (x + 0.125 (round(x) - x))
  Tensor i = Tensor::from_vector<int32_t>({-3, 4}, {2});
  EXPECT_EQ(i.round().dtype(), dtypes::int32);
  EXPECT_EQ(i.floor().to_vector<int32_t>(), (std::vector<int32_t>{-3, 4}));
  expect_values(grad_of([](const Tensor& x) { return x + (x.round() - x) * 0.125; }, {-1.2, 0.7}), {0.875, 0.875});
}

TEST(MathUnary, ClassificationAndDomainEdges) {
  Tensor t = host_tensor({-kInf, 0, kInf, kNan, 1.1}, {5});
  EXPECT_EQ(t.isinf().cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 0, 0}));
  EXPECT_EQ(t.isinf(true, false).cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 0, 0}));
  EXPECT_EQ(t.isinf(false, true).cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(t.isnan().cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 1, 0}));
  EXPECT_EQ(t.isfinite().cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 0, 0, 1}));
  EXPECT_EQ(Tensor::from_vector<int32_t>({1}, {1}).isinf().dtype(), dtypes::bool_);
  // outside their domains the inverse functions are NaN, as torch; log10 of inf/-inf/nan
  expect_values(host_tensor({2, -2}, {2}).asin().cast(dtypes::float64).to_vector<double>(), {kNan, kNan});
  expect_values(map({kInf, -kInf, kNan}, [](double x) { return host_tensor({x}, {1}).log10().cast(dtypes::float64).item<double>(); }),
                {kInf, kNan, kNan});
  // sinh near 0 to float32's precision (a difference of exponentials keeps only ~1e-3 of it at 1e-5)
  EXPECT_EQ(compare(host_tensor({1e-5, -3e-4}, {2}).sinh(), {2}, {std::sinh(double(float(1e-5))), std::sinh(double(float(-3e-4)))}, 1e-6, 0), "");
  // asin and atan near 0 likewise (pi/2 minus the polynomial cancels there): exactly 0 at 0
  EXPECT_EQ(compare(host_tensor({0, 1e-5, -3e-4}, {3}).asin(), {3}, {0, std::asin(double(float(1e-5))), std::asin(double(float(-3e-4)))}, 1e-6, 0), "");
  EXPECT_EQ(compare(host_tensor({0, 1e-5, -3e-4}, {3}).atan(), {3}, {0, std::atan(double(float(1e-5))), std::atan(double(float(-3e-4)))}, 1e-6, 0), "");
  // large magnitudes stay finite or saturate as the references do
  expect_values(map({-1e30, 1e30, 3e9}, [](double x) { return host_tensor({x}, {1}).asinh().cast(dtypes::float64).item<double>(); }),
                {std::asinh(-1e30), std::asinh(1e30), std::asinh(double(float(3e9)))});
  expect_values(map({1e30, 3e9}, [](double x) { return host_tensor({x}, {1}).acosh().cast(dtypes::float64).item<double>(); }),
                {std::acosh(1e30), std::acosh(double(float(3e9)))});
  expect_values(map({-400, 400}, [](double x) { return host_tensor({x}, {1}).erf().cast(dtypes::float64).item<double>(); }), {-1, 1});
  expect_values(map({-400, 400}, [](double x) { return host_tensor({x}, {1}).hardsigmoid().cast(dtypes::float64).item<double>(); }), {0, 1});
  expect_values(map({-400, 400}, [](double x) { return host_tensor({x}, {1}).gelu("none").cast(dtypes::float64).item<double>(); }), {0, 400});
  // the tanh form's tail to float32's precision: 0.5 x (1 + tanh(u)) cancelled to 0 from about -5
  // (gelu(-10) = -1.2e-37); computed as x sigmoid(2u) it keeps its digits
  auto gelu_tanh = [](double x) {
    const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1 + std::exp(-2 * u));
  };
  for (double x : {-10.0, -8.0, -6.0, -4.0}) {
    const double got = host_tensor({x}, {1}).gelu("tanh").cast(dtypes::float64).item<double>();
    EXPECT_NEAR(got, gelu_tanh(x), 1e-4 * std::abs(gelu_tanh(x))) << "gelu(" << x << ")";
  }
}

TEST(MathUnary, GradientsAtTheKinksFollowTorch) {
  // hardtanh/relu6 pass nothing at a reached bound; leaky_relu at 0 takes the slope; softsign's is 1
  expect_values(grad_of([](const Tensor& x) { return x.hardtanh(-1, 1); }, {-1, 0, 1, 2}), {0, 1, 0, 0});
  expect_values(grad_of([](const Tensor& x) { return x.relu6(); }, {0, 3, 6}), {0, 1, 0});
  expect_values(grad_of([](const Tensor& x) { return x.leaky_relu(0.1); }, {0, 1}), {0.1, 1});
  expect_values(grad_of([](const Tensor& x) { return x.softsign(); }, {0}), {1});
  expect_values(grad_of([](const Tensor& x) { return x.hardsigmoid(); }, {-3, 0, 3}), {0, 1.0 / 6, 0});
  expect_values(grad_of([](const Tensor& x) { return x.hardswish(); }, {-4, -3, 0, 3, 4}), {0, 0, 0.5, 1, 1});
  // the exponential units at 0: alpha exp(0) (celu: 1; selu: scale alpha)
  expect_values(grad_of([](const Tensor& x) { return x.elu(0.5); }, {0}), {0.5});
  expect_values(grad_of([](const Tensor& x) { return x.celu(2); }, {0}), {1});
  expect_values(grad_of([](const Tensor& x) { return x.selu(); }, {0}), {1.0507009873554805 * 1.6732632423543772});
  // clip: torch passes no gradient at a reached bound
  Tensor lo = host_tensor({-2.5}, {}), hi = host_tensor({1.5}, {});
  expect_values(grad_of([&](const Tensor& x) { return x.clip(lo, hi); }, {-3, -2.5, 0, 1.5, 2}), {0, 0, 1, 0, 0});
  // saturated activations have 0 gradient, never NaN
  expect_values(grad_of([](const Tensor& x) { return x.softplus(); }, {-400, 400}), {0, 1});
  expect_values(grad_of([](const Tensor& x) { return x.logsigmoid(); }, {-400, 400}), {1, 0});
  expect_values(grad_of([](const Tensor& x) { return x.quick_gelu(); }, {-400, 400}), {0, 1});
  expect_values(grad_of([](const Tensor& x) { return x.elu(); }, {-400, 400}), {0, 1});
  expect_values(grad_of([](const Tensor& x) { return x.erf(); }, {-400, 0}), {0, 2 / std::sqrt(M_PI)});
  // acosh/atanh outside their domains: torch's formula, finite
  expect_values(grad_of([](const Tensor& x) { return x.acosh(); }, {-300}), {1 / std::sqrt(300.0 * 300 - 1)});
  expect_values(grad_of([](const Tensor& x) { return x.atanh(); }, {300}), {1 / (1 - 300.0 * 300)});
}

TEST(MathUnary, BitwiseNotOfIntegersAndBools) {
  EXPECT_EQ(Tensor::from_vector<int32_t>({1, -8, 0}, {3}).bitwise_not().to_vector<int32_t>(), (std::vector<int32_t>{-2, 7, -1}));
  EXPECT_EQ(Tensor::from_vector<uint8_t>({0, 5, 255}, {3}).bitwise_not().to_vector<uint8_t>(), (std::vector<uint8_t>{255, 250, 0}));
  EXPECT_EQ(Tensor::from_vector<uint64_t>({0}, {1}).bitwise_not().to_vector<uint64_t>(), (std::vector<uint64_t>{~0ull}));
  EXPECT_EQ(Tensor::from_vector<bool>({true, false}, {2}).bitwise_not().to_vector<bool>(), (std::vector<bool>{false, true}));
  expect_error([] { (void)host_tensor({1}, {1}).bitwise_not(); }, ErrorCode::invalid_argument, "bitwise_not: needs an integer or bool tensor");
}

TEST(MathBinary, PythonDivisionAndRemainderOnIntegers) {
  std::vector<int32_t> a{-4, 7, 5, 4, -7, 8, -9, 0}, b{2, -3, 8, -2, 3, 5, -5, 3};
  Tensor x = Tensor::from_vector<int32_t>(a, {8}), y = Tensor::from_vector<int32_t>(b, {8});
  std::vector<int32_t> fl, rem, tr, fm;
  for (size_t i = 0; i < a.size(); ++i) {
    int32_t q = static_cast<int32_t>(std::floor(static_cast<double>(a[i]) / b[i]));
    fl.push_back(q), rem.push_back(a[i] - q * b[i]), tr.push_back(a[i] / b[i]), fm.push_back(a[i] % b[i]);
  }
  EXPECT_EQ(x.floordiv(y).to_vector<int32_t>(), fl);
  EXPECT_EQ(x.div(y, "floor").dtype(), dtypes::int32);
  EXPECT_EQ(x.remainder(y).to_vector<int32_t>(), rem);
  EXPECT_EQ(x.div(y, "trunc").to_vector<int32_t>(), tr);
  EXPECT_EQ(x.fmod(y).to_vector<int32_t>(), fm);
  EXPECT_EQ(x.div(y, "").dtype(), dtypes::float32);
  // unsigned: floor is trunc; a uint64 beyond 2^53 divides exactly
  Tensor big = Tensor::from_vector<uint64_t>({~0ull}, {1});
  EXPECT_EQ(big.div(Tensor::from_vector<uint64_t>({1}, {1}), "trunc").to_vector<uint64_t>(), (std::vector<uint64_t>{~0ull}));
}

TEST(MathBinary, PythonDivisionAndRemainderOnFloats) {
  std::vector<double> a{-4, 7, 5.5, 4, -7, 8, -9, 0}, b{2, -3, 8, -2.5, 3, 5, -5, -3};
  Tensor x = host_tensor(a, {8}), y = host_tensor(b, {8});
  std::vector<double> fl, rem, tr, fm;
  for (size_t i = 0; i < a.size(); ++i) {
    fl.push_back(std::floor(a[i] / b[i])), tr.push_back(std::trunc(a[i] / b[i]));
    rem.push_back(a[i] - std::floor(a[i] / b[i]) * b[i]), fm.push_back(std::fmod(a[i], b[i]));
  }
  EXPECT_EQ(compare(x.floordiv(y), {8}, fl), "");
  EXPECT_EQ(compare(x.div(y, "trunc"), {8}, tr), "");
  EXPECT_EQ(compare(x.remainder(y), {8}, rem), "");
  EXPECT_EQ(compare(x.fmod(y), {8}, fm), "");
  // a zero result has the dividend's sign (C fmod, torch.remainder)
  std::vector<float> z = host_tensor({-0.0, -3, 3}, {3}).fmod(host_tensor({-3, 3, -3}, {3})).to_vector<float>();
  EXPECT_TRUE(std::signbit(z[0]) && std::signbit(z[1]) && !std::signbit(z[2]));
  // C's special cases: a finite dividend over +-inf is itself; inf over anything, or anything over 0, is NaN
  expect_values(host_tensor({3, -2.5, kInf, 3, kNan}, {5}).fmod(host_tensor({kInf, -kInf, 2, 0, 2}, {5})).cast(dtypes::float64).to_vector<double>(),
                {3, -2.5, kNan, kNan, kNan});
  z = host_tensor({-0.0, -3, 3}, {3}).remainder(host_tensor({-3, 3, -3}, {3})).to_vector<float>();
  EXPECT_TRUE(std::signbit(z[0]) && std::signbit(z[1]) && !std::signbit(z[2]));
  expect_error([&] { (void)x.div(y, "typo"); }, ErrorCode::invalid_argument, "div: rounding_mode must be None, 'trunc' or 'floor', got 'typo'");
}

TEST(MathBinary, ShiftsAreIntegerOnly) {
  Tensor x = Tensor::from_vector<int32_t>({-1, -3, 1, 7, 0, std::numeric_limits<int32_t>::min()}, {6});
  Tensor two = Tensor::from_vector<int32_t>({2}, {1});
  EXPECT_EQ(x.lshift(two).to_vector<int32_t>(), (std::vector<int32_t>{-4, -12, 4, 28, 0, 0}));
  EXPECT_EQ(x.rshift(two).to_vector<int32_t>(), (std::vector<int32_t>{-1, -1, 0, 1, 0, std::numeric_limits<int32_t>::min() / 4}));
  Tensor u = Tensor::from_vector<uint32_t>({1u << 31, 3}, {2});
  EXPECT_EQ(u.rshift(Tensor::from_vector<uint32_t>({31}, {1})).to_vector<uint32_t>(), (std::vector<uint32_t>{1, 0}));
  expect_error([] { (void)host_tensor({1}, {1}).lshift(host_tensor({1}, {1})); }, ErrorCode::invalid_argument, "lshift: needs integer tensors");
}

TEST(MathBinary, IntegerPowStaysIntegerAndExact) {
  Tensor x = Tensor::from_vector<int32_t>({-2, 0, 2, 11, 1, -1}, {6});
  Tensor p = x.pow(Tensor::from_vector<int32_t>({29, 0, 29, 7, -3, -3}, {6}));
  EXPECT_EQ(p.dtype(), dtypes::int32);
  EXPECT_EQ(p.to_vector<int32_t>(), (std::vector<int32_t>{-536870912, 1, 536870912, 19487171, 1, -1}));
  // a negative exponent truncates (2 ** -2 = 0)
  EXPECT_EQ(Tensor::from_vector<int64_t>({2, 0}, {2}).pow(Tensor::from_vector<int64_t>({-2, 3}, {2})).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0}));
}

TEST(MathBinary, FloatPowAtNegativeInfinityAndZero) {
  Tensor x = host_tensor({-kInf, -kInf, -kInf, -kInf, -kInf, 0, 0}, {7});
  Tensor e = host_tensor({0.3, 3.0, 2.0, -3.0, 0.0, 0.0, -0.3}, {7});
  expect_values(x.pow(e).cast(dtypes::float64).to_vector<double>(), {kInf, -kInf, kInf, -0.0, 1, 1, kInf});
  // torch's gradients: 0.3 * (-inf)^-0.7 = 0; 3.3 * (-inf)^2.3 = inf; 0 ** 0 passes 0 to the base
  expect_values(grad_of([](const Tensor& t) { return t.pow(0.3); }, {-kInf}), {0});
  expect_values(grad_of([](const Tensor& t) { return t.pow(3.3); }, {-kInf}), {kInf});
  expect_values(grad_of([](const Tensor& t) { return t.pow(host_tensor({0.0}, {})); }, {0}), {0});
}

TEST(MathBinary, CopysignLogaddexpLerpIsclose) {
  Tensor a = host_tensor({1, -2, 3, -4, 5}, {5}), s = host_tensor({-1, 2, -0.0, 0.0, kNan}, {5});
  EXPECT_EQ(compare(a.copysign(s), {5}, {-1, 2, -3, 4, 5}, 0, 0), "");
  std::vector<double> p{-100, 1, 2000, -kInf}, q{-1, 2, 3, -kInf};
  std::vector<double> want;
  for (size_t i = 0; i < p.size(); ++i) {
    double m = std::max(p[i], q[i]);
    want.push_back(std::isinf(m) ? m : m + std::log(std::exp(p[i] - m) + std::exp(q[i] - m)));
  }
  Tensor lae = host_tensor(p, {4}).logaddexp(host_tensor(q, {4}));
  expect_values(lae.cast(dtypes::float64).to_vector<double>(), want);
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].logaddexp(x[1]); }, {{sample({6}, 3), {6}}, {sample({6}, 4), {6}}}), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].lerp(x[1], x[2]); },
                           {{sample({2, 3}, 1), {2, 3}}, {sample({3}, 2), {3}}, {sample({2, 1}, 3), {2, 1}}}),
            "");
  Tensor u = host_tensor({kInf, -kInf, kNan, 0, 1e-7, 1}, {6}), v = host_tensor({kInf, kInf, kNan, 0, 0, 1 + 1e-6}, {6});
  EXPECT_EQ(u.isclose(v).cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 1, 0, 1}));
  EXPECT_EQ(u.isclose(v, 1e-5, 1e-8, true).cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 1, 0, 1}));
  EXPECT_FALSE(u.allclose(v).item<bool>());
  EXPECT_TRUE(host_tensor({1, 2}, {2}).allclose(host_tensor({1, 2 + 1e-6}, {2})).item<bool>());
  EXPECT_EQ(Tensor::from_vector<int32_t>({-3, 4}, {2}).square().to_vector<int32_t>(), (std::vector<int32_t>{9, 16}));
  expect_error([&] { (void)a.clip(std::nullopt, std::nullopt); }, ErrorCode::invalid_argument, "clip: at least one of min and max");
  expect_error([&] { (void)a.gelu("fast"); }, ErrorCode::invalid_argument, "gelu: approximate must be 'tanh' or 'none', got 'fast'");
}

TEST(MathReduce, AnyAllOverAxesAndSizeZeroAxes) {
  Tensor t = host_tensor({0, 0, 1, 0, 2, 3}, {2, 3});
  EXPECT_EQ(t.any({1}).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(t.all({1}).to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(t.all({0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(t.all({0}).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(t.any().item<bool>(), true);
  Tensor e = Tensor::zeros({1, 0, 3});
  EXPECT_EQ(e.any({1}).to_vector<bool>(), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(e.all({1}).to_vector<bool>(), (std::vector<bool>{true, true, true}));
}

TEST(MathReduce, LogsumexpNormalize) {
  Shape s{3, 5};
  std::vector<double> v = sample(s, 8, -50, 50);
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) {
    double m = -kInf, acc = 0;
    for (int j = 0; j < 5; ++j) m = std::max(m, v[i * 5 + j]);
    for (int j = 0; j < 5; ++j) acc += std::exp(v[i * 5 + j] - m);
    want.push_back(m + std::log(acc));
  }
  EXPECT_EQ(compare(host_tensor(v, s).logsumexp({-1}), {3}, want), "");
  EXPECT_EQ(compare(host_tensor(v, s).logsumexp({1}, true), {3, 1}, want), "");
  EXPECT_EQ(compare(host_tensor({2.5}, {}).logsumexp({0}), {}, {2.5}), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].logsumexp({0}); }, {{sample({4, 3}, 2), {4, 3}}}), "");
  EXPECT_EQ(compare(host_tensor({3, 4, 0, 0}, {2, 2}).normalize(), {2, 2}, {0.6, 0.8, 0, 0}), "");
  EXPECT_EQ(compare(host_tensor({3, 0, -1, 0}, {2, 2}).normalize(0, 1), {2, 2}, {3, 0, -1, 0}), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].normalize(3, 0); }, {{sample({3, 4}, 5), {3, 4}}}), "");
}

TEST(MathLoss, CrossEntropyWithIndicesProbabilitiesAndSmoothing) {
  Shape s{4, 3};
  std::vector<double> x = sample(s, 21);
  std::vector<int32_t> labels{2, 0, 1, 2};
  for (double ls : {0.0, 0.3}) {
    std::vector<double> per;
    for (int i = 0; i < 4; ++i) {
      double m = -kInf, acc = 0;
      for (int j = 0; j < 3; ++j) m = std::max(m, x[i * 3 + j]);
      for (int j = 0; j < 3; ++j) acc += std::exp(x[i * 3 + j] - m);
      double l = 0;
      for (int j = 0; j < 3; ++j) l -= (x[i * 3 + j] - m - std::log(acc)) * ((j == labels[i] ? 1 - ls : 0) + ls / 3);
      per.push_back(l);
    }
    Tensor y = Tensor::from_vector<int32_t>(labels, {4});
    EXPECT_EQ(compare(host_tensor(x, s).cross_entropy(y, "none", ls), {4}, per), "");
    double sum = per[0] + per[1] + per[2] + per[3];
    EXPECT_EQ(compare(host_tensor(x, s).cross_entropy(y, "sum", ls), {}, {sum}), "");
    EXPECT_EQ(compare(host_tensor(x, s).cross_entropy(y, "mean", ls), {}, {sum / 4}), "");
    // sparse_categorical_crossentropy is the same loss with the classes last
    EXPECT_EQ(compare(host_tensor(x, s).sparse_categorical_crossentropy(y, -1, ls, "mean"), {}, {sum / 4}), "");
    // probabilities: the one-hot rows give the same loss
    std::vector<double> onehot(12, 0);
    for (int i = 0; i < 4; ++i) onehot[i * 3 + labels[i]] = 1;
    EXPECT_EQ(compare(host_tensor(x, s).cross_entropy(host_tensor(onehot, s), "none", ls), {4}, per), "");
  }
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& t) { return t[0].cross_entropy(Tensor::from_vector<int32_t>({1, 0}, {2})); },
                           {{sample({2, 3}, 4), {2, 3}}}),
            "");
  expect_error([&] { (void)host_tensor(x, s).cross_entropy(host_tensor({0, 1, 2, 0}, {4, 1})); }, ErrorCode::invalid_argument,
               "cross_entropy: the target must be class indices of shape (4,)");
  expect_error([&] { (void)host_tensor(x, s).cross_entropy(Tensor::from_vector<int32_t>(labels, {4}), "typo"); }, ErrorCode::invalid_argument,
               "reduction must be one of 'mean', 'sum', 'none', got 'typo'");
  expect_error([&] { (void)host_tensor(x, s).cross_entropy(Tensor::from_vector<int32_t>(labels, {4}), "mean", 1.5); },
               ErrorCode::invalid_argument, "label_smoothing must be in [0, 1]");
}

TEST(MathLoss, SparseCrossEntropyIgnoresALabel) {
  Shape s{3, 4};
  std::vector<double> x = sample(s, 2);
  Tensor y = Tensor::from_vector<int32_t>({1, 3, 1}, {3});
  // ignoring label 1 leaves row 1 only; the mean divides by the rows kept
  Tensor full = host_tensor(x, s).sparse_categorical_crossentropy(y, -1, 0, "none");
  double row1 = full.cast(dtypes::float64).to_vector<double>()[1];
  EXPECT_EQ(compare(host_tensor(x, s).sparse_categorical_crossentropy(y, 1), {}, {row1}), "");
  EXPECT_EQ(compare(host_tensor(x, s).sparse_categorical_crossentropy(y, 1, 0, "sum"), {}, {row1}), "");
}

TEST(MathLoss, NllLossWithWeightsIgnoreIndexAndSpatialAxes) {
  Shape s{2, 3, 2};  // (N, C, d)
  std::vector<double> x = sample(s, 7);
  std::vector<int32_t> y{0, 2, 1, 2};  // (N, d)
  std::vector<double> w{0.5, 2, -1};
  for (std::optional<int64_t> ignore : {std::optional<int64_t>{}, std::optional<int64_t>{2}}) {
    double num = 0, den = 0;
    std::vector<double> per;
    for (int n = 0; n < 2; ++n)
      for (int d = 0; d < 2; ++d) {
        int c = y[static_cast<size_t>(n * 2 + d)];
        double wt = ignore && c == *ignore ? 0 : w[static_cast<size_t>(c)];
        double l = -x[static_cast<size_t>(n * 6 + c * 2 + d)] * wt;
        per.push_back(l), num += l, den += wt;
      }
    Tensor t = host_tensor(x, s), Y = Tensor::from_vector<int32_t>(y, {2, 2}), W = host_tensor(w, {3});
    EXPECT_EQ(compare(t.nll_loss(Y, W, ignore, "none"), {2, 2}, per), "");
    EXPECT_EQ(compare(t.nll_loss(Y, W, ignore, "sum"), {}, {num}), "");
    EXPECT_EQ(compare(t.nll_loss(Y, W, ignore, "mean"), {}, {num / den}), "");
  }
  EXPECT_EQ(compare(host_tensor({0.1, 0.2, 0.7}, {3}).nll_loss(Tensor::from_vector<int32_t>({2}, {})), {}, {-0.7}), "");
  expect_error([&] { (void)host_tensor(x, s).nll_loss(Tensor::from_vector<int32_t>({0, 1}, {2})); }, ErrorCode::invalid_argument,
               "nll_loss: input (2, 3, 2) needs targets of shape (2, 2), got (2,)");
  expect_error([&] { (void)host_tensor(x, s).nll_loss(Tensor::from_vector<int32_t>(y, {2, 2}), host_tensor({1, 1}, {2})); },
               ErrorCode::invalid_argument, "nll_loss: weight must have shape (3,)");
}

TEST(MathLoss, BinaryCrossEntropyOnProbabilitiesAndLogits) {
  std::vector<double> z = sample({6}, 9, -3, 3), t = sample({6}, 10, 0, 1), pw{0.5, 1, 2, 3, 0.25, 1};
  std::vector<double> bce, bcel;
  for (size_t i = 0; i < 6; ++i) {
    double p = sigmoid_ref(z[i]);
    bce.push_back(-(t[i] * std::log(p) + (1 - t[i]) * std::log(1 - p)));
    bcel.push_back(-(pw[i] * t[i] * std::log(p) + (1 - t[i]) * std::log(1 - p)));
  }
  Tensor zt = host_tensor(z, {6}), tt = host_tensor(t, {6});
  EXPECT_EQ(compare(zt.sigmoid().binary_crossentropy(tt, "none"), {6}, bce, 1e-4), "");
  EXPECT_EQ(compare(zt.binary_crossentropy_logits(tt, "none"), {6}, bce, 1e-4), "");
  EXPECT_EQ(compare(zt.binary_crossentropy_logits(tt, "none", host_tensor(pw, {6})), {6}, bcel, 1e-4), "");
  // a probability of exactly 0 or 1: torch's log clamp at -100 keeps the loss finite
  EXPECT_EQ(compare(host_tensor({0, 1}, {2}).binary_crossentropy(host_tensor({1, 0}, {2}), "none"), {2}, {100, 100}), "");
  // logits far out: no overflow
  EXPECT_EQ(compare(host_tensor({-400, 400}, {2}).binary_crossentropy_logits(host_tensor({1, 0}, {2}), "none"), {2}, {400, 400}), "");
}

TEST(MathAttention, ScaledDotProductAttentionMatchesLoops) {
  const int64_t B = 2, H = 2, L = 3, S = 4, E = 5;
  std::vector<double> q = sample({B, H, L, E}, 1), k = sample({B, H, S, E}, 2), v = sample({B, H, S, E}, 3);
  auto reference = [&](bool causal, const std::vector<double>* bias) {
    std::vector<double> out;
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> sc(S);
        double m = -kInf, z = 0;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t e = 0; e < E; ++e) d += q[(bh * L + i) * E + e] * k[(bh * S + j) * E + e];
          sc[j] = d / std::sqrt(double(E)) + (bias ? (*bias)[i * S + j] : 0) + (causal && j > i ? -kInf : 0);
          m = std::max(m, sc[j]);
        }
        for (double& s : sc) z += (s = std::exp(s - m));
        for (int64_t e = 0; e < E; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += sc[j] / z * v[(bh * S + j) * E + e];
          out.push_back(acc);
        }
      }
    return out;
  };
  Tensor Q = host_tensor(q, {B, H, L, E}), K = host_tensor(k, {B, H, S, E}), V = host_tensor(v, {B, H, S, E});
  EXPECT_EQ(compare(Q.scaled_dot_product_attention(K, V), {B, H, L, E}, reference(false, nullptr)), "");
  EXPECT_EQ(compare(Q.scaled_dot_product_attention(K, V, std::nullopt, 0, true), {B, H, L, E}, reference(true, nullptr)), "");
  std::vector<double> bias = sample({L, S}, 4);
  EXPECT_EQ(compare(Q.scaled_dot_product_attention(K, V, host_tensor(bias, {L, S})), {B, H, L, E}, reference(false, &bias)), "");
  // a bool mask keeps where true: the causal mask given explicitly
  std::vector<bool> keep;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) keep.push_back(j <= i);
  EXPECT_EQ(compare(Q.scaled_dot_product_attention(K, V, Tensor::from_vector<bool>(keep, {L, S})), {B, H, L, E}, reference(true, nullptr)),
            "");
  // grouped-query: 2 key/value heads serve 4 query heads, two each
  Tensor Q4 = host_tensor(sample({1, 4, L, E}, 6), {1, 4, L, E});
  Tensor K2 = host_tensor(sample({1, 2, S, E}, 7), {1, 2, S, E}), V2 = host_tensor(sample({1, 2, S, E}, 8), {1, 2, S, E});
  Tensor gqa = Q4.scaled_dot_product_attention(K2, V2, std::nullopt, 0, false, true);
  Tensor rep = Q4.scaled_dot_product_attention(Tensor::stack({K2, K2}, 2).reshape({1, 4, S, E}), Tensor::stack({V2, V2}, 2).reshape({1, 4, S, E}));
  EXPECT_EQ(compare(gqa, {1, 4, L, E}, rep.cast(dtypes::float64).to_vector<double>()), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& t) { return t[0].scaled_dot_product_attention(t[1], t[2], std::nullopt, 0, true); },
                           {{sample({2, 3, 4}, 1), {2, 3, 4}}, {sample({2, 3, 4}, 2), {2, 3, 4}}, {sample({2, 3, 4}, 3), {2, 3, 4}}}),
            "");
  expect_error([&] { (void)Q.scaled_dot_product_attention(K, V, host_tensor(bias, {L, S}), 0, true); }, ErrorCode::invalid_argument,
               "cannot set attn_mask when is_causal=True");
  expect_error([&] { (void)host_tensor(sample({1, 3, L, E}, 1), {1, 3, L, E}).scaled_dot_product_attention(K2, V2, std::nullopt, 0, false, true); },
               ErrorCode::invalid_argument, "the query's 3 heads must be a multiple of the key's 2 heads");
  // dropout of the weights: nothing outside training; while training, p = 1 drops every weight
  EXPECT_EQ(compare(Q.scaled_dot_product_attention(K, V, std::nullopt, 0.5), {B, H, L, E}, reference(false, nullptr)), "");
  Tensor::set_training(true);
  Tensor dropped = Q.scaled_dot_product_attention(K, V, std::nullopt, 1.0);
  Tensor::set_training(false);
  EXPECT_EQ(dropped.abs().sum().item<float>(), 0.0f);
  expect_error([&] { (void)Q.scaled_dot_product_attention(K, V, std::nullopt, 1.5); }, ErrorCode::invalid_argument, "");
}

TEST(MathReduce, ZeroDimensionalTensorsReduceOverAxisZeroAsTorch) {
  Tensor s = host_tensor({2.5}, {});
  for (int axis : {0, -1}) {
    EXPECT_EQ(compare(s.sum({axis}), {}, {2.5}), "");
    EXPECT_EQ(compare(s.prod({axis}, true), {}, {2.5}), "");
    EXPECT_EQ(compare(s.mean({axis}), {}, {2.5}), "");
    EXPECT_EQ(compare(s.max({axis}), {}, {2.5}), "");
    EXPECT_EQ(compare(s.softmax(axis), {}, {1}), "");
    EXPECT_EQ(compare(s.log_softmax(axis), {}, {0}), "");
    EXPECT_EQ(compare(s.logsumexp({axis}), {}, {2.5}), "");
  }
  expect_error([&] { (void)s.sum({1}); }, ErrorCode::out_of_range, "sum: axis 1 is out of range for a tensor of shape ()");
  expect_error([&] { (void)s.softmax(2); }, ErrorCode::out_of_range, "softmax: axis 2 is out of range");
}
