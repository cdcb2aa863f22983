// tests/ops/conv_test.cpp - the N-d convolutions and pools (tensor/conv.cpp) against plain loops
// written here: conv2d over 1, 2 and 3 spatial axes (per-axis stride and dilation, asymmetric and
// negative padding, groups), conv_transpose2d, max and average pools (ceil_mode,
// count_include_pad, dilation), max-pool indices and unpooling; gradients by finite differences
// (max pools: torch's rule at ties, each window's gradient to its first maximum); the 2-D
// convolution with one stride and dilation on the tuned path (the int form's very graph); errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Opts = Tensor::ConvOptions;
using PoolOpts = Tensor::PoolOptions;
using Ints = std::vector<int64_t>;

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major multi-index of flat position `flat` in `shape`.
Ints unflatten(int64_t flat, const Shape& shape) {
  Ints idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) idx[i] = flat % shape[i], flat /= shape[i];
  return idx;
}

int64_t flatten_at(const Ints& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t i = 0; i < shape.size(); ++i) f = f * shape[i] + idx[i];
  return f;
}

struct Ref {
  std::vector<double> values;
  Shape shape;
};

// The reference convolution: input (N, C, *S), weight (O, C/g, *K); padding (before, after) per
// axis, negative crops: padded position p reads input position p - before when inside it.
Ref ref_conv(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w, const Shape& ws, const Ints& s, const Ints& d,
             const Pads& p, int64_t groups) {
  const size_t k = xs.size() - 2;
  const int64_t n = xs[0], cin = xs[1], cout = ws[0], cg = cin / groups, og = cout / groups;
  Shape os, sp(xs.begin() + 2, xs.end()), ks(ws.begin() + 2, ws.end());
  for (size_t i = 0; i < k; ++i) os.push_back((sp[i] + p[i].first + p[i].second - d[i] * (ks[i] - 1) - 1) / s[i] + 1);
  Shape out{n, cout};
  out.insert(out.end(), os.begin(), os.end());
  std::vector<double> y(static_cast<size_t>(numel(out)), 0.0);
  for (int64_t f = 0; f < numel(out); ++f) {
    Ints o = unflatten(f, out);
    const int64_t b = o[0], oc = o[1], grp = oc / og;
    double acc = 0;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < numel(ks); ++t) {
        Ints tap = unflatten(t, ks), at{b, grp * cg + c};
        bool inside = true;
        for (size_t i = 0; i < k; ++i) {
          const int64_t pos = o[2 + i] * s[i] + tap[i] * d[i] - p[i].first;
          inside &= pos >= 0 && pos < sp[i];
          at.push_back(pos);
        }
        if (!inside) continue;
        Ints wi{oc, c};
        wi.insert(wi.end(), tap.begin(), tap.end());
        acc += x[static_cast<size_t>(flatten_at(at, xs))] * w[static_cast<size_t>(flatten_at(wi, ws))];
      }
    y[static_cast<size_t>(f)] = acc;
  }
  return {y, out};
}

// The reference transposed convolution: every input element scattered through the kernel,
// weight (Cin, Cout/g, *K); output (I-1)*s - before - after + d*(K-1) + output_padding + 1.
Ref ref_conv_transpose(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w, const Shape& ws, const Ints& s,
                       const Ints& d, const Pads& p, const Ints& extra, int64_t groups) {
  const size_t k = xs.size() - 2;
  const int64_t n = xs[0], cin = xs[1], cg = cin / groups, og = ws[1];
  Shape sp(xs.begin() + 2, xs.end()), ks(ws.begin() + 2, ws.end()), out{n, og * groups};
  for (size_t i = 0; i < k; ++i) out.push_back((sp[i] - 1) * s[i] - p[i].first - p[i].second + d[i] * (ks[i] - 1) + extra[i] + 1);
  std::vector<double> y(static_cast<size_t>(numel(out)), 0.0);
  for (int64_t f = 0; f < numel(xs); ++f) {
    Ints in = unflatten(f, xs);
    const int64_t b = in[0], c = in[1], grp = c / cg;
    for (int64_t oc = 0; oc < og; ++oc)
      for (int64_t t = 0; t < numel(ks); ++t) {
        Ints tap = unflatten(t, ks), at{b, grp * og + oc};
        bool inside = true;
        for (size_t i = 0; i < k; ++i) {
          const int64_t pos = in[2 + i] * s[i] + tap[i] * d[i] - p[i].first;
          inside &= pos >= 0 && pos < out[2 + i];
          at.push_back(pos);
        }
        if (!inside) continue;
        Ints wi{c, oc};
        wi.insert(wi.end(), tap.begin(), tap.end());
        y[static_cast<size_t>(flatten_at(at, out))] += x[static_cast<size_t>(f)] * w[static_cast<size_t>(flatten_at(wi, ws))];
      }
  }
  return {y, out};
}

// The reference pools over the last kernel.size() axes, torch's rules: the output size rounded up
// under ceil_mode less a last window starting in the end padding; max: the first maximum (and its
// flat index in the plane); avg: divided by the window's elements inside the input, plus the
// padding ones (never past the end padding) when count_include_pad.
struct PoolRef {
  Ref values;
  std::vector<double> indices;
};
PoolRef ref_pool(const std::vector<double>& x, const Shape& xs, const Ints& ks, const Ints& s, const Ints& d, const Pads& p, bool ceil_mode,
                 bool max, bool count_include_pad = true) {
  const size_t k = ks.size(), lead = xs.size() - k;
  Shape sp(xs.end() - static_cast<std::ptrdiff_t>(k), xs.end()), out(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(lead));
  for (size_t i = 0; i < k; ++i) {
    const int64_t span = d[i] * (ks[i] - 1) + 1, padded = sp[i] + p[i].first + p[i].second;
    int64_t o = ceil_mode ? (padded - span + s[i] - 1) / s[i] + 1 : (padded - span) / s[i] + 1;
    if (ceil_mode && (o - 1) * s[i] >= sp[i] + p[i].first) --o;
    out.push_back(o);
  }
  PoolRef r{{std::vector<double>(static_cast<size_t>(numel(out))), out}, std::vector<double>(static_cast<size_t>(numel(out)))};
  for (int64_t f = 0; f < numel(out); ++f) {
    Ints o = unflatten(f, out);
    double best = -std::numeric_limits<double>::infinity(), sum = 0, count = 0;
    int64_t best_at = -1;
    for (int64_t t = 0; t < numel(ks); ++t) {
      Ints tap = unflatten(t, ks), at(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(lead)), plane;
      bool inside = true, in_padding = true;
      for (size_t i = 0; i < k; ++i) {
        const int64_t pos = o[lead + i] * s[i] + tap[i] * d[i] - p[i].first;
        inside &= pos >= 0 && pos < sp[i];
        in_padding &= pos < sp[i] + p[i].second;  // not in ceil_mode's extra end padding
        at.push_back(pos), plane.push_back(pos);
      }
      if (!inside) {
        count += count_include_pad && in_padding;
        continue;
      }
      const double v = x[static_cast<size_t>(flatten_at(at, xs))];
      sum += v, count += 1;
      if (v > best) best = v, best_at = flatten_at(plane, sp);
    }
    r.values.values[static_cast<size_t>(f)] = max ? best : sum / count;
    r.indices[static_cast<size_t>(f)] = static_cast<double>(best_at);
  }
  return r;
}

Pads pads_of(std::initializer_list<std::pair<int64_t, int64_t>> p) { return Pads(p); }

}  // namespace

TEST(Conv, OneTwoAndThreeSpatialAxesMatchTheLoops) {
  struct Case {
    Shape xs, ws;
    Opts o;
  };
  const std::vector<Case> cases{
      {{2, 3, 11}, {4, 3, 3}, {}},                                                        // conv1d
      {{1, 2, 9}, {2, 2, 2}, {.stride = {2}, .dilation = {2}, .padding = {{2, 1}}}},       // conv1d strided, dilated, asymmetric
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {.stride = {2, 1}, .dilation = {1, 2}, .padding = {{1, 0}, {2, 1}}}},
      {{1, 4, 6, 5}, {6, 2, 3, 3}, {.groups = 2, .stride = {1, 2}, .padding = {{1, 1}, {0, 2}}}},
      {{1, 1, 8, 8}, {1, 1, 3, 3}, {.padding = {{-1, -1}}}},                              // negative padding crops
      {{1, 1, 7, 7}, {1, 1, 2, 2}, {.padding = {{-1, 0}, {2, 0}}}},
      {{1, 3, 5, 4, 4}, {2, 3, 3, 2, 2}, {.stride = {1, 2, 1}, .padding = {{1, 1}, {0, 0}, {1, 0}}}},  // conv3d
      {{2, 4, 5, 5}, {4, 1, 3, 3}, {.groups = 4, .dilation = {2}, .padding = {{2, 2}}}},  // depthwise
  };
  for (const Case& c : cases) {
    std::vector<double> x = sample(c.xs, 1), w = sample(c.ws, 2);
    const size_t k = c.xs.size() - 2;
    Ints s = c.o.stride.size() == 1 ? Ints(k, c.o.stride[0]) : c.o.stride, d = c.o.dilation.size() == 1 ? Ints(k, c.o.dilation[0]) : c.o.dilation;
    Pads p = c.o.padding.empty() ? Pads(k, {0, 0}) : c.o.padding.size() == 1 ? Pads(k, c.o.padding[0]) : c.o.padding;
    Ref want = ref_conv(x, c.xs, w, c.ws, s, d, p, c.o.groups);
    Tensor got = host_tensor(x, c.xs).conv2d(host_tensor(w, c.ws), std::nullopt, c.o);
    EXPECT_EQ(compare(got, want.shape, want.values, 1e-5, 1e-5), "") << "input " << c.xs.size() << "-d, weight " << c.ws[2];
    EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& t) { return t[0].conv2d(t[1], std::nullopt, c.o); },
                             {{x, c.xs}, {w, c.ws}}),
              "");
  }
}

// A 3 x 3 convolution over a 7 x 7 map with output channels in whole vectors: on a core with one
// full-width multiply-add a cycle (Zen 4) the narrow-column plan (half-width column vectors, the
// weights broadcast in place), elsewhere the channel vectors; either matches the loops.
TEST(Conv, SmallMapsWithManyChannelsMatchTheLoops) {
  const Shape xs{1, 32, 7, 7}, ws{48, 32, 3, 3};
  std::vector<double> x = sample(xs, 16), w = sample(ws, 17), b = sample({48}, 18);
  Ref want = ref_conv(x, xs, w, ws, {1, 1}, {1, 1}, pads_of({{1, 1}, {1, 1}}), 1);
  // (float32, realized before compare reads it as float64: the plans are sized by the lanes of the
  // stored element type)
  const Tensor xt = host_tensor(x, xs, dtypes::float32), wt = host_tensor(w, ws, dtypes::float32);
  Tensor got = xt.conv2d(wt, std::nullopt, Opts{.padding = {{1, 1}}});
  EXPECT_EQ(compare(got.realize(), want.shape, want.values, 1e-4, 1e-4), "");
  for (size_t i = 0; i < want.values.size(); ++i) want.values[i] = std::max(0.0, want.values[i] + b[i / 49]);
  Tensor fused = xt.conv2d(wt, host_tensor(b, {48}, dtypes::float32), Opts{.padding = {{1, 1}}}).relu();
  EXPECT_EQ(compare(fused.realize(), want.shape, want.values, 1e-4, 1e-4), "");
}

TEST(Conv, BiasIsAddedPerOutputChannel) {
  std::vector<double> x = sample({1, 2, 6}, 3), w = sample({3, 2, 2}, 4), b = sample({3}, 5);
  Ref want = ref_conv(x, {1, 2, 6}, w, {3, 2, 2}, {1}, {1}, pads_of({{1, 1}}), 1);
  for (size_t i = 0; i < want.values.size(); ++i) want.values[i] += b[i / 7];
  Tensor got = host_tensor(x, {1, 2, 6}).conv2d(host_tensor(w, {3, 2, 2}), host_tensor(b, {3}), Opts{.padding = {{1, 1}}});
  EXPECT_EQ(compare(got, {1, 3, 7}, want.values), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& t) { return t[0].conv2d(t[1], t[2], Opts{.stride = {2}, .padding = {{1, 1}}}); },
                           {{x, {1, 2, 6}}, {w, {3, 2, 2}}, {b, {3}}}),
            "");
}

TEST(Conv, DtypeIsTheSumsAndTheResults) {
  std::vector<double> x = sample({1, 3, 5, 5}, 14), w = sample({2, 3, 3, 3}, 15);
  Ref want = ref_conv(x, {1, 3, 5, 5}, w, {2, 3, 3, 3}, {1, 1}, {1, 1}, pads_of({{1, 1}, {1, 1}}), 1);
  Tensor xh = host_tensor(x, {1, 3, 5, 5}, dtypes::float16), wh = host_tensor(w, {2, 3, 3, 3}, dtypes::float16);
  Tensor y = xh.conv2d(wh, std::nullopt, Opts{.padding = {{1, 1}}, .dtype = dtypes::float32});
  EXPECT_EQ(y.dtype(), dtypes::float32);
  EXPECT_EQ(compare(y, want.shape, want.values, 1e-2, 2e-2), "");
  EXPECT_EQ(xh.conv2d(wh, std::nullopt, Opts{.padding = {{1, 1}}}).dtype(), dtypes::float16);
}

TEST(Conv, TwoDWithOneStrideAndDilationIsTheTunedConvolution) {
  // the same graph node as the int form: the tuned path's kernels and input gradient
  Tensor x = host_tensor(sample({2, 4, 9, 9}, 6), {2, 4, 9, 9}), w = host_tensor(sample({8, 2, 3, 3}, 7), {8, 2, 3, 3});
  EXPECT_TRUE(x.conv2d(w, std::nullopt, Opts{.groups = 2, .stride = {2, 2}, .dilation = {1}, .padding = {{1, 1}, {1, 1}}}).uop() ==
              x.conv2d(w, std::nullopt, 2, 1, 1, 2).uop());
  // other padding is applied first, then the same convolution without padding
  EXPECT_TRUE(x.conv2d(w, std::nullopt, Opts{.groups = 2, .padding = {{1, 2}, {0, 1}}}).uop() ==
              x.pad({{0, 0}, {0, 0}, {1, 2}, {0, 1}}).conv2d(w, std::nullopt, 1, 0, 1, 2).uop());
}

TEST(Conv, TransposedMatchesTheScatterLoops) {
  struct Case {
    Shape xs, ws;
    Opts o;
  };
  const std::vector<Case> cases{
      {{2, 2, 5}, {2, 3, 3}, {}},
      {{1, 2, 4}, {2, 1, 2}, {.stride = {3}, .dilation = {2}, .padding = {{1, 1}}, .output_padding = {2}}},
      {{2, 4, 4, 5}, {4, 2, 3, 3}, {.groups = 2, .stride = {2, 1}, .padding = {{1, 1}, {2, 2}}}},
      {{1, 2, 3, 4}, {2, 2, 3, 2}, {.stride = {2, 3}, .dilation = {2, 1}, .padding = {{1, 1}, {0, 0}}, .output_padding = {1, 2}}},
      {{1, 2, 3, 3, 2}, {2, 2, 2, 2, 2}, {.stride = {2, 1, 1}}},  // conv_transpose3d
  };
  for (const Case& c : cases) {
    std::vector<double> x = sample(c.xs, 8), w = sample(c.ws, 9);
    const size_t k = c.xs.size() - 2;
    auto all = [&](const Ints& v) { return v.size() == 1 ? Ints(k, v[0]) : v; };
    Pads p = c.o.padding.empty() ? Pads(k, {0, 0}) : c.o.padding.size() == 1 ? Pads(k, c.o.padding[0]) : c.o.padding;
    Ref want = ref_conv_transpose(x, c.xs, w, c.ws, all(c.o.stride), all(c.o.dilation), p, all(c.o.output_padding), c.o.groups);
    Tensor got = host_tensor(x, c.xs).conv_transpose2d(host_tensor(w, c.ws), std::nullopt, c.o);
    EXPECT_EQ(compare(got, want.shape, want.values, 1e-5, 1e-5), "") << "input " << c.xs.size() << "-d";
    EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& t) { return t[0].conv_transpose2d(t[1], std::nullopt, c.o); },
                             {{x, c.xs}, {w, c.ws}}),
              "");
  }
}

TEST(Pool, MaxAndAvgMatchTheLoops) {
  struct Case {
    Shape xs;
    PoolOpts o;
  };
  const std::vector<Case> cases{
      {{2, 3, 7, 9}, {}},
      {{1, 2, 9, 8}, {.kernel = {3, 2}, .stride = {2, 3}, .dilation = {2, 1}, .padding = {{1, 1}, {0, 1}}}},
      {{1, 1, 6, 6}, {.kernel = {3, 3}, .stride = {3}, .padding = {{1, 1}}, .ceil_mode = true}},
      {{1, 1, 5, 5}, {.kernel = {3, 3}, .stride = {3}, .padding = {{1, 1}}, .ceil_mode = true}},  // a last window dropped
      {{1, 1, 7, 7}, {.kernel = {2, 2}, .ceil_mode = true}},
      {{3, 10}, {.kernel = {4}, .stride = {3}, .padding = {{2, 1}}}},                           // 1-d, any leading axes
      {{1, 1, 6, 5, 7}, {.kernel = {3, 2, 3}, .stride = {2}, .padding = {{1, 1}, {0, 0}, {1, 0}}, .ceil_mode = true}},  // 3-d
      {{1, 2, 6, 6}, {.kernel = {3, 3}, .stride = {1}}},                                        // overlapping windows
      // rows wide enough for vectors of output columns at a stride of 2 (loads and picks of their
      // lanes, classify.cpp's strided windows), padded inside the kernel or not, odd widths
      {{1, 3, 9, 66}, {.kernel = {3, 3}, .stride = {2}, .padding = {{1, 1}}}},
      {{2, 2, 6, 70}, {.kernel = {2, 2}}},
      {{1, 2, 7, 133}, {.kernel = {3, 3}, .stride = {2}}},
  };
  for (const Case& c : cases)
    for (bool include : {true, false}) {
      std::vector<double> x = sample(c.xs, 10);
      const size_t k = c.o.kernel.size();
      auto all = [&](const Ints& v) { return v.size() == 1 ? Ints(k, v[0]) : v; };
      Ints s = c.o.stride.empty() ? c.o.kernel : all(c.o.stride);
      Pads p = c.o.padding.empty() ? Pads(k, {0, 0}) : c.o.padding.size() == 1 ? Pads(k, c.o.padding[0]) : c.o.padding;
      PoolOpts o = c.o;
      o.count_include_pad = include;
      PoolRef mx = ref_pool(x, c.xs, c.o.kernel, s, all(c.o.dilation), p, c.o.ceil_mode, true);
      PoolRef avg = ref_pool(x, c.xs, c.o.kernel, s, all(c.o.dilation), p, c.o.ceil_mode, false, include);
      Tensor t = host_tensor(x, c.xs);
      EXPECT_EQ(compare(t.avg_pool2d(o), avg.values.shape, avg.values.values), "") << c.xs.size() << "-d, include " << include;
      EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& v) { return v[0].avg_pool2d(o); }, {{x, c.xs}}), "");
      if (!include) continue;
      EXPECT_EQ(compare(t.max_pool2d(o), mx.values.shape, mx.values.values), "") << c.xs.size() << "-d";
      auto [values, indices] = t.max_pool2d_with_indices(o);
      EXPECT_EQ(indices.dtype(), dtypes::int32);
      EXPECT_EQ(compare(values, mx.values.shape, mx.values.values), "");
      EXPECT_EQ(compare(indices, mx.values.shape, mx.indices, 0, 0), "") << c.xs.size() << "-d";
      // sampled values have no ties: the gradient is differentiable there
      EXPECT_EQ(check_gradient([&](const std::vector<Tensor>& v) { return v[0].max_pool2d(o); }, {{x, c.xs}}), "");
    }
}

TEST(Pool, IntFormsAreTheGeneralOnes) {
  Tensor x = host_tensor(sample({2, 3, 8, 8}, 11), {2, 3, 8, 8});
  EXPECT_TRUE(x.max_pool2d(3, 2, 1).uop() == x.max_pool2d(PoolOpts{.kernel = {3, 3}, .stride = {2, 2}, .padding = {{1, 1}, {1, 1}}}).uop());
  EXPECT_TRUE(x.avg_pool2d(2).uop() == x.avg_pool2d(PoolOpts{.kernel = {2, 2}}).uop());
}

TEST(Pool, MaxGradientGoesToEachWindowsFirstMaximumAsTorch) {
  // ties everywhere: every 2x2 window of ones (stride 1) sends its 1 to its top-left element;
  // a 2x2 window (stride 2) of a row [1, 2, 1, 2]: to its first 2 (row 0), never the second row's
  const Shape s{1, 1, 4, 4};
  Tensor ones = host_tensor(std::vector<double>(16, 1.0), s).requires_grad_();
  ones.max_pool2d(PoolOpts{.kernel = {2, 2}, .stride = {1}}).sum().backward();
  std::vector<double> want(16, 0.0);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 3; ++c) want[static_cast<size_t>(r * 4 + c)] = 1;
  EXPECT_EQ(compare(*ones.grad(), s, want), "");
  std::vector<double> rows;
  for (int i = 0; i < 16; ++i) rows.push_back(i % 2 ? 2.0 : 1.0);
  Tensor r = host_tensor(rows, s).requires_grad_();
  r.max_pool2d(PoolOpts{.kernel = {2, 2}}).sum().backward();
  EXPECT_EQ(compare(*r.grad(), s, {0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}), "");
  auto [values, indices] = host_tensor(rows, s).max_pool2d_with_indices(PoolOpts{.kernel = {2, 2}});
  EXPECT_EQ(compare(indices, {1, 1, 2, 2}, {1, 3, 9, 11}, 0, 0), "");
}

TEST(Pool, UnpoolPutsEachMaximumBackAtItsIndex) {
  const Shape s{2, 2, 7, 6};
  std::vector<double> x = sample(s, 12);
  for (PoolOpts o : {PoolOpts{.kernel = {2, 2}}, PoolOpts{.kernel = {3, 3}, .stride = {3, 2}, .padding = {{1, 1}}}}) {
    auto [values, indices] = host_tensor(x, s).max_pool2d_with_indices(o);
    Tensor back = values.max_unpool2d(indices, o, s);  // batch and channels of output_size are ignored
    std::vector<double> v = values.cast(dtypes::float64).to_vector<double>(), want(static_cast<size_t>(numel(s)), 0.0);
    std::vector<int32_t> idx = indices.to_vector<int32_t>();
    const int64_t per = values.shape()[2] * values.shape()[3];
    for (size_t i = 0; i < v.size(); ++i) want[i / static_cast<size_t>(per) * 42 + static_cast<size_t>(idx[i])] = v[i];
    EXPECT_EQ(compare(back, s, want), "");
    // torch's gradient: each value gets the output's gradient at its index, also where two windows
    // gave the same maximum (the second case)
    std::vector<double> wv = sample(s, 13), grad_want;
    for (size_t i = 0; i < v.size(); ++i) grad_want.push_back(wv[i / static_cast<size_t>(per) * 42 + static_cast<size_t>(idx[i])]);
    Tensor leaf = values.detach().requires_grad_();
    (leaf.max_unpool2d(indices, o, s) * host_tensor(wv, s)).sum().backward();
    EXPECT_EQ(compare(*leaf.grad(), values.shape(), grad_want), "");
  }
  // the default output size: (I - 1) * stride - padding + dilation * (k - 1) + 1 per axis
  auto [values, indices] = host_tensor(x, s).max_pool2d_with_indices(PoolOpts{.kernel = {2, 2}});
  EXPECT_EQ(values.max_unpool2d(indices, PoolOpts{.kernel = {2, 2}}).shape(), (Shape{2, 2, 6, 6}));
}

TEST(Conv, ErrorsNameTheProblem) {
  auto throws = [](auto f, const std::string& needle) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no kiln::Error, expected one naming " << needle;
  };
  Tensor x = Tensor::zeros({2, 16, 2, 2}), w = Tensor::zeros({32, 16, 3, 3});
  throws([&] { x.conv2d(w, std::nullopt, Opts{}); }, "larger than the padded input");
  throws([&] { Tensor::zeros({1, 1, 6, 7}).conv2d(Tensor::zeros({6, 1, 3, 3}), std::nullopt, Opts{.dilation = {3}}); }, "spans 7");
  throws([&] { x.conv2d(Tensor::zeros({32, 16, 3}), std::nullopt, Opts{}); }, "same rank");
  throws([&] { x.conv2d(Tensor::zeros({32, 16, 0, 1}), std::nullopt, Opts{}); }, "kernel size must be >= 1");
  throws([&] { x.conv_transpose2d(Tensor::zeros({16, 2, 1, 0}), std::nullopt, Opts{}); }, "kernel size must be >= 1");
  throws([&] { x.conv2d(w, std::nullopt, Opts{.groups = 3}); }, "group");
  throws([&] { x.conv2d(w, std::nullopt, Opts{.stride = {1, 1, 1}}); }, "stride");
  throws([&] { x.conv2d(w, std::nullopt, Opts{.stride = {0}}); }, "stride must be >= 1");
  throws([&] { x.conv2d(w, std::nullopt, Opts{.padding = {{1, 1}, {1, 1}, {1, 1}}}); }, "padding has 3");
  throws([&] { x.conv2d(w, Tensor::zeros({16}), Opts{.padding = {{1, 1}}}); }, "bias must have shape (32,)");
  throws([&] { x.conv2d(w, std::nullopt, Opts{.padding = {{1, 1}}, .output_padding = {1}}); }, "output_padding (1,) is conv_transpose2d's");
  throws([&] { x.conv_transpose2d(w, std::nullopt, Opts{.dtype = dtypes::float32}); }, "dtype is conv2d's");
  throws([&] { x.conv_transpose2d(w, std::nullopt, Opts{}); }, "needs a weight of (16");
  throws([&] { x.conv_transpose2d(Tensor::zeros({16, 4, 3, 3}), std::nullopt, Opts{.stride = {2}, .output_padding = {2}}); },
         "output_padding");
  throws([&] { x.conv_transpose2d(Tensor::zeros({16, 4, 1, 1}), std::nullopt, Opts{.padding = {{1, 1}}}); }, "empty output");
  throws([&] { x.max_pool2d(PoolOpts{.kernel = {3, 3}}); }, "larger than its padded size");
  throws([&] { x.avg_pool2d(PoolOpts{.kernel = {2, 2}, .dilation = {1, 1, 1}}); }, "dilation");
  throws([&] { x.max_pool2d(PoolOpts{.kernel = {2, 2}, .stride = {0}}); }, "stride must be >= 1");
  throws([&] { Tensor::zeros({4}).max_pool2d(PoolOpts{.kernel = {2, 2}}); }, "fewer dimensions");
  Tensor v = Tensor::zeros({1, 1, 2, 2});
  throws([&] { v.max_unpool2d(Tensor::zeros({1, 1, 2, 3}, dtypes::int32), PoolOpts{}); }, "must have the input's shape");
  throws([&] { v.max_unpool2d(Tensor::zeros({1, 1, 2, 2}), PoolOpts{}); }, "integers");
}
