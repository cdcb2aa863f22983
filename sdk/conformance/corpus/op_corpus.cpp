// sdk/conformance/corpus/op_corpus.cpp - the cases.
#include "op_corpus.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

namespace kiln::testing {

namespace {

using A = std::vector<HostArray>;
using T = std::vector<Tensor>;
const DType f32 = dtypes::float32, i32 = dtypes::int32, b8 = dtypes::bool_;

HostArray F(std::vector<int64_t> s, uint64_t seed = 1, double lo = -2, double hi = 2) { return make_array(s, f32, seed, lo, hi); }
HostArray I(std::vector<int64_t> s, uint64_t seed = 2) { return make_array(s, i32, seed, -10, 10); }

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double nanmax(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }

void add_elementwise(std::vector<OpCase>& c) {
  auto un = [&](std::string name, std::function<Tensor(const Tensor&)> f, std::function<double(double)> r, HostArray in,
                double rtol = 1e-5) {
    c.push_back({name, {in}, [f](const T& t) { return f(t[0]); }, [r](const A& a) { return map(a[0], r, a[0].dtype); }, rtol, 1e-6});
  };
  un("neg", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, F({3, 5}));
  un("exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); }, F({3, 5}));
  un("log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); }, F({3, 5}, 3, 0.01, 10));
  un("exp2", [](const Tensor& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, F({17}));
  un("log2", [](const Tensor& x) { return x.log2(); }, [](double x) { return std::log2(x); }, F({17}, 4, 0.01, 100));
  un("sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, F({4, 4}, 5, 0, 9));
  un("rsqrt", [](const Tensor& x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, F({4, 4}, 5, 0.1, 9));
  un("sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, F({3, 7}, 6, -10, 10));
  {  // large arguments across the float32 range (exact argument reduction), both signs
    HostArray big{{0}, {}, dtypes::float32};
    for (float x = 1.0f; x < 3e38f; x *= 3.7f) big.v.push_back(x), big.v.push_back(-x * 1.01f);
    big.shape[0] = static_cast<int64_t>(big.v.size());
    un("sin_large", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, big);
    // and across the float64 range, with the double closest to a multiple of pi/2 (the hardest
    // reduction: 61 zero bits after the quadrant)
    HostArray big64{{0}, {}, dtypes::float64};
    for (double x = 1.0; x < 1.7e308; x *= 3.7) big64.v.push_back(x), big64.v.push_back(-x * 1.01);
    big64.v.push_back(std::ldexp(6381956970095103.0, 797));
    big64.v.push_back(1e22);
    big64.shape[0] = static_cast<int64_t>(big64.v.size());
    un("sin_large_f64", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, big64, 1e-12);
  }
  un("cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, F({3, 7}, 7, -10, 10));
  un("tan", [](const Tensor& x) { return x.tan(); }, [](double x) { return std::tan(x); }, F({3, 7}, 8, -1.2, 1.2), 1e-4);
  un("abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, F({3, 5}));
  un("sign", [](const Tensor& x) { return x.sign(); }, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, F({3, 5}));
  un("reciprocal", [](const Tensor& x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, F({3, 5}, 9, 0.5, 4));
  un("relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); }, F({3, 5}));
  un("sigmoid", [](const Tensor& x) { return x.sigmoid(); }, [](double x) { return sigmoid(x); }, F({3, 5}));
  un("tanh", [](const Tensor& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, F({3, 5}), 1e-4);
  un("gelu", [](const Tensor& x) { return x.gelu(); },
     [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, F({3, 5}), 1e-4);
  un("silu", [](const Tensor& x) { return x.silu(); }, [](double x) { return x * sigmoid(x); }, F({3, 5}));
  un("pow_scalar", [](const Tensor& x) { return x.pow(3.0); }, [](double x) { return x * x * x; }, F({3, 5}), 1e-4);
  un("pow_half", [](const Tensor& x) { return x.pow(0.5); }, [](double x) { return std::sqrt(x); }, F({6}, 10, 0, 4));
  un("add_scalar", [](const Tensor& x) { return x + 1.5; }, [](double x) { return x + 1.5; }, F({2, 3}));
  un("rsub_scalar", [](const Tensor& x) { return 2.0 - x; }, [](double x) { return 2 - x; }, F({2, 3}));
  un("rdiv_scalar", [](const Tensor& x) { return 1.0 / x; }, [](double x) { return 1 / x; }, F({2, 3}, 11, 0.5, 3));

  auto bin = [&](std::string name, std::function<Tensor(const Tensor&, const Tensor&)> f, std::function<double(double, double)> r,
                 HostArray a, HostArray b, DType out, double rtol = 1e-5) {
    c.push_back({name, {a, b}, [f](const T& t) { return f(t[0], t[1]); },
                 [r, out](const A& x) { return zip(x[0], x[1], r, out); }, rtol, 1e-6});
  };
  bin("add", [](auto& a, auto& b) { return a + b; }, std::plus<double>(), F({3, 4}), F({3, 4}, 2), f32);
  bin("add_broadcast", [](auto& a, auto& b) { return a + b; }, std::plus<double>(), F({2, 3, 4}), F({3, 1}, 2), f32);
  bin("sub_broadcast", [](auto& a, auto& b) { return a - b; }, std::minus<double>(), F({4}), F({3, 1}, 2), f32);
  bin("mul", [](auto& a, auto& b) { return a * b; }, std::multiplies<double>(), F({5, 3}), F({5, 3}, 3), f32);
  bin("div", [](auto& a, auto& b) { return a / b; }, std::divides<double>(), F({5, 3}), F({5, 3}, 3, 0.5, 3), f32);
  bin("div_int", [](auto& a, auto& b) { return a / b; }, std::divides<double>(), I({6}), make_array({6}, i32, 7, 1, 15), f32);
  bin("maximum", [](auto& a, auto& b) { return a.maximum(b); }, nanmax, F({7}), F({7}, 4), f32);
  bin("minimum", [](auto& a, auto& b) { return a.minimum(b); }, [](double x, double y) { return std::min(x, y); }, F({7}),
      F({7}, 4), f32);
  bin("pow", [](auto& a, auto& b) { return a.pow(b); }, [](double x, double y) { return std::pow(x, y); }, F({6}, 5, 0.1, 3),
      F({6}, 6, -2, 2), f32, 1e-4);
  bin("lt", [](auto& a, auto& b) { return a.lt(b); }, [](double x, double y) { return x < y; }, F({8}), F({8}, 3), b8);
  bin("gt", [](auto& a, auto& b) { return a.gt(b); }, [](double x, double y) { return x > y; }, F({8}), F({8}, 3), b8);
  bin("le_int", [](auto& a, auto& b) { return a.le(b); }, [](double x, double y) { return x <= y; }, I({9}), I({9}, 5), b8);
  bin("ge_int", [](auto& a, auto& b) { return a.ge(b); }, [](double x, double y) { return x >= y; }, I({9}), I({9}, 5), b8);
  bin("eq_int", [](auto& a, auto& b) { return a.eq(b); }, [](double x, double y) { return x == y; }, I({9}), I({9}, 5), b8);
  bin("ne_int", [](auto& a, auto& b) { return a.ne(b); }, [](double x, double y) { return x != y; }, I({9}), I({9}, 5), b8);
  bin("add_int", [](auto& a, auto& b) { return a + b; }, std::plus<double>(), I({3, 3}), I({3}, 4), i32);
  bin("mul_int_wrap", [](auto& a, auto& b) { return (a * b) * scalar_like(a, 100000); },
      [](double x, double y) { return static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(x * y) * 100000)); }, I({5}),
      I({5}, 9), i32);
  bin("idiv_c_semantics", [](auto& a, auto& b) { return a.idiv(b); },
      [](double x, double y) { return static_cast<double>(static_cast<int64_t>(x) / static_cast<int64_t>(y)); }, I({12}, 3),
      make_array({12}, i32, 13, 1, 6), i32);
  bin("idiv_negative_divisor", [](auto& a, auto& b) { return a.idiv(b * scalar_like(b, -1)); },
      [](double x, double y) { return static_cast<double>(static_cast<int64_t>(x) / -static_cast<int64_t>(y)); }, I({12}, 3),
      make_array({12}, i32, 13, 1, 6), i32);
  bin("mod_c_semantics", [](auto& a, auto& b) { return a.mod(b); },
      [](double x, double y) { return static_cast<double>(static_cast<int64_t>(x) % static_cast<int64_t>(y)); }, I({12}, 3),
      make_array({12}, i32, 14, 1, 6), i32);
  // documented C semantics (tensor.hpp): the quotient truncates toward zero and the remainder has
  // the dividend's sign, for every sign combination (-7 idiv -2 = 3, -7 mod -2 = -1, 7 mod -2 = 1)
  bin("mod_negative_divisor", [](auto& a, auto& b) { return a.mod(b * scalar_like(b, -1)); },
      [](double x, double y) { return static_cast<double>(static_cast<int64_t>(x) % -static_cast<int64_t>(y)); }, I({12}, 3),
      make_array({12}, i32, 15, 1, 6), i32);
  {
    HostArray n{{8}, {-7, 7, -7, 7, -6, 6, 0, -1}, i32}, d{{8}, {2, -2, -2, 3, -3, -4, -5, 5}, i32};
    bin("idiv_mod_signs", [](auto& a, auto& b) { return a.idiv(b) * scalar_like(a, 100) + a.mod(b); },
        [](double x, double y) {
          int64_t p = static_cast<int64_t>(x), q = static_cast<int64_t>(y);
          return static_cast<double>(p / q * 100 + p % q);
        }, n, d, i32);
  }
  {  // division is total (tensor.hpp): x idiv 0 = 0, x mod 0 = x, MIN idiv -1 = MIN, MIN mod -1 = 0
    auto idiv_ref = [](DType d) {
      return [d](double x, double y) { return y == 0 ? 0.0 : y == -1 ? to_dtype(-x, d) : std::trunc(x / y); };
    };
    auto mod_ref = [](double x, double y) { return y == 0 ? x : y == -1 ? 0.0 : std::fmod(x, y); };
    auto idiv = [](auto& a, auto& b) { return a.idiv(b); };
    auto mod = [](auto& a, auto& b) { return a.mod(b); };
    HostArray n{{9}, {-2147483648.0, -2147483648.0, 7, -7, 0, 5, 2147483647, -3, 9}, i32};
    HostArray d{{9}, {-1, 0, 0, 0, 0, -1, -1, 2, -4}, i32};
    bin("idiv_total_int32", idiv, idiv_ref(i32), n, d, i32);
    bin("mod_total_int32", mod, mod_ref, n, d, i32);
    HostArray n8{{6}, {-128, -128, 100, -100, 127, 0}, dtypes::int8}, d8{{6}, {-1, 0, 0, -1, -1, 0}, dtypes::int8};
    bin("idiv_total_int8", idiv, idiv_ref(dtypes::int8), n8, d8, dtypes::int8);
    bin("mod_total_int8", mod, mod_ref, n8, d8, dtypes::int8);
    HostArray nu{{4}, {200, 0, 7, 255}, dtypes::uint8}, du{{4}, {0, 0, 3, 1}, dtypes::uint8};
    bin("idiv_total_uint8", idiv, idiv_ref(dtypes::uint8), nu, du, dtypes::uint8);
    bin("mod_total_uint8", mod, mod_ref, nu, du, dtypes::uint8);
  }
  bin("and_int", [](auto& a, auto& b) { return a & b; },
      [](double x, double y) { return static_cast<double>(static_cast<int64_t>(x) & static_cast<int64_t>(y)); }, I({8}), I({8}, 3), i32);
  bin("or_bool", [](auto& a, auto& b) { return a.lt(b) | b.lt(a); }, [](double x, double y) { return x != y; }, F({8}), F({8}, 3),
      b8);
  bin("xor_int", [](auto& a, auto& b) { return a ^ b; },
      [](double x, double y) { return static_cast<double>(static_cast<int64_t>(x) ^ static_cast<int64_t>(y)); }, I({8}), I({8}, 3), i32);

  // unsigned arithmetic wraps modulo 2^bits (C semantics); comparisons, maximum and abs must treat
  // the values as unsigned (a value >= 2^31 is large, not negative; -x wraps, so abs is identity)
  const DType u8 = dtypes::uint8, u32 = dtypes::uint32;
  auto U8 = [](std::vector<int64_t> s, uint64_t seed) { return make_array(s, dtypes::uint8, seed, 0, 256); };
  auto U32 = [](std::vector<int64_t> s, uint64_t seed) { return make_array(s, dtypes::uint32, seed, 0, 4294967296.0); };
  bin("add_uint8_wrap", [](auto& a, auto& b) { return a + b; }, std::plus<double>(), U8({16}, 81), U8({16}, 82), u8);
  bin("sub_uint8_wrap", [](auto& a, auto& b) { return a - b; }, std::minus<double>(), U8({16}, 83), U8({16}, 84), u8);
  bin("add_uint32_wrap", [](auto& a, auto& b) { return a + b; }, std::plus<double>(), U32({16}, 85), U32({16}, 86), u32);
  bin("sub_uint32_wrap", [](auto& a, auto& b) { return a - b; }, std::minus<double>(), U32({16}, 87), U32({16}, 88), u32);
  bin("maximum_uint32", [](auto& a, auto& b) { return a.maximum(b); }, [](double x, double y) { return std::max(x, y); },
      U32({16}, 89), U32({16}, 90), u32);
  bin("minimum_uint8", [](auto& a, auto& b) { return a.minimum(b); }, [](double x, double y) { return std::min(x, y); },
      U8({16}, 91), U8({16}, 92), u8);
  un("abs_uint8", [](const Tensor& x) { return x.abs(); }, [](double x) { return x; }, HostArray{{6}, {0, 1, 3, 127, 128, 255}, u8});
  un("abs_uint32", [](const Tensor& x) { return x.abs(); }, [](double x) { return x; }, U32({9}, 93));
  c.push_back({"max_uint32", {U32({4, 6}, 94)}, [](const T& t) { return t[0].max({1}); },
               [u32](const A& a) { return reduce(a[0], {1}, false, [](double p, double q) { return std::max(p, q); }, 0, u32); }});
  c.push_back({"min_uint8", {U8({4, 6}, 95)}, [](const T& t) { return t[0].min({0}); },
               [u8](const A& a) { return reduce(a[0], {0}, false, [](double p, double q) { return std::min(p, q); }, 255, u8); }});

  c.push_back({"int_scalar_keeps_dtype", {I({5})}, [](const T& t) { return t[0] * 3 + 1; },
               [](const A& a) { return map(a[0], [](double x) { return x * 3 + 1; }, i32); }});
  c.push_back({"where", {make_array({3, 4}, b8, 3), F({3, 4}), F({1, 4}, 2)},
               [](const T& t) { return Tensor::where(t[0], t[1], t[2]); }, [](const A& a) { return where(a[0], a[1], a[2]); }});
  c.push_back({"where_scalar_branch", {F({6}), F({6}, 5)},
               [](const T& t) { return Tensor::where(t[0].gt(t[1]), t[0], t[1] * 0.0 - 1.0); },
               [](const A& a) { return zip(a[0], a[1], [](double x, double y) { return x > y ? x : -1.0; }, f32); }});
  c.push_back({"logical_not", {F({6}), F({6}, 5)}, [](const T& t) { return t[0].lt(t[1]).logical_not(); },
               [](const A& a) { return zip(a[0], a[1], [](double x, double y) { return !(x < y); }, b8); }});
}

void add_casts_and_specials(std::vector<OpCase>& c) {
  auto cast_case = [&](std::string name, HostArray in, DType to) {
    c.push_back({name, {in}, [to](const T& t) { return t[0].cast(to); }, [to](const A& a) { return cast(a[0], to); }});
  };
  cast_case("cast_f32_i32", F({9}, 3, -50, 50), i32);
  cast_case("cast_i32_f32", I({9}), f32);
  cast_case("cast_i32_u8_wrap", make_array({9}, i32, 4, -300, 300), dtypes::uint8);
  cast_case("cast_i32_i8_wrap", make_array({9}, i32, 5, -300, 300), dtypes::int8);
  cast_case("cast_f32_bool", F({9}, 6, -1, 1), b8);
  cast_case("cast_bool_f32", make_array({9}, b8, 7), f32);
  cast_case("cast_f32_f16", F({9}, 8, -1000, 1000), dtypes::float16);
  cast_case("cast_f32_bf16", F({9}, 9, -1000, 1000), dtypes::bfloat16);
  cast_case("cast_f32_f64", F({9}, 10), dtypes::float64);
  cast_case("cast_u8_f32", make_array({9}, dtypes::uint8, 11, 0, 250), f32);
  cast_case("cast_i64_i16", make_array({9}, dtypes::int64, 12, -100000, 100000), dtypes::int16);

  // Narrow types round at every op, as if each intermediate were stored: a fused kernel must not
  // keep int8 sums or half products in a wider type until the cast.
  auto narrow = [&](std::string name, HostArray a, HostArray b, DType d,
                    std::function<double(double, double, DType)> r, std::function<Tensor(const Tensor&, const Tensor&)> f) {
    DType wide = d.is_float() ? f32 : dtypes::int64;
    c.push_back({name, {a, b}, [d, f, wide](const T& t) { return f(t[0].cast(d), t[1].cast(d)).cast(wide); },
                 [d, r, wide](const A& a) {
                   return zip(a[0], a[1], [d, r](double x, double y) { return r(to_dtype(x, d), to_dtype(y, d), d); }, wide);
                 }});
  };
  auto add_then_sub = [](const Tensor& x, const Tensor& y) { return (x + y) - x; };
  auto add_then_sub_ref = [](double x, double y, DType d) { return to_dtype(to_dtype(x + y, d) - x, d); };
  narrow("int8_add_wraps_before_cast", make_array({9}, dtypes::int8, 77, 60, 127), make_array({9}, dtypes::int8, 78, 60, 127), dtypes::int8,
         [](double x, double y, DType d) { return to_dtype(x + y, d); }, [](const Tensor& x, const Tensor& y) { return x + y; });
  narrow("int16_mul_wraps_before_cast", make_array({9}, dtypes::int16, 79, 200, 400), make_array({9}, dtypes::int16, 80, 200, 400), dtypes::int16,
         [](double x, double y, DType d) { return to_dtype(x * y, d); }, [](const Tensor& x, const Tensor& y) { return x * y; });
  // int32 too: signed overflow is undefined in C and LLVM, which may then skip the wrap
  narrow("int32_add_wraps_before_cast", make_array({9}, i32, 87, 2.0e9, 2.147e9), make_array({9}, i32, 88, 2.0e9, 2.147e9), i32,
         [](double x, double y, DType d) { return to_dtype(x + y, d); }, [](const Tensor& x, const Tensor& y) { return x + y; });
  narrow("int32_mul_wraps_before_cast", make_array({9}, i32, 89, 60000, 70000), make_array({9}, i32, 90, -70000, -60000), i32,
         [](double x, double y, DType d) { return to_dtype(x * y, d); }, [](const Tensor& x, const Tensor& y) { return x * y; });
  narrow("f16_mul_overflows_before_cast", F({9}, 81, 40000, 65504), F({9}, 82, 1.5, 2), dtypes::float16,
         [](double x, double y, DType d) { return to_dtype(x * y, d); }, [](const Tensor& x, const Tensor& y) { return x * y; });
  narrow("f16_add_rounds_before_sub", F({9}, 83, 1024, 2048), F({9}, 84, 0, 1), dtypes::float16, add_then_sub_ref, add_then_sub);
  narrow("bf16_add_rounds_before_sub", F({9}, 85, 256, 512), F({9}, 86, 0, 1), dtypes::bfloat16, add_then_sub_ref, add_then_sub);

  HostArray specials{{8}, {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e30, -1e-30, 3.5}, f32};
  specials.v[5] = static_cast<float>(1e30);
  specials.v[6] = static_cast<float>(-1e-30);
  auto sp = [&](std::string name, std::function<Tensor(const Tensor&)> f, std::function<double(double)> r) {
    c.push_back({name, {specials}, [f](const T& t) { return f(t[0]); }, [r](const A& a) { return map(a[0], r, f32); }, 1e-5, 1e-30});
  };
  sp("nan_inf_relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return std::isnan(x) ? x : std::max(x, 0.0); });
  sp("nan_inf_exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); });
  sp("nan_inf_log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); });
  sp("nan_inf_sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); });
  sp("nan_inf_reciprocal", [](const Tensor& x) { return x.reciprocal(); }, [](double x) { return 1 / x; });
  sp("nan_inf_mul_zero", [](const Tensor& x) { return x * 0.0; }, [](double x) { return x * 0; });
  sp("nan_inf_max", [](const Tensor& x) { return x.maximum(x * 0.0 + 1.0); }, [](double x) { return nanmax(x, x * 0 + 1); });
  sp("nan_inf_sign", [](const Tensor& x) { return x.sign(); },
     [](double x) { return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; });
  // 1/abs(x): the result's sign shows the sign of abs(+-0.0) (both must be +0.0, so +inf)
  sp("nan_inf_abs_zero_sign", [](const Tensor& x) { return x.abs().reciprocal(); }, [](double x) { return 1 / std::fabs(x); });
  c.push_back({"nan_compare", {specials}, [](const T& t) { return t[0].lt(t[0] * 0.0 + 1.0); },
               [](const A& a) { return map(a[0], [](double x) { return x < x * 0 + 1; }, b8); }});
  c.push_back({"sum_with_inf", {specials}, [](const T& t) { return t[0].sum(); },
               [](const A& a) { return reduce(a[0], {}, false, std::plus<double>(), 0, f32); }});
}

void add_movement(std::vector<OpCase>& c) {
  auto mv = [&](std::string name, HostArray in, std::function<Tensor(const Tensor&)> f, std::function<HostArray(const HostArray&)> r) {
    // each view is followed by arithmetic so the view is read through the kernel, not copied
    c.push_back({name, {in}, [f](const T& t) { return f(t[0]) * 2.0; },
                 [r](const A& a) { return map(r(a[0]), [](double x) { return x * 2; }, f32); }});
  };
  HostArray x = F({2, 3, 4});
  mv("reshape", x, [](const Tensor& t) { return t.reshape({4, -1}); }, [](const HostArray& a) { return reshape(a, {4, 6}); });
  mv("permute", x, [](const Tensor& t) { return t.permute({2, 0, 1}); }, [](const HostArray& a) { return permute(a, {2, 0, 1}); });
  mv("transpose", x, [](const Tensor& t) { return t.transpose(0, 2); }, [](const HostArray& a) { return permute(a, {2, 1, 0}); });
  mv("expand", F({3, 1}), [](const Tensor& t) { return t.expand({2, 3, 5}); },
     [](const HostArray& a) { return expand(a, {2, 3, 5}); });
  mv("pad", x, [](const Tensor& t) { return t.pad({{1, 0}, {0, 2}, {1, 1}}); },
     [](const HostArray& a) { return pad(a, {{1, 0}, {0, 2}, {1, 1}}, 0); });
  mv("pad_value", x, [](const Tensor& t) { return t.pad({{0, 0}, {1, 1}, {0, 0}}, -7.5); },
     [](const HostArray& a) { return pad(a, {{0, 0}, {1, 1}, {0, 0}}, -7.5); });
  mv("shrink", x, [](const Tensor& t) { return t.shrink({{1, 2}, {0, 3}, {1, 3}}); },
     [](const HostArray& a) { return shrink(a, {{1, 2}, {0, 3}, {1, 3}}); });
  mv("flip", x, [](const Tensor& t) { return t.flip({0, -1}); }, [](const HostArray& a) { return flip(a, {0, -1}); });
  mv("flatten", x, [](const Tensor& t) { return t.flatten(1); }, [](const HostArray& a) { return reshape(a, {2, 12}); });
  mv("squeeze_unsqueeze", F({3, 1, 4}), [](const Tensor& t) { return t.squeeze(1).unsqueeze(0); },
     [](const HostArray& a) { return reshape(a, {1, 3, 4}); });
  mv("chain", x, [](const Tensor& t) { return t.pad({{0, 1}, {1, 0}, {2, 2}}).flip({2}).shrink({{1, 3}, {0, 4}, {1, 7}}).permute({2, 1, 0}).reshape({-1}); },
     [](const HostArray& a) {
       return reshape(permute(shrink(flip(pad(a, {{0, 1}, {1, 0}, {2, 2}}, 0), {2}), {{1, 3}, {0, 4}, {1, 7}}), {2, 1, 0}), {48});
     });
  c.push_back({"noncontiguous_add", {F({4, 3}), F({3, 4}, 2)}, [](const T& t) { return t[0].transpose() + t[1]; },
               [](const A& a) { return zip(permute(a[0], {1, 0}), a[1], std::plus<double>(), f32); }});
  c.push_back({"contiguous_view", {F({4, 3})}, [](const T& t) { return t[0].transpose().contiguous(); },
               [](const A& a) { return permute(a[0], {1, 0}); }});
}

void add_reductions(std::vector<OpCase>& c) {
  HostArray x = F({3, 4, 5}, 21);
  for (std::vector<int> axes : std::vector<std::vector<int>>{{0}, {1}, {2}, {-1}, {0, 2}, {}}) {
    std::string tag;
    for (int a : axes) tag += (a < 0 ? "_m" : "_") + std::to_string(a < 0 ? -a : a);
    if (axes.empty()) tag = "_all";
    c.push_back({"sum" + tag, {x}, [axes](const T& t) { return t[0].sum(axes); },
                 [axes](const A& a) { return reduce(a[0], axes, false, std::plus<double>(), 0, f32); }});
    c.push_back({"max" + tag, {x}, [axes](const T& t) { return t[0].max(axes, true); },
                 [axes](const A& a) { return reduce(a[0], axes, true, nanmax, -INFINITY, f32); }});
  }
  c.push_back({"min_float", {x}, [](const T& t) { return t[0].min({1}); },
               [](const A& a) { return reduce(a[0], {1}, false, [](double p, double q) { return std::min(p, q); }, INFINITY, f32); }});
  HostArray xi = make_array({4, 6}, i32, 22, -1000, 1000);
  c.push_back({"min_int", {xi}, [](const T& t) { return t[0].min({1}); },
               [](const A& a) { return reduce(a[0], {1}, false, [](double p, double q) { return std::min(p, q); }, 1e18, i32); }});
  c.push_back({"max_int", {xi}, [](const T& t) { return t[0].max({0}); },
               [](const A& a) { return reduce(a[0], {0}, false, [](double p, double q) { return std::max(p, q); }, -1e18, i32); }});
  c.push_back({"sum_int8_accumulates_int32", {make_array({40}, dtypes::int8, 23, -120, 120)},
               [](const T& t) { return t[0].sum(); },
               [](const A& a) { return reduce(a[0], {}, false, std::plus<double>(), 0, i32); }});
  c.push_back({"prod", {F({3, 4}, 24, 0.5, 1.5)}, [](const T& t) { return t[0].prod({1}); },
               [](const A& a) { return reduce(a[0], {1}, false, std::multiplies<double>(), 1, f32); }});
  c.push_back({"mean", {x}, [](const T& t) { return t[0].mean({0, 2}, true); },
               [](const A& a) { return map(reduce(a[0], {0, 2}, true, std::plus<double>(), 0, dtypes::float64), [](double s) { return s / 15; }, f32); }});
  c.push_back({"var_std", {x}, [](const T& t) { return t[0].var({2}) + t[0].std({2}, false, 0); },
               [](const A& a) {
                 HostArray r{{3, 4}, {}, f32};
                 for (int i = 0; i < 3; ++i)
                   for (int j = 0; j < 4; ++j) {
                     double m = 0, s = 0;
                     for (int k = 0; k < 5; ++k) m += a[0].at({i, j, k});
                     m /= 5;
                     for (int k = 0; k < 5; ++k) s += (a[0].at({i, j, k}) - m) * (a[0].at({i, j, k}) - m);
                     r.v.push_back(s / 4 + std::sqrt(s / 5));
                   }
                 return r;
               }, 1e-4});
  c.push_back({"argmax", {make_array({4, 7}, i32, 25, -10, 10)}, [](const T& t) { return t[0].argmax(1); },
               [](const A& a) {
                 HostArray r{{4}, {}, i32};
                 for (int i = 0; i < 4; ++i) {
                   int best = 0;
                   for (int j = 1; j < 7; ++j)
                     if (a[0].at({i, j}) > a[0].at({i, best})) best = j;
                   r.v.push_back(best);
                 }
                 return r;
               }});
  // NaN: max/min propagate it (numpy's max/min, not fmax/fmin); argmax is the first NaN of a row
  // that has one (numpy), else the first maximum. Rows: NaN in the middle, repeated maximum, NaN
  // first, all -inf, NaN last.
  HostArray xn{{5, 5},
               {1, NAN, 3, NAN, 2,  1, 5, 5, -INFINITY, 0,  NAN, 7, 1, 2, 3,
                -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,  4, -1, 9, 0, NAN},
               f32};
  auto nanmin = [](double p, double q) { return std::isnan(p) || std::isnan(q) ? NAN : std::min(p, q); };
  auto argmax_ref = [](const HostArray& a, int axis, bool keepdim) {
    int64_t rows = a.shape[1 - axis], n = a.shape[axis];
    HostArray r{keepdim ? (axis ? std::vector<int64_t>{rows, 1} : std::vector<int64_t>{1, rows}) : std::vector<int64_t>{rows}, {}, i32};
    for (int64_t i = 0; i < rows; ++i) {
      auto at = [&](int64_t j) { return axis ? a.at({i, j}) : a.at({j, i}); };
      int64_t best = 0;
      for (int64_t j = 0; j < n && !std::isnan(at(best)); ++j)
        if (std::isnan(at(j)) || at(j) > at(best)) best = j;
      r.v.push_back(static_cast<double>(best));
    }
    return r;
  };
  c.push_back({"argmax_nan", {xn}, [](const T& t) { return t[0].argmax(1); },
               [argmax_ref](const A& a) { return argmax_ref(a[0], 1, false); }});
  c.push_back({"argmax_nan_keepdim", {xn}, [](const T& t) { return t[0].argmax(1, true); },
               [argmax_ref](const A& a) { return argmax_ref(a[0], 1, true); }});
  c.push_back({"argmax_nan_axis0_keepdim", {xn}, [](const T& t) { return t[0].argmax(0, true); },
               [argmax_ref](const A& a) { return argmax_ref(a[0], 0, true); }});
  c.push_back({"max_nan", {xn}, [](const T& t) { return t[0].max({1}); },
               [](const A& a) { return reduce(a[0], {1}, false, nanmax, -INFINITY, f32); }});
  c.push_back({"min_nan", {xn}, [](const T& t) { return t[0].min({1}); },
               [nanmin](const A& a) { return reduce(a[0], {1}, false, nanmin, INFINITY, f32); }});
  c.push_back({"max_min_nan_axis0", {xn}, [](const T& t) { return t[0].max({0}) + t[0].min({0}, false); },
               [nanmin](const A& a) {
                 return zip(reduce(a[0], {0}, false, nanmax, -INFINITY, f32), reduce(a[0], {0}, false, nanmin, INFINITY, f32),
                            std::plus<double>(), f32);
               }});
  // reductions over a non-contiguous view: the reduce axis is not the innermost in memory
  c.push_back({"sum_permuted", {x}, [](const T& t) { return t[0].permute({2, 0, 1}).sum({0}); },
               [](const A& a) { return reduce(permute(a[0], {2, 0, 1}), {0}, false, std::plus<double>(), 0, f32); }});
  c.push_back({"max_permuted_keepdim", {x}, [](const T& t) { return t[0].permute({1, 2, 0}).max({2, 0}, true); },
               [](const A& a) { return reduce(permute(a[0], {1, 2, 0}), {2, 0}, true, nanmax, -INFINITY, f32); }});
  c.push_back({"sum_flipped_transposed", {F({6, 5}, 28)}, [](const T& t) { return t[0].flip({1}).transpose().sum({1}); },
               [](const A& a) { return reduce(permute(flip(a[0], {1}), {1, 0}), {1}, false, std::plus<double>(), 0, f32); }});
  auto softmax_ref = [](const HostArray& a, bool log) {
    HostArray r{a.shape, {}, f32};
    int64_t rows = a.numel() / a.shape.back(), n = a.shape.back();
    for (int64_t i = 0; i < rows; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, a.v[i * n + j]);
      for (int64_t j = 0; j < n; ++j) s += std::exp(a.v[i * n + j] - m);
      for (int64_t j = 0; j < n; ++j) r.v.push_back(log ? a.v[i * n + j] - m - std::log(s) : std::exp(a.v[i * n + j] - m) / s);
    }
    return r;
  };
  c.push_back({"softmax", {F({5, 9}, 26, -5, 5)}, [](const T& t) { return t[0].softmax(); },
               [softmax_ref](const A& a) { return softmax_ref(a[0], false); }, 1e-5});
  c.push_back({"log_softmax", {F({5, 9}, 27, -5, 5)}, [](const T& t) { return t[0].log_softmax(-1); },
               [softmax_ref](const A& a) { return softmax_ref(a[0], true); }, 1e-5});
}

void add_nn(std::vector<OpCase>& c) {
  c.push_back({"matmul", {F({5, 7}, 31), F({7, 3}, 32)}, [](const T& t) { return t[0].matmul(t[1]); },
               [](const A& a) { return matmul(a[0], a[1]); }});
  c.push_back({"matmul_vector", {F({7}, 33), F({7, 3}, 34)}, [](const T& t) { return t[0].matmul(t[1]); },
               [](const A& a) { return reshape(matmul(reshape(a[0], {1, 7}), a[1]), {3}); }});
  c.push_back({"matmul_batched_broadcast", {F({2, 3, 4}, 35), F({4, 5}, 36)}, [](const T& t) { return t[0].matmul(t[1]); },
               [](const A& a) {
                 HostArray r{{2, 3, 5}, {}, f32};
                 for (int b = 0; b < 2; ++b) {
                   HostArray s = reshape(shrink(a[0], {{b, b + 1}, {0, 3}, {0, 4}}), {3, 4});
                   HostArray m = matmul(s, a[1]);
                   r.v.insert(r.v.end(), m.v.begin(), m.v.end());
                 }
                 return r;
               }});
  c.push_back({"dot", {F({6}, 37), F({6}, 38)}, [](const T& t) { return t[0].dot(t[1]); },
               [](const A& a) { return reshape(matmul(reshape(a[0], {1, 6}), reshape(a[1], {6, 1})), {}); }});
  c.push_back({"linear_bias_relu", {F({4, 6}, 39), F({3, 6}, 40), F({3}, 41)},
               [](const T& t) { return t[0].linear(t[1], t[2]).relu(); },
               [](const A& a) {
                 HostArray y = zip(matmul(a[0], permute(a[1], {1, 0})), a[2], std::plus<double>(), f32);
                 return map(y, [](double v) { return std::max(v, 0.0); }, f32);
               }});
  struct Conv {
    std::string name;
    std::vector<int64_t> x, w;
    int stride, pad, dil, groups;
  };
  for (const Conv& cv : std::vector<Conv>{{"conv2d", {2, 3, 7, 6}, {4, 3, 3, 3}, 1, 0, 1, 1},
                                          {"conv2d_pad", {1, 2, 5, 5}, {3, 2, 3, 3}, 1, 1, 1, 1},
                                          {"conv2d_stride", {1, 2, 9, 8}, {2, 2, 3, 2}, 2, 1, 1, 1},
                                          {"conv2d_dilation", {1, 1, 8, 8}, {2, 1, 3, 3}, 1, 0, 2, 1},
                                          {"conv2d_groups", {1, 4, 6, 6}, {6, 2, 3, 3}, 1, 1, 1, 2},
                                          // windows that do not overlap (cut apart, not tiled):
                                          // patches, and a strided 1x1 whose last gap runs past
                                          // the odd input
                                          {"conv2d_patches", {2, 3, 8, 6}, {4, 3, 2, 2}, 2, 0, 1, 1},
                                          {"conv2d_pointwise_stride", {1, 3, 7, 5}, {2, 3, 1, 1}, 2, 0, 1, 1}}) {
    c.push_back({cv.name, {F(cv.x, 42), F(cv.w, 43), F({cv.w[0]}, 44)},
                 [cv](const T& t) { return t[0].conv2d(t[1], t[2], cv.stride, cv.pad, cv.dil, cv.groups); },
                 [cv](const A& a) {
                   HostArray y = conv2d(a[0], a[1], cv.stride, cv.pad, cv.dil, cv.groups);
                   return zip(y, reshape(a[2], {1, cv.w[0], 1, 1}), std::plus<double>(), f32);
                 }, 1e-4, 1e-5});
  }
  c.push_back({"max_pool2d", {F({2, 3, 6, 6}, 45)}, [](const T& t) { return t[0].max_pool2d(2); },
               [](const A& a) { return pool2d(a[0], 2, 2, 0, true); }});
  c.push_back({"max_pool2d_pad_stride", {F({1, 2, 7, 7}, 46)}, [](const T& t) { return t[0].max_pool2d(3, 2, 1); },
               [](const A& a) { return pool2d(a[0], 3, 2, 1, true); }});
  c.push_back({"max_pool2d_gap", {F({1, 2, 8, 7}, 56)}, [](const T& t) { return t[0].max_pool2d(2, 3); },
               [](const A& a) { return pool2d(a[0], 2, 3, 0, true); }});
  c.push_back({"avg_pool2d", {F({1, 2, 6, 4}, 47)}, [](const T& t) { return t[0].avg_pool2d(2); },
               [](const A& a) { return pool2d(a[0], 2, 2, 0, false); }});
  // padding counts in the average (zeros, divided by kernel*kernel, like torch's default)
  c.push_back({"avg_pool2d_pad_stride", {F({1, 2, 7, 7}, 55)}, [](const T& t) { return t[0].avg_pool2d(3, 2, 1); },
               [](const A& a) { return pool2d(a[0], 3, 2, 1, false); }});
  c.push_back({"cat", {F({2, 3}, 48), F({4, 3}, 49), F({1, 3}, 50)}, [](const T& t) { return Tensor::cat({t[0], t[1], t[2]}); },
               [](const A& a) { return cat({a[0], a[1], a[2]}, 0); }});
  c.push_back({"cat_axis1", {F({2, 3}, 48), F({2, 2}, 49)}, [](const T& t) { return Tensor::cat({t[0], t[1]}, -1); },
               [](const A& a) { return cat({a[0], a[1]}, 1); }});
  c.push_back({"stack", {F({2, 3}, 51), F({2, 3}, 52)}, [](const T& t) { return Tensor::stack({t[0], t[1]}, 1); },
               [](const A& a) { return cat({reshape(a[0], {2, 1, 3}), reshape(a[1], {2, 1, 3})}, 1); }});
  HostArray idx{{3, 2}, {0, 3, -1, 2, 1, 1}, i32};
  c.push_back({"gather", {F({3, 4}, 53), idx}, [](const T& t) { return t[0].gather(1, t[1]); },
               [](const A& a) { return gather(a[0], 1, a[1]); }});
  HostArray idx0{{2, 4}, {2, 0, 1, 2, 0, 0, 2, 1}, i32};
  c.push_back({"gather_axis0", {F({3, 4}, 54), idx0}, [](const T& t) { return t[0].gather(0, t[1]); },
               [](const A& a) { return gather(a[0], 0, a[1]); }});
  HostArray far{{3, 3}, {4, -5, 0, 100, -1, 3, -4, 2, 7}, i32};  // 4, -5, 100, 7 are outside [-4, 4)
  c.push_back({"gather_out_of_range_is_zero", {F({3, 4}, 55), far}, [](const T& t) { return t[0].gather(1, t[1]); },
               [](const A& a) { return gather(a[0], 1, a[1]); }});
  // int64 indices are compared as int64: 2^32 + 1 is out of range, not 1
  HostArray far64{{1, 3}, {4294967297.0, -4294967294.0, 1}, dtypes::int64};
  c.push_back({"gather_int64_index_out_of_range", {F({1, 4}, 56), far64}, [](const T& t) { return t[0].gather(1, t[1]); },
               [](const A& a) { return gather(a[0], 1, a[1]); }});
  // the gathered value is an expression of the table: it is computed at the picked index only
  HostArray pick{{2, 3}, {5, 0, -2, 9, 3, 1}, i32};  // 9 is outside [-6, 6)
  c.push_back({"gather_of_an_expression", {F({2, 6}, 57), pick}, [](const T& t) { return (t[0] * 2.0 + 1.0).exp().gather(1, t[1]); },
               [](const A& a) { return gather(map(a[0], [](double v) { return std::exp(2 * v + 1); }, f32), 1, a[1]); }});
}

// Shapes large enough that the optimizer's actions fire (vector lanes, register tiles, SWAP,
// threads, realized pads, split reduces): the cases above are too small to be tiled.
void add_tiled(std::vector<OpCase>& c) {
  // attention's heads merged back: (p @ v) stored through a transpose and a reshape, its output
  // axis (heads x head size) read as two digits by v (codegen/split_axes.cpp)
  c.push_back({"tiled_heads_merged", {F({2, 3, 16, 16}, 58), F({2, 3, 16, 32}, 57)},
               [](const T& t) { return t[0].matmul(t[1]).transpose(1, 2).reshape({2, 16, 96}); },
               [](const A& a) {
                 HostArray r{{2, 3, 16, 32}, {}, f32};
                 for (int64_t b = 0; b < 6; ++b) {
                   HostArray p = reshape(shrink(reshape(a[0], {6, 16, 16}), {{b, b + 1}, {0, 16}, {0, 16}}), {16, 16});
                   HostArray v = reshape(shrink(reshape(a[1], {6, 16, 32}), {{b, b + 1}, {0, 16}, {0, 32}}), {16, 32});
                   HostArray m = matmul(p, v);
                   r.v.insert(r.v.end(), m.v.begin(), m.v.end());
                 }
                 return reshape(permute(r, {0, 2, 1, 3}), {2, 16, 96});
               }, 1e-4, 1e-5});
  // an embedding lookup in a table longer than a split reduce's threshold (32768 rows): rows
  // picked by index, negative ones from the end, one outside the table (0)
  HostArray rows{{4, 1}, {32999, -1, 12345, 33001}, i32};
  c.push_back({"tiled_embedding", {F({33000, 2}, 59), rows}, [](const T& t) { return t[0].gather(0, t[1].expand({4, 2})); },
               [](const A& a) { return gather(a[0], 0, expand(a[1], {4, 2})); }});
  c.push_back({"tiled_matmul", {F({64, 96}, 60), F({96, 128}, 61)}, [](const T& t) { return t[0].matmul(t[1]); },
               [](const A& a) { return matmul(a[0], a[1]); }, 1e-4, 1e-5});
  // (atol 1e-4: two float32 sums of 256 products of [-2, 2] values, in different orders, differ by
  // up to ~sqrt(256) * 2^-24 * sum|a b| ~ 2.5e-4; an H200 summing in its own order is 5e-6 from the
  // exact 0.0159944 at element 11656 where the sequential float32 sum is 9e-6 from it, 1.4e-5 apart)
  c.push_back({"tiled_matmul_wide", {F({8, 256}, 62), F({256, 2048}, 63)}, [](const T& t) { return t[0].matmul(t[1]); },
               [](const A& a) { return matmul(a[0], a[1]); }, 1e-4, 1e-4});
  c.push_back({"tiled_linear", {F({32, 256}, 64), F({64, 256}, 65), F({64}, 66)},
               [](const T& t) { return t[0].linear(t[1], t[2]).relu(); },
               [](const A& a) {
                 HostArray y = zip(matmul(a[0], permute(a[1], {1, 0})), reshape(a[2], {1, 64}), std::plus<double>(), f32);
                 return map(y, [](double v) { return std::max(v, 0.0); }, f32);
               }, 1e-4, 1e-5});
  c.push_back({"tiled_conv2d_pad", {F({2, 8, 16, 16}, 67), F({16, 8, 3, 3}, 68)},
               [](const T& t) { return t[0].conv2d(t[1], std::nullopt, 1, 1); },
               [](const A& a) { return conv2d(a[0], a[1], 1, 1, 1, 1); }, 1e-4, 1e-5});
  c.push_back({"tiled_softmax", {F({64, 256}, 69)}, [](const T& t) { return t[0].softmax(-1); },
               [](const A& a) {
                 HostArray r = a[0];
                 for (int64_t i = 0; i < 64; ++i) {
                   double m = -INFINITY, s = 0;
                   for (int64_t j = 0; j < 256; ++j) m = std::max(m, r.v[i * 256 + j]);
                   for (int64_t j = 0; j < 256; ++j) s += r.v[i * 256 + j] = std::exp(r.v[i * 256 + j] - m);
                   for (int64_t j = 0; j < 256; ++j) r.v[i * 256 + j] /= s;
                 }
                 return r;
               }});
  c.push_back({"tiled_sum_split", {F({1 << 20}, 70)}, [](const T& t) { return t[0].sum(); },
               [](const A& a) {
                 double s = 0;
                 for (double v : a[0].v) s += v;
                 return HostArray{{}, {s}, f32};
               }, 1e-5, 1e-4});
}

// Reduces of >= 32768 elements per output are split into partial reduces (split_reduce.cpp); a
// prime length is padded with the reduce's identity, which a zero would break for max and prod.
void add_long_reductions(std::vector<OpCase>& c) {
  const int64_t p = 100003;  // prime
  auto sum_ref = [](int axis) {
    return [axis](const A& a) { return reduce(a[0], {axis}, false, std::plus<double>(), 0, f32); };
  };
  c.push_back({"split_sum_prime", {F({p}, 71)}, [](const T& t) { return t[0].sum(); }, sum_ref(0), 1e-5, 1e-4});
  c.push_back({"split_mean_last_axis", {F({2, p}, 72)}, [](const T& t) { return t[0].mean({1}); },
               [p](const A& a) { return map(reduce(a[0], {1}, false, std::plus<double>(), 0, dtypes::float64),
                                            [p](double s) { return s / static_cast<double>(p); }, f32); },
               1e-5, 1e-6});
  c.push_back({"split_max_negative_axis0", {F({p, 2}, 73, -5, -1)}, [](const T& t) { return t[0].max({0}); },
               [](const A& a) { return reduce(a[0], {0}, false, nanmax, -INFINITY, f32); }});
  {  // powers of two, so float32 products are exact (rounding in long products is biased)
    HostArray x{{p}, std::vector<double>(static_cast<size_t>(p), 1.0), f32};
    for (int64_t i = 0; i < p; i += 997) x.v[static_cast<size_t>(i)] = i % 3 == 0 ? 0.5 : i % 3 == 1 ? 2.0 : -1.0;
    c.push_back({"split_prod_prime", {x}, [](const T& t) { return t[0].prod(); },
                 [](const A& a) { return reduce(a[0], {0}, false, std::multiplies<double>(), 1, f32); }});
  }
  c.push_back({"split_max_int_negative", {make_array({p}, i32, 75, -100000, -1)}, [](const T& t) { return t[0].max(); },
               [](const A& a) { return reduce(a[0], {0}, false, [](double x, double y) { return std::max(x, y); }, -1e18, i32); }});
  c.push_back({"split_sum_int8_over_axes", {make_array({3, 2, 20011}, dtypes::int8, 76, -120, 120)},
               [](const T& t) { return t[0].sum({0, 2}); },
               [](const A& a) { return reduce(a[0], {0, 2}, false, std::plus<double>(), 0, i32); }});
}

void add_creation(std::vector<OpCase>& c) {
  // creation ops take their device from a dummy input
  c.push_back({"arange", {F({1})}, [](const T& t) { return Tensor::arange(-3, 5, 0.5, f32, t[0].device()); },
               [](const A&) {
                 HostArray r{{16}, {}, f32};
                 for (int i = 0; i < 16; ++i) r.v.push_back(-3 + 0.5 * i);
                 return r;
               }});
  c.push_back({"arange_int", {F({1})}, [](const T& t) { return Tensor::arange(10, 0, -3, i32, t[0].device()); },
               [](const A&) { return HostArray{{4}, {10, 7, 4, 1}, i32}; }});
  c.push_back({"full_ones_zeros", {F({1})}, [](const T& t) {
                 const std::string& d = t[0].device();
                 return Tensor::full({2, 3}, 2.5, f32, d) + Tensor::ones({3}, f32, d) - Tensor::zeros({2, 1}, f32, d);
               },
               [](const A&) { return HostArray{{2, 3}, std::vector<double>(6, 3.5), f32}; }});
}

}  // namespace

std::vector<OpCase> op_corpus() {
  std::vector<OpCase> c;
  add_elementwise(c);
  add_casts_and_specials(c);
  add_movement(c);
  add_reductions(c);
  add_long_reductions(c);
  add_nn(c);
  add_tiled(c);
  add_creation(c);
  add_half_cases(c);
  return c;
}

namespace {
template <typename V>
Tensor upload_as(const HostArray& a, const std::string& device) {
  std::vector<V> data;
  for (double x : a.v) data.push_back(static_cast<V>(x));
  return Tensor::from_vector<V>(data, a.shape, device);
}
}  // namespace

Tensor upload(const HostArray& a, const std::string& device) {
  switch (a.dtype.scalar()) {
    case Scalar::bool_: {
      std::vector<bool> data;
      for (double x : a.v) data.push_back(x != 0);
      return Tensor::from_vector<bool>(data, a.shape, device);
    }
    case Scalar::int8: return upload_as<int8_t>(a, device);
    case Scalar::int16: return upload_as<int16_t>(a, device);
    case Scalar::int32: return upload_as<int32_t>(a, device);
    case Scalar::int64: return upload_as<int64_t>(a, device);
    case Scalar::uint8: return upload_as<uint8_t>(a, device);
    case Scalar::uint16: return upload_as<uint16_t>(a, device);
    case Scalar::uint32: return upload_as<uint32_t>(a, device);
    case Scalar::uint64: return upload_as<uint64_t>(a, device);
    case Scalar::float64: return upload_as<double>(a, device);
    case Scalar::float32: return upload_as<float>(a, device);
    case Scalar::float16:
    case Scalar::bfloat16: {  // the 16-bit patterns, so the inputs are stored in the type
      std::vector<uint16_t> bits;
      for (double x : a.v) bits.push_back(half_bits(x, a.dtype));
      return Tensor::from_bytes(bits.data(), bits.size() * 2, a.dtype, a.shape, device);
    }
    default: throw std::runtime_error("upload: unsupported dtype " + a.dtype.name());
  }
}

HostArray download(const Tensor& t) {
  HostArray r{t.shape(), {}, t.dtype()};
  DType d = t.dtype();
  if (d.scalar() == Scalar::float16 || d.scalar() == Scalar::bfloat16) {  // the bits, decoded here: no device cast
    std::vector<uint16_t> bits(static_cast<size_t>(t.numel()));
    t.to_bytes(bits.data(), bits.size() * 2);
    for (uint16_t b : bits) r.v.push_back(from_half_bits(b, d));
  } else if (d.is_float()) {
    for (double x : t.to_vector<double>()) r.v.push_back(x);
  } else if (d.is_bool()) {
    for (bool x : t.to_vector<bool>()) r.v.push_back(x);
  } else if (d.scalar() == Scalar::uint64) {
    for (uint64_t x : t.to_vector<uint64_t>()) r.v.push_back(static_cast<double>(x));
  } else {
    for (int64_t x : t.to_vector<int64_t>()) r.v.push_back(static_cast<double>(x));
  }
  return r;
}

HostArray run_case(const OpCase& c, const std::string& device) {
  std::vector<Tensor> in;
  for (const HostArray& a : c.inputs) in.push_back(upload(a, device));
  Tensor out = c.build(in);
  return download(out);
}

HostArray expected(const OpCase& c) { return c.bounded ? c.reference(c.inputs) : run_case(c, "ref"); }

std::string compare(const HostArray& got, const HostArray& want, double rtol, double atol) {
  std::ostringstream os;
  if (got.shape != want.shape) {
    os << "shape mismatch: got (";
    for (auto d : got.shape) os << d << ",";
    os << ") want (";
    for (auto d : want.shape) os << d << ",";
    os << ")";
    return os.str();
  }
  if (!(got.dtype == want.dtype)) return "dtype mismatch: got " + got.dtype.name() + " want " + want.dtype.name();
  for (size_t i = 0; i < got.v.size(); ++i) {
    double g = got.v[i], w = want.v[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else if (got.dtype.is_float()) ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    else ok = g == w;
    if (!ok) {
      os << "element " << i << ": got " << g << " want " << w;
      return os.str();
    }
  }
  return "";
}

}  // namespace kiln::testing
