// tests/ops/struct_test.cpp - the structural ops (running reductions, argmin, sort and topk, einsum,
// triangles, one_hot, masked_fill, scatter, repeat, split, unfold, meshgrid, diagonals, roll,
// unflatten, pad modes, interpolate) against plain C++ references written here, gradients against
// finite differences, and the errors they raise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Line = std::vector<double>;
using Inputs = std::vector<std::pair<std::vector<double>, Shape>>;


// Applies f to every line of x (shape s) along axis a; f returns the line's replacement (length m).
std::vector<double> along(const std::vector<double>& x, const Shape& s, int a, const std::function<Line(const Line&)>& f, int64_t m) {
  int64_t outer = 1, inner = 1, n = s[a];
  for (int i = 0; i < a; ++i) outer *= s[i];
  for (size_t i = a + 1; i < s.size(); ++i) inner *= s[i];
  std::vector<double> out(static_cast<size_t>(outer * m * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      Line l(n);
      for (int64_t k = 0; k < n; ++k) l[k] = x[(o * n + k) * inner + in];
      Line r = f(l);
      for (int64_t k = 0; k < m; ++k) out[(o * m + k) * inner + in] = r[k];
    }
  return out;
}

Line running(const Line& l, double init, const std::function<double(double, double)>& op) {
  Line r(l.size());
  double acc = init;
  for (size_t i = 0; i < l.size(); ++i) r[i] = acc = op(acc, l[i]);
  return r;
}

// torch's cummax index: the last position holding the running max (ties included)
Line running_argmax(const Line& l) {
  Line r(l.size());
  size_t best = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i] >= l[best]) best = i;
    r[i] = static_cast<double>(best);
  }
  return r;
}

std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

bool mentions(const kiln::Error& e, const std::string& what) { return std::string(e.what()).find(what) != std::string::npos; }

#define EXPECT_ERROR(stmt, text)                                                               \
  try {                                                                                        \
    (void)(stmt);                                                                              \
    ADD_FAILURE() << #stmt " did not throw";                                                   \
  } catch (const kiln::Error& e) {                                                             \
    EXPECT_TRUE(mentions(e, text)) << "message '" << e.what() << "' does not mention " << text; \
  }

}  // namespace

// ---- running reductions ----

TEST(StructScan, CumsumAndCumprodAlongEveryAxis) {
  const Shape s{3, 4, 5};
  auto x = sample(s, 1, 0.5, 1.5);
  for (int axis : {0, 1, 2, -1, -3}) {
    int a = axis < 0 ? axis + 3 : axis;
    auto sum = along(x, s, a, [](const Line& l) { return running(l, 0, std::plus<>()); }, s[a]);
    auto prod = along(x, s, a, [](const Line& l) { return running(l, 1, std::multiplies<>()); }, s[a]);
    EXPECT_EQ(compare(host_tensor(x, s).cumsum(axis), s, sum), "") << "axis " << axis;
    EXPECT_EQ(compare(host_tensor(x, s).cumprod(axis), s, prod), "") << "axis " << axis;
  }
}

TEST(StructScan, EmptyAxesScalarsAndIntegers) {
  EXPECT_EQ(host_tensor({}, {2, 0, 4}).cumsum(1).shape(), (Shape{2, 0, 4}));
  EXPECT_EQ(host_tensor({}, {2, 3, 0}).cumprod(2).shape(), (Shape{2, 3, 0}));
  EXPECT_EQ(host_tensor({}, {0, 3}).cummax(0).second.shape(), (Shape{0, 3}));
  EXPECT_EQ(compare(host_tensor({2.5}, {}).cumsum(0), {}, {2.5}), "");
  EXPECT_EQ(compare(host_tensor({2.5}, {}).cumsum(-1), {}, {2.5}), "");
  Tensor ints = host_tensor({1, 2, 3, 4}, {4}, dtypes::int32).cumsum();
  EXPECT_EQ(ints.dtype(), dtypes::int32);
  EXPECT_EQ(compare(ints, {4}, {1, 3, 6, 10}), "");
  EXPECT_ERROR(host_tensor({1}, {}).cumsum(1), "axis 1");
  EXPECT_ERROR(host_tensor(sample({5}, 2), {5}).cumsum(-2), "axis -2");
}

TEST(StructScan, CummaxAndCumminPickTheLastTiedIndexAsTorch) {
  Tensor x = host_tensor({1, 3, 3, 2, 3, 0}, {6});
  auto [v, i] = x.cummax(0);
  EXPECT_EQ(i.dtype(), dtypes::int32);
  EXPECT_EQ(compare(v, {6}, {1, 3, 3, 3, 3, 3}), "");
  EXPECT_EQ(compare(i, {6}, {0, 1, 2, 2, 4, 4}), "");
  auto [mv, mi] = (-x).cummin(0);
  EXPECT_EQ(compare(mv, {6}, {-1, -3, -3, -3, -3, -3}), "");
  EXPECT_EQ(compare(mi, {6}, {0, 1, 2, 2, 4, 4}), "");
  // integer extremes (an order-reversal by negation would overflow)
  Tensor big = host_tensor({0, -2147483648.0, 5}, {3}, dtypes::int32);
  EXPECT_EQ(compare(big.cummin(0).first, {3}, {0, -2147483648.0, -2147483648.0}), "");
  EXPECT_EQ(compare(big.cummin(0).second, {3}, {0, 1, 1}), "");
}

TEST(StructScan, CummaxAlongAnAxisMatchesTheReference) {
  const Shape s{4, 5, 3};
  auto x = sample(s, 3);
  for (int axis : {1, -1}) {
    int a = axis < 0 ? axis + 3 : axis;
    auto want = along(x, s, a, [](const Line& l) { return running(l, -INFINITY, [](double p, double q) { return std::max(p, q); }); }, s[a]);
    auto idx = along(x, s, a, running_argmax, s[a]);
    auto [v, i] = host_tensor(x, s).cummax(axis);
    EXPECT_EQ(compare(v, s, want), "") << "axis " << axis;
    EXPECT_EQ(compare(i, s, idx), "") << "axis " << axis;
  }
}

TEST(StructScan, GradientsOfRunningOps) {
  Inputs in{{sample({3, 4}, 4, 0.5, 1.5), {3, 4}}};
  auto w = [](const Tensor& t) { return t * Tensor::arange(1, 5, 1, dtypes::float64, kOpsDevice); };  // weights: not a plain sum
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].cumsum(1)); }, in), "");
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].cumprod(-1)); }, in), "");
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].cummax(1).first); }, in), "");
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].cummin(1).first); }, in), "");
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].logcumsumexp(1)); }, in), "");
}

TEST(StructScan, LogcumsumexpIsStableForLargeGaps) {
  const Shape s{3, 5};
  auto x = sample(s, 5, -3, 3);
  auto want = along(x, s, 1, [](const Line& l) {
    Line r(l.size());
    for (size_t i = 0; i < l.size(); ++i) {
      double m = *std::max_element(l.begin(), l.begin() + i + 1), acc = 0;
      for (size_t j = 0; j <= i; ++j) acc += std::exp(l[j] - m);
      r[i] = m + std::log(acc);
    }
    return r;
  }, 5);
  EXPECT_EQ(compare(host_tensor(x, s).logcumsumexp(1), s, want), "");
  EXPECT_EQ(compare(host_tensor({0, 100, -100}, {3}).logcumsumexp(0), {3}, {0, 100, 100}), "");
  EXPECT_EQ(compare(host_tensor({-INFINITY, -INFINITY, 1}, {3}).logcumsumexp(0), {3}, {-INFINITY, -INFINITY, 1}), "");
  // d/dx0 of log(e^0 + e^100) is ~e^-100: finite, not NaN
  Tensor x2 = host_tensor({0, 100}, {2}, dtypes::float64);
  auto g = x2.logcumsumexp(0).sum().gradient({x2})[0].to_vector<double>();
  EXPECT_NEAR(g[0], 1.0, 1e-12);
  EXPECT_NEAR(g[1], 1.0, 1e-12);
}

TEST(StructScan, ArgminIsTheFirstMinimum) {
  EXPECT_EQ(host_tensor({3, 2, 2}, {3}).argmin(0).item<int32_t>(), 1);
  EXPECT_EQ(host_tensor({2, 2}, {2}).argmin(0).item<int32_t>(), 0);
  EXPECT_EQ(host_tensor({0, -2147483648.0}, {2}, dtypes::int32).argmin(0).item<int32_t>(), 1);
  EXPECT_EQ(host_tensor({1, 0}, {2}, dtypes::bool_).argmin(0).item<int32_t>(), 1);
  const Shape s{4, 6};
  auto x = sample(s, 6);
  auto want = along(x, s, 0, [](const Line& l) { return Line{static_cast<double>(std::min_element(l.begin(), l.end()) - l.begin())}; }, 1);
  EXPECT_EQ(compare(host_tensor(x, s).argmin(0, true), {1, 6}, want), "");
  EXPECT_ERROR(host_tensor(x, s).argmin(2), "argmin");
}

// ---- sort, argsort, topk ----

TEST(StructSort, StableSortBothWaysAlongEveryAxis) {
  const Shape s{4, 5, 3};
  auto x = sample(s, 7);
  for (int v = 0; v < 10; ++v) x[v * 3] = 0.25;  // ties
  for (int axis : {0, 1, -1})
    for (bool desc : {false, true}) {
      int a = axis < 0 ? axis + 3 : axis;
      auto order = [&](const Line& l) {
        std::vector<size_t> p(l.size());
        std::iota(p.begin(), p.end(), 0);
        std::stable_sort(p.begin(), p.end(), [&](size_t i, size_t j) { return desc ? l[i] > l[j] : l[i] < l[j]; });
        return p;
      };
      auto vals = along(x, s, a, [&](const Line& l) { Line r; for (size_t i : order(l)) r.push_back(l[i]); return r; }, s[a]);
      auto idx = along(x, s, a, [&](const Line& l) { Line r; for (size_t i : order(l)) r.push_back(static_cast<double>(i)); return r; }, s[a]);
      auto [sv, si] = host_tensor(x, s).sort(axis, desc);
      EXPECT_EQ(compare(sv, s, vals), "") << "axis " << axis << " descending " << desc;
      EXPECT_EQ(compare(si, s, idx), "") << "axis " << axis << " descending " << desc;
      EXPECT_EQ(compare(host_tensor(x, s).argsort(axis, desc), s, idx), "");
    }
}

TEST(StructSort, RepeatedValuesEmptyAndNaN) {
  std::vector<double> alt;
  for (int i = 0; i < 18; ++i) alt.push_back(i % 2);
  auto [v, i] = host_tensor(alt, {18}).sort(0, true);
  std::vector<double> want_i;
  for (int k = 1; k < 18; k += 2) want_i.push_back(k);
  for (int k = 0; k < 18; k += 2) want_i.push_back(k);
  EXPECT_EQ(compare(i, {18}, want_i), "");
  EXPECT_EQ(host_tensor({}, {0, 5}).sort(0).first.shape(), (Shape{0, 5}));
  // NaN sorts last (torch)
  auto [nv, ni] = host_tensor({NAN, 1, -1}, {3}).sort(0);
  EXPECT_EQ(compare(ni, {3}, {2, 1, 0}), "");
}

TEST(StructSort, TopkTakesTheFirstOfTiesAndChecksK) {
  auto [v, i] = host_tensor({1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0}, {14}).topk(3);
  EXPECT_EQ(compare(v, {3}, {1, 1, 1}), "");
  EXPECT_EQ(compare(i, {3}, {0, 1, 3}), "");
  auto [sv, si] = host_tensor({1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0}, {14}).topk(3, -1, false);
  EXPECT_EQ(compare(si, {3}, {2, 4, 6}), "");
  Tensor m = host_tensor({5, 1, 4, 2, 8, 0}, {2, 3});
  EXPECT_EQ(compare(m.topk(2, 1).first, {2, 2}, {5, 4, 8, 2}), "");
  EXPECT_EQ(compare(m.topk(1, 0, false).second, {1, 3}, {1, 0, 1}), "");
  EXPECT_ERROR(host_tensor(sample({4}, 1), {4}).topk(5), "k = 5");
}

// A few of a long row are picked by rounds of selection (scan.cpp, select_topk_indices) rather
// than the sort: the same k indices as a stable sort with NaN largest, for ties, NaN, infinities,
// the integer extremes and bool, along either axis, both ways.
TEST(StructSort, TopkOfFewFromLongRowsIsAStableSortsFirstK) {
  std::mt19937 rng(5);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<DType, std::vector<double>>> pools = {
      {dtypes::float32, {-2, -1, 0, 1, 2, NAN, inf, -inf}},
      {dtypes::int32, {-2147483648.0, 2147483647.0, 0, 1, -1}},
      {dtypes::uint8, {0, 1, 255}},
      {dtypes::bool_, {0, 1}}};
  for (const auto& [dtype, pool] : pools)
    for (int64_t n : {97, 300})
      for (int64_t k : {1, 16})
        for (bool largest : {true, false})
          for (int axis : {0, 1}) {
            if ((n == 300 && (axis == 0 || dtype != dtypes::float32)) || (k == 1 && axis == 0)) continue;
            SCOPED_TRACE(std::string(dtype.name()) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                         (largest ? " largest" : " smallest") + " axis " + std::to_string(axis));
            const int64_t rows = 3;
            std::vector<double> lines(size_t(rows * n));
            for (double& v : lines) v = pool[rng() % pool.size()];
            // the rows along `axis`: (rows, n) for axis 1, its transpose for axis 0
            std::vector<double> x(lines.size());
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t j = 0; j < n; ++j) x[size_t(axis == 1 ? r * n + j : j * rows + r)] = lines[size_t(r * n + j)];
            const Shape shape = axis == 1 ? Shape{rows, n} : Shape{n, rows};
            std::vector<double> want(size_t(rows * k));
            for (int64_t r = 0; r < rows; ++r) {
              const double* l = &lines[size_t(r * n)];
              std::vector<int64_t> p(static_cast<size_t>(n));
              std::iota(p.begin(), p.end(), 0);
              std::stable_sort(p.begin(), p.end(), [&](int64_t i, int64_t j) {
                const bool ni = std::isnan(l[i]), nj = std::isnan(l[j]);
                if (ni || nj) return largest ? ni && !nj : !ni && nj;
                return largest ? l[i] > l[j] : l[i] < l[j];
              });
              for (int64_t q = 0; q < k; ++q) want[size_t(axis == 1 ? r * k + q : q * rows + r)] = double(p[size_t(q)]);
            }
            auto [v, i] = host_tensor(x, shape, dtype).topk(k, axis, largest);
            EXPECT_EQ(compare(i, axis == 1 ? Shape{rows, k} : Shape{k, rows}, want, 0, 0), "");
          }
}

TEST(StructSort, GradientsGoToThePickedElements) {
  Inputs in{{sample({2, 5}, 8), {2, 5}}};
  auto w = [](const Tensor& t) { return t * Tensor::arange(1, 1 + static_cast<double>(t.shape().back()), 1, dtypes::float64, kOpsDevice); };
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].sort(1).first); }, in), "");
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].sort(0, true).first); }, in), "");
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].topk(3, 1).first); }, in), "");
  Inputs row{{sample({2, 70}, 9), {2, 70}}};  // long enough for topk's selection rounds
  EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& x) { return w(x[0].topk(3, 1).first); }, row), "");
}

// ---- einsum ----

TEST(StructEinsum, CommonForms) {
  auto a = sample({3, 4}, 9), b = sample({4, 5}, 10), v = sample({4}, 11), sq = sample({4, 4}, 12);
  Tensor A = host_tensor(a, {3, 4}), B = host_tensor(b, {4, 5}), V = host_tensor(v, {4}), S = host_tensor(sq, {4, 4});
  std::vector<double> mm(15, 0), mv(3, 0), tr(1, 0), dg(4), at(12), outer(16), rows(3, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 4; ++k) mm[i * 5 + j] += a[i * 4 + k] * b[k * 5 + j];
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 4; ++k) mv[i] += a[i * 4 + k] * v[k], rows[i] += a[i * 4 + k], at[k * 3 + i] = a[i * 4 + k];
  for (int i = 0; i < 4; ++i) {
    tr[0] += sq[i * 5], dg[i] = sq[i * 5];
    for (int j = 0; j < 4; ++j) outer[i * 4 + j] = v[i] * v[j];
  }
  EXPECT_EQ(compare(Tensor::einsum("ik,kj->ij", {A, B}), {3, 5}, mm), "");
  EXPECT_EQ(compare(Tensor::einsum("ik, kj", {A, B}), {3, 5}, mm), "");
  EXPECT_EQ(compare(Tensor::einsum("ik,k->i", {A, V}), {3}, mv), "");
  EXPECT_EQ(compare(Tensor::einsum("ij->ji", {A}), {4, 3}, at), "");
  EXPECT_EQ(compare(Tensor::einsum("ji", {A}), {4, 3}, at), "");  // implicit output: sorted letters
  EXPECT_EQ(compare(Tensor::einsum("ii->", {S}), {}, tr), "");
  EXPECT_EQ(compare(Tensor::einsum("ii->i", {S}), {4}, dg), "");
  EXPECT_EQ(compare(Tensor::einsum("i,j->ij", {V, V}), {4, 4}, outer), "");
  EXPECT_EQ(compare(Tensor::einsum("ij->i", {A}), {3}, rows), "");
  EXPECT_EQ(compare(Tensor::einsum("->", {host_tensor({2.5}, {})}), {}, {2.5}), "");
}

TEST(StructEinsum, BatchAndEllipsis) {
  auto a = sample({2, 3, 4}, 13), b = sample({2, 4, 5}, 14);
  std::vector<double> bmm(30, 0), perm(30);
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 4; ++k) bmm[(n * 3 + i) * 5 + j] += a[(n * 3 + i) * 4 + k] * b[(n * 4 + k) * 5 + j];
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) perm[(i * 2 + n) * 5 + j] = bmm[(n * 3 + i) * 5 + j];
  Tensor A = host_tensor(a, {2, 3, 4}), B = host_tensor(b, {2, 4, 5});
  EXPECT_EQ(compare(Tensor::einsum("nik,nkj->nij", {A, B}), {2, 3, 5}, bmm), "");
  EXPECT_EQ(compare(Tensor::einsum("nik,nkj->inj", {A, B}), {3, 2, 5}, perm), "");
  EXPECT_EQ(compare(Tensor::einsum("...ik,...kj->...ij", {A, B}), {2, 3, 5}, bmm), "");
  // "..." broadcasts between operands of different ranks and comes first in an implicit output
  auto c = sample({4, 5}, 15);
  std::vector<double> bc(30, 0);
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 4; ++k) bc[(n * 3 + i) * 5 + j] += a[(n * 3 + i) * 4 + k] * c[k * 5 + j];
  EXPECT_EQ(compare(Tensor::einsum("...ik,kj", {A, host_tensor(c, {4, 5})}), {2, 3, 5}, bc), "");
  // batch trace
  auto s = sample({3, 4, 4}, 16);
  std::vector<double> trs(3, 0);
  for (int n = 0; n < 3; ++n)
    for (int i = 0; i < 4; ++i) trs[n] += s[n * 16 + i * 5];
  EXPECT_EQ(compare(Tensor::einsum("...ii->...", {host_tensor(s, {3, 4, 4})}), {3}, trs), "");
}

TEST(StructEinsum, ErrorsNameTheProblem) {
  Tensor A = host_tensor(sample({3, 4}, 1), {3, 4}), B = host_tensor(sample({5, 6}, 2), {5, 6});
  EXPECT_ERROR(Tensor::einsum("ij,jk->ik", {A}), "2 operand subscripts but 1");
  EXPECT_ERROR(Tensor::einsum("ij,jk->ij", {A, A, A}), "2 operand subscripts but 3");
  EXPECT_ERROR(Tensor::einsum("ij,jk->ik", {A, B}), "label 'j'");
  EXPECT_ERROR(Tensor::einsum("ijk->i", {A}), "names 3");
  EXPECT_ERROR(Tensor::einsum("...i...->i", {A}), "more than one ellipsis");
  EXPECT_ERROR(Tensor::einsum("i1->i", {A}), "invalid character");
  EXPECT_ERROR(Tensor::einsum("ij->z", {A}), "'z'");
}

TEST(StructEinsum, Gradients) {
  Inputs in{{sample({2, 3}, 17), {2, 3}}, {sample({3, 4}, 18), {3, 4}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return Tensor::einsum("ij,jk->ki", {x[0], x[1]}); }, in), "");
  Inputs sq{{sample({3, 3}, 19), {3, 3}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return Tensor::einsum("ii->i", {x[0]}) * x[0].sum(); }, sq), "");
}

// ---- masks, one_hot, scatter ----

TEST(StructMasks, TrilTriuForEveryDiagonal) {
  const Shape s{2, 4, 5};
  auto x = sample(s, 20);
  for (int64_t d = -5; d <= 6; ++d) {
    std::vector<double> lo(x.size()), hi(x.size());
    for (int n = 0; n < 2; ++n)
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 5; ++c) {
          size_t i = (n * 4 + r) * 5 + c;
          lo[i] = c - r <= d ? x[i] : 0;
          hi[i] = c - r >= d ? x[i] : 0;
        }
    EXPECT_EQ(compare(host_tensor(x, s).tril(d), s, lo), "") << "diagonal " << d;
    EXPECT_EQ(compare(host_tensor(x, s).triu(d), s, hi), "") << "diagonal " << d;
  }
  EXPECT_EQ(host_tensor({}, {5, 0, 3}).tril().shape(), (Shape{5, 0, 3}));
  EXPECT_EQ(host_tensor({1, 1, 1, 1}, {2, 2}, dtypes::bool_).triu().dtype(), dtypes::bool_);
  EXPECT_ERROR(host_tensor({1, 2}, {2}).tril(), "at least 2 dimensions");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].tril(-1) * x[0]; }, Inputs{{sample({3, 3}, 21), {3, 3}}}), "");
}

TEST(StructMasks, OneHotAndMaskedFill) {
  Tensor oh = host_tensor({1, 2, 4, 0}, {2, 2}, dtypes::int32).one_hot(5);
  EXPECT_EQ(oh.dtype(), dtypes::int32);
  EXPECT_EQ(compare(oh, {2, 2, 5}, {0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}), "");
  EXPECT_ERROR(host_tensor({1}, {1}, dtypes::int32).one_hot(-1), "num_classes");
  EXPECT_ERROR(host_tensor({1}, {1}).one_hot(3), "integer");
  auto x = sample({2, 3}, 22);
  std::vector<double> want(x);
  for (double& v : want) v = v > 0.1 ? -INFINITY : v;
  Tensor t = host_tensor(x, {2, 3});
  EXPECT_EQ(compare(t.masked_fill(t.gt(host_tensor({0.1}, {})), -INFINITY), {2, 3}, want), "");
  Inputs in{{x, {2, 3}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) { return v[0].masked_fill(v[0].gt(host_tensor({0.1}, {}, dtypes::float64)).detach(), 3.0) * v[0]; }, in), "");
}

TEST(StructScatter, ReplaceWithTheLastWriteWinning) {
  // self (3, 4), index (2, 3) along axis 0, src (2, 4)
  auto self = sample({3, 4}, 23), src = sample({2, 4}, 24);
  std::vector<double> idx{0, 2, 0, 0, 1, 0};
  std::vector<double> want(self);
  for (int p = 0; p < 2; ++p)
    for (int c = 0; c < 3; ++c) want[static_cast<size_t>(idx[p * 3 + c]) * 4 + c] = src[p * 4 + c];
  Tensor index = host_tensor(idx, {2, 3}, dtypes::int32);
  EXPECT_EQ(compare(host_tensor(self, {3, 4}).scatter(0, index, host_tensor(src, {2, 4})), {3, 4}, want), "");
  // repeated index: the last write wins
  EXPECT_EQ(compare(host_tensor({1, 2, 3, 4}, {4}).scatter(0, host_tensor({0, 0}, {2}, dtypes::int32), host_tensor({1, 0}, {2})), {4},
                    {0, 2, 3, 4}),
            "");
  // a scalar src, and the reduce forms on it
  EXPECT_EQ(compare(Tensor::full({2, 4}, 2.0, dtypes::float32, kOpsDevice).scatter(1, host_tensor({2, 3}, {2, 1}, dtypes::int32), 1.5, "multiply"),
                    {2, 4}, {2, 2, 3, 2, 2, 2, 2, 3}),
            "");
  EXPECT_EQ(compare(Tensor::full({2, 4}, 2.0, dtypes::float32, kOpsDevice).scatter(-1, host_tensor({2, 3}, {2, 1}, dtypes::int32), 1.5, "add"),
                    {2, 4}, {2, 2, 3.5, 2, 2, 2, 2, 3.5}),
            "");
  // src takes the gradient where it lands (and only the last of repeated writes), self elsewhere
  Inputs in{{sample({4}, 25), {4}}, {sample({3}, 26), {3}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) {
              return v[0].scatter(0, host_tensor({1, 3, 1}, {3}, dtypes::int32), v[1]) * Tensor::arange(1, 5, 1, dtypes::float64, kOpsDevice);
            },
            in),
            "");
}

TEST(StructScatter, ReduceModesWithAndWithoutSelf) {
  auto self = sample({2, 3}, 27, 0.5, 2), src = sample({2, 3}, 28, 0.5, 2);
  std::vector<double> idx{0, 0, 2, 1, 0, 1};  // along axis 1
  auto ref = [&](const std::string& reduce, bool include) {
    std::vector<double> out(6);
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 3; ++k) {
        std::vector<double> hits;
        for (int p = 0; p < 3; ++p)
          if (idx[r * 3 + p] == k) hits.push_back(src[r * 3 + p]);
        double s = self[r * 3 + k];
        if (hits.empty()) { out[r * 3 + k] = s; continue; }
        if (include) hits.push_back(s);
        double acc = reduce == "prod" ? 1 : reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : 0;
        for (double h : hits)
          acc = reduce == "prod" ? acc * h : reduce == "amax" ? std::max(acc, h) : reduce == "amin" ? std::min(acc, h) : acc + h;
        out[r * 3 + k] = reduce == "mean" ? acc / static_cast<double>(hits.size()) : acc;
      }
    return out;
  };
  Tensor index = host_tensor(idx, {2, 3}, dtypes::int32);
  for (std::string reduce : {"sum", "prod", "mean", "amax", "amin"})
    for (bool include : {true, false})
      EXPECT_EQ(compare(host_tensor(self, {2, 3}).scatter_reduce(1, index, host_tensor(src, {2, 3}), reduce, include), {2, 3},
                        ref(reduce, include)),
                "")
          << reduce << " include_self " << include;
}

TEST(StructScatter, Errors) {
  Tensor self = host_tensor(sample({3, 4}, 1), {3, 4}), idx = host_tensor({0, 1}, {1, 2}, dtypes::int32);
  EXPECT_ERROR(self.scatter_reduce(0, idx, self, "median"), "'median'");
  EXPECT_ERROR(self.scatter(0, idx, self, "typo"), "'typo'");
  EXPECT_ERROR(self.scatter(0, idx, self.cast(dtypes::float16)), "dtype");
  EXPECT_ERROR(self.scatter(0, host_tensor({0, 1}, {1, 2}), self), "integer");
  EXPECT_ERROR(self.scatter(0, host_tensor({0, 1}, {2}, dtypes::int32), self), "number of dimensions");
  EXPECT_ERROR(self.scatter(0, host_tensor(std::vector<double>(10, 0), {1, 10}, dtypes::int32), self), "no larger");
}

TEST(StructMasks, MaskedSelectAndNonzero) {
  Tensor t = host_tensor(iota(9), {9});
  Tensor mask = host_tensor({1, 0, 1, 0, 1, 0, 0, 0, 1}, {9}, dtypes::bool_);
  EXPECT_EQ(compare(t.masked_select(mask), {4}, {0, 2, 4, 8}), "");
  EXPECT_EQ(compare(t.masked_select(mask, 6, -1), {6}, {0, 2, 4, 8, -1, -1}), "");
  EXPECT_EQ(compare(t.masked_select(mask, 2), {2}, {0, 2}), "");
  EXPECT_EQ(compare(host_tensor({}, {0}, dtypes::int32).masked_select(host_tensor({}, {0}, dtypes::bool_), 2, -1), {2}, {-1, -1}), "");
  // a mask broadcast over rows
  auto x = sample({3, 4}, 43);
  Tensor cols = host_tensor({0, 1, 1, 0}, {4}, dtypes::bool_);
  EXPECT_EQ(compare(host_tensor(x, {3, 4}).masked_select(cols), {6}, {x[1], x[2], x[5], x[6], x[9], x[10]}), "");
  EXPECT_ERROR(t.masked_select(t), "bool");
  Tensor nz = host_tensor({1, 0, 0, 2, 0, 3}, {2, 3}).nonzero();
  EXPECT_EQ(nz.dtype(), dtypes::int32);
  EXPECT_EQ(compare(nz, {3, 2}, {0, 0, 1, 0, 1, 2}), "");
  EXPECT_EQ(compare(host_tensor({1, 0, 2}, {3}).nonzero(4, -1), {4, 1}, {0, 2, -1, -1}), "");
  EXPECT_EQ(host_tensor({5}, {}).nonzero().shape(), (Shape{1, 0}));
  EXPECT_EQ(host_tensor({0}, {}).nonzero().shape(), (Shape{0, 0}));
  // the selected elements take the gradient
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) {
              return v[0].masked_select(host_tensor({1, 0, 1, 1}, {2, 2}, dtypes::bool_)) * Tensor::arange(1, 4, 1, dtypes::float64, kOpsDevice);
            },
            Inputs{{sample({2, 2}, 44), {2, 2}}}),
            "");
}

// ---- repeat, split, unfold, meshgrid ----

TEST(StructShape, RepeatAndRepeatInterleave) {
  auto x = sample({2, 3}, 30);
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k)
          for (int j = 0; j < 3; ++j) want.push_back(x[i * 3 + j]);
  EXPECT_EQ(compare(host_tensor(x, {2, 3}).repeat({2, 2, 2}), {2, 4, 6}, want), "");
  EXPECT_EQ(host_tensor(x, {2, 3}).repeat({2, 0}).shape(), (Shape{4, 0}));
  EXPECT_ERROR(host_tensor(x, {2, 3}).repeat({2}), "at least one per dimension");
  std::vector<double> ri;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int r = 0; r < 2; ++r) ri.push_back(x[i * 3 + j]);
  EXPECT_EQ(compare(host_tensor(x, {2, 3}).repeat_interleave(2, -1), {2, 6}, ri), "");
  EXPECT_EQ(compare(host_tensor(x, {2, 3}).repeat_interleave(2), {12}, ri), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) { return v[0].repeat({3, 2}) * v[0].repeat({3, 2}); }, Inputs{{x, {2, 3}}}), "");
}

TEST(StructShape, SplitAndChunk) {
  Tensor x = host_tensor(iota(13), {13});
  auto parts = x.split_size(5);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(compare(parts[2], {3}, {10, 11, 12}), "");
  auto sized = x.split({1, 4, 8});
  ASSERT_EQ(sized.size(), 3u);
  EXPECT_EQ(compare(sized[1], {4}, {1, 2, 3, 4}), "");
  EXPECT_ERROR(x.split({1, 4}), "sum to 5");
  auto ch = x.reshape({1, 13}).chunk(6, -1);  // ceil(13 / 6) = 3: five pieces, as torch
  ASSERT_EQ(ch.size(), 5u);
  EXPECT_EQ(compare(ch[4], {1, 1}, {12}), "");
  EXPECT_ERROR(x.chunk(0), "positive");
}

TEST(StructShape, UnfoldWindows) {
  auto x = sample({2, 8}, 31);
  for (auto [size, step] : std::vector<std::pair<int64_t, int64_t>>{{2, 1}, {2, 2}, {7, 3}, {3, 8}, {0, 8}}) {
    const int64_t w = (8 - size) / step + 1;
    std::vector<double> want;
    for (int r = 0; r < 2; ++r)
      for (int64_t o = 0; o < w; ++o)
        for (int64_t k = 0; k < size; ++k) want.push_back(x[r * 8 + o * step + k]);
    EXPECT_EQ(compare(host_tensor(x, {2, 8}).unfold(-1, size, step), {2, w, size}, want), "") << size << ", " << step;
  }
  EXPECT_ERROR(host_tensor(x, {2, 8}).unfold(1, 9, 3), "window size 9");
  EXPECT_ERROR(host_tensor(x, {2, 8}).unfold(1, 1, -1), "step");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) { return v[0].unfold(0, 3, 2) * v[0].unfold(0, 3, 2); }, Inputs{{sample({7}, 32), {7}}}), "");
}

TEST(StructShape, Meshgrid) {
  Tensor a = host_tensor({0, 1, 2}, {3}), b = host_tensor({3, 4}, {2});
  auto ij = Tensor::meshgrid({a, b});
  EXPECT_EQ(compare(ij[0], {3, 2}, {0, 0, 1, 1, 2, 2}), "");
  EXPECT_EQ(compare(ij[1], {3, 2}, {3, 4, 3, 4, 3, 4}), "");
  auto xy = Tensor::meshgrid({a, b}, "xy");
  EXPECT_EQ(compare(xy[0], {2, 3}, {0, 1, 2, 0, 1, 2}), "");
  EXPECT_EQ(compare(xy[1], {2, 3}, {3, 3, 3, 4, 4, 4}), "");
  EXPECT_ERROR(Tensor::meshgrid({a}, "yx"), "'yx'");
}

// ---- diagonals, roll, unflatten ----

TEST(StructShape, DiagAndDiagonal) {
  auto v = sample({4}, 33);
  std::vector<double> d(16, 0);
  for (int i = 0; i < 4; ++i) d[i * 5] = v[i];
  EXPECT_EQ(compare(host_tensor(v, {4}).diag(), {4, 4}, d), "");
  EXPECT_ERROR(host_tensor(d, {4, 4}).diag(), "1-d");
  const Shape s{2, 3, 5};
  auto x = sample(s, 34);
  for (int64_t off : {-2, -1, 0, 1, 3, 5}) {
    std::vector<double> want;
    int64_t n = 0;
    for (int b = 0; b < 2; ++b) {
      n = 0;
      for (int r = 0; r < 3; ++r) {
        int64_t c = r + off;
        if (c >= 0 && c < 5) want.push_back(x[(b * 3 + r) * 5 + c]), ++n;
      }
    }
    EXPECT_EQ(compare(host_tensor(x, s).diagonal(off, -2, -1), {2, n}, want), "") << "offset " << off;
  }
  // over dims (0, 2): the remaining dim first, the diagonal last
  std::vector<double> want02;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 2; ++i) want02.push_back(x[(i * 3 + r) * 5 + i]);
  EXPECT_EQ(compare(host_tensor(x, s).diagonal(0, 0, 2), {3, 2}, want02), "");
  EXPECT_ERROR(host_tensor(x, s).diagonal(0, 1, -2), "same dimension");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& t) { return t[0].diagonal(1) * t[0].diagonal(1); }, Inputs{{sample({3, 4}, 35), {3, 4}}}), "");
}

TEST(StructShape, RollAndUnflatten) {
  auto x = sample({2, 4}, 36);
  auto rolled = [&](int64_t s0, int64_t s1) {
    std::vector<double> out(8);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) out[((i + s0) % 2 + 2) % 2 * 4 + ((j + s1) % 4 + 4) % 4] = x[i * 4 + j];
    return out;
  };
  EXPECT_EQ(compare(host_tensor(x, {2, 4}).roll({1}, {-1}), {2, 4}, rolled(0, 1)), "");
  EXPECT_EQ(compare(host_tensor(x, {2, 4}).roll({-5, 7}, {0, 1}), {2, 4}, rolled(-5, 7)), "");
  std::vector<double> flat(8);
  for (int k = 0; k < 8; ++k) flat[(k + 3) % 8] = x[k];
  EXPECT_EQ(compare(host_tensor(x, {2, 4}).roll({3}, {}), {2, 4}, flat), "");
  EXPECT_EQ(host_tensor({}, {2, 0, 3}).roll({1}, {1}).shape(), (Shape{2, 0, 3}));
  EXPECT_ERROR(host_tensor(x, {2, 4}).roll({1, 2}, {}), "2 shifts");
  EXPECT_EQ(host_tensor(sample({4, 6}, 1), {4, 6}).unflatten(-1, {3, -1}).shape(), (Shape{4, 3, 2}));
  EXPECT_ERROR(host_tensor(sample({4, 6}, 1), {4, 6}).unflatten(0, {3, 2}), "do not multiply");
}

// ---- pad modes ----

TEST(StructPad, ModesMatchTheReference) {
  const Shape s{2, 5};
  auto x = sample(s, 37);
  auto ref = [&](const std::string& mode, int64_t b, int64_t e) {
    // the last axis padded by (b, e); negative amounts crop (circular crops first, as torch)
    std::vector<double> out;
    const int64_t cut_b = mode == "circular" ? std::max<int64_t>(0, -b) : 0, cut_e = mode == "circular" ? std::max<int64_t>(0, -e) : 0;
    if (mode == "circular") b = std::max<int64_t>(0, b), e = std::max<int64_t>(0, e);
    for (int r = 0; r < 2; ++r) {
      std::vector<double> row(x.begin() + r * 5 + cut_b, x.begin() + r * 5 + 5 - cut_e);
      const int64_t n = static_cast<int64_t>(row.size());
      for (int64_t o = -b; o < n + e; ++o) {
        double v;
        if (o >= 0 && o < n) v = row[o];
        else if (mode == "reflect") v = row[o < 0 ? -o : 2 * (n - 1) - o];
        else if (mode == "replicate") v = row[o < 0 ? 0 : n - 1];
        else if (mode == "circular") v = row[((o % n) + n) % n];
        else v = 7.5;
        out.push_back(v);
      }
    }
    return out;
  };
  for (std::string mode : {"constant", "reflect", "replicate", "circular"})
    for (auto [b, e] : std::vector<std::pair<int64_t, int64_t>>{{2, 1}, {4, 0}, {0, 3}}) {
      double value = mode == "constant" ? 7.5 : 0.0;
      EXPECT_EQ(compare(host_tensor(x, s).pad({{0, 0}, {b, e}}, mode, value), {2, 5 + b + e}, ref(mode, b, e)), "") << mode << " " << b << "," << e;
    }
  // negative amounts: reflect and replicate pad from the whole row and then crop
  auto cropped = [&](const std::string& mode, int64_t b, int64_t e) {
    auto full = ref(mode, std::max<int64_t>(0, b), std::max<int64_t>(0, e));
    const int64_t w = 5 + std::max<int64_t>(0, b) + std::max<int64_t>(0, e);
    std::vector<double> out;
    for (int r = 0; r < 2; ++r)
      for (int64_t k = std::max<int64_t>(0, -b); k < w - std::max<int64_t>(0, -e); ++k) out.push_back(full[r * w + k]);
    return out;
  };
  EXPECT_EQ(compare(host_tensor(x, s).pad({{0, 0}, {3, -3}}, "reflect"), {2, 5}, cropped("reflect", 3, -3)), "");
  EXPECT_EQ(compare(host_tensor(x, s).pad({{0, 0}, {-1, 2}}, "replicate"), {2, 6}, cropped("replicate", -1, 2)), "");
  EXPECT_EQ(compare(host_tensor(x, s).pad({{0, 0}, {1, -2}}, "circular"), {2, 4}, ref("circular", 1, -2)), "");
  EXPECT_EQ(compare(host_tensor(x, s).pad({{0, 0}, {-1, 2}}, "constant", 7.5), {2, 6}, cropped("constant", -1, 2)), "");
}

TEST(StructPad, ErrorsAndGradients) {
  Tensor x = host_tensor(sample({2, 5}, 38), {2, 5});
  EXPECT_ERROR(x.pad({{0, 0}, {5, 0}}, "reflect"), "smaller than dimension");
  EXPECT_ERROR(x.pad({{0, 0}, {0, 6}}, "circular"), "wraps more than once");
  EXPECT_ERROR(x.pad({{0, 0}, {1, 1}}, "typo"), "'typo'");
  EXPECT_ERROR(x.pad({{1, 1}}, "reflect"), "1 (before, after) pairs");
  EXPECT_ERROR(x.pad({{0, 0}, {-3, -3}}, "constant"), "removes more");
  Inputs in{{sample({2, 4}, 39), {2, 4}}};
  for (std::string mode : {"reflect", "replicate", "circular"})
    EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& v) { Tensor p = v[0].pad({{1, 0}, {2, 3}}, mode); return p * p; }, in), "") << mode;
}

// ---- interpolate ----

namespace {
// torch's linear source position: align_corners o*(in-1)/(out-1); else (o+0.5)*in/out-0.5, clamped at 0
std::vector<double> linear_ref(const std::vector<double>& x, int64_t rows, int64_t in, int64_t out, bool align) {
  std::vector<double> r;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t o = 0; o < out; ++o) {
      double src = align ? (out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0)
                         : std::max(0.0, (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
      int64_t lo = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1), hi = std::min<int64_t>(lo + 1, in - 1);
      double f = src - static_cast<double>(lo);
      r.push_back(x[b * in + lo] * (1 - f) + x[b * in + hi] * f);
    }
  return r;
}
}  // namespace

TEST(StructInterpolate, LinearAndNearestAlongOneAxis) {
  for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{{13, 7}, {7, 13}, {5, 5}}) {
    auto x = sample({3, in}, 40);
    for (bool align : {false, true})
      EXPECT_EQ(compare(host_tensor(x, {3, in}).interpolate({out}, "linear", align), {3, out}, linear_ref(x, 3, in, out, align)), "")
          << in << " -> " << out << " align " << align;
    for (std::string mode : {"nearest", "nearest-exact"}) {
      std::vector<double> want;
      for (int b = 0; b < 3; ++b)
        for (int64_t o = 0; o < out; ++o) {
          double scale = static_cast<double>(in) / static_cast<double>(out);
          int64_t i = static_cast<int64_t>(std::floor((mode == "nearest" ? o : o + 0.5) * scale));
          want.push_back(x[b * in + std::min(i, in - 1)]);
        }
      EXPECT_EQ(compare(host_tensor(x, {3, in}).interpolate({out}, mode), {3, out}, want), "") << mode << " " << in << " -> " << out;
    }
  }
}

TEST(StructInterpolate, BilinearIsSeparableAndDifferentiable) {
  auto x = sample({2, 4, 6}, 41);
  // rows first then columns, each by the 1-d reference
  std::vector<double> cols = linear_ref(x, 8, 6, 9, false);  // (2, 4, 9)
  std::vector<double> t(2 * 9 * 4), want;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 9; ++c) t[(b * 9 + c) * 4 + r] = cols[(b * 4 + r) * 9 + c];
  auto rows = linear_ref(t, 18, 4, 3, false);  // (2, 9, 3)
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 9; ++c) want.push_back(rows[(b * 9 + c) * 3 + r]);
  EXPECT_EQ(compare(host_tensor(x, {2, 4, 6}).interpolate({3, 9}), {2, 3, 9}, want), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) { Tensor y = v[0].interpolate({3, 5}, "linear", true); return y * y; },
                           Inputs{{sample({2, 3}, 42), {2, 3}}}),
            "");
  EXPECT_ERROR(host_tensor(x, {2, 4, 6}).interpolate({3, 3}, "cubic"), "'cubic'");
  EXPECT_ERROR(host_tensor(x, {2, 4, 6}).interpolate({3, 3}, "nearest", true), "align_corners");
  EXPECT_ERROR(host_tensor(x, {2, 4, 6}).interpolate({1, 3, 3, 3}), "trailing dimensions");
}
