// tests/tensor/symbolic_dims_test.cpp - symbolic dimensions seen from the public API: reading a
// dimension's variable, placing it through reshape/squeeze/unsqueeze/expand, and the broadcasting
// rule that keeps a variable bound to 1 from acting as a fixed 1 (a Jit replays the graph with
// other values, so any choice made from the bound value would be silently wrong there).
#include <gtest/gtest.h>

#include <numeric>

#include "error_check.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;

namespace {
const char* R = "ref";

std::vector<float> iota(int64_t n, float from = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}


std::string var_name(const Tensor& t, int axis) {
  auto v = t.symbolic_dim(axis);
  return v ? v->name() + "=" + std::to_string(v->value()) : "-";
}
}  // namespace

TEST(SymbolicDims, BoundVariableReportsItsVariable) {
  Variable n("n", 1, 8), m("m", 1, 8), n2("n", 1, 9);
  BoundVariable a = n.bind(3), b = n.bind(5);
  EXPECT_EQ(a.name(), "n");
  EXPECT_EQ(a.min(), 1);
  EXPECT_EQ(a.max(), 8);
  EXPECT_TRUE(a.same_variable(b)) << "one variable, two values";
  EXPECT_FALSE(a.same_variable(m.bind(3)));
  EXPECT_FALSE(a.same_variable(n2.bind(3))) << "another range is another variable";
}

TEST(SymbolicDims, ReadsTheVariableOfEachDimension) {
  Variable n("n", 1, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8 * 3), {8, 3}, R).realize();
  Tensor x = buf.shrink(0, n.bind(5));
  EXPECT_EQ(var_name(x, 0), "n=5");
  EXPECT_EQ(var_name(x, -2), "n=5");
  EXPECT_EQ(var_name(x, 1), "-");
  EXPECT_EQ(var_name(buf, 0), "-") << "the buffer itself stays fixed";
  EXPECT_EQ(var_name(x.relu() * 2, 0), "n=5") << "elementwise ops keep it";
  EXPECT_EQ(var_name(x.transpose(), 1), "n=5") << "permute moves it";
  EXPECT_EQ(var_name(x.sum({1}), 0), "n=5") << "a reduction over another axis keeps it";
  EXPECT_EQ(var_name(x.sum({0}, true), 0), "-") << "a reduction over it leaves a fixed 1";
  EXPECT_ERROR(x.symbolic_dim(2), "symbolic_dim", "2");
}

TEST(SymbolicDims, AVariableBoundToOneIsNotAFixedOne) {
  Variable n("n", 1, 8), m("m", 1, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8 * 3), {8, 3}, R).realize();
  Tensor x1 = buf.shrink(0, n.bind(1));  // (n=1, 3)
  Tensor five = Tensor::ones({5, 3}, dtypes::float32, R);
  EXPECT_ERROR(x1 + five, "'n' (1) vs 5", "only the same variable or a fixed 1");
  EXPECT_ERROR(x1 + buf.shrink(0, m.bind(1)), "'n' (1) vs 'm' (1)");
  EXPECT_ERROR(buf.shrink(0, n.bind(3)) + Tensor::ones({3, 3}, dtypes::float32, R), "'n' (3) vs 3");
  Tensor row = Tensor::from_vector<float>({10, 20, 30}, {1, 3}, R);
  EXPECT_EQ(var_name(x1 + row, 0), "n=1") << "a fixed 1 stretches to the variable";
  EXPECT_EQ((x1 + row).to_vector<float>(), (std::vector<float>{10, 21, 32}));
  EXPECT_ERROR(x1.expand({5, 3}), "expand", "symbolic 'n' (1)");
  EXPECT_ERROR(x1.squeeze(0), "squeeze", "symbolic 'n'");
}

TEST(SymbolicDims, UnsqueezeAndSqueezeKeepThePlaceOfAVariableBoundToOne) {
  Variable n("n", 1, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8), {8, 1}, R).realize();
  Tensor x = buf.shrink(0, n.bind(1));  // (n=1, 1)
  Tensor u = x.unsqueeze(0);           // (1, n, 1): plain reshape would guess n at 0
  EXPECT_EQ(var_name(u, 0), "-");
  EXPECT_EQ(var_name(u, 1), "n=1");
  Tensor s = u.squeeze(2).squeeze(0);  // (n)
  EXPECT_EQ(var_name(s, 0), "n=1");
  EXPECT_EQ(u.squeeze(0).squeeze(1).shape(), (Shape{1}));
}

TEST(SymbolicDims, ReshapeWithPlacedDimensions) {
  Variable n("n", 1, 8), m("m", 1, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8 * 6), {8, 6}, R).realize();
  Tensor x = buf.shrink(0, n.bind(1));  // (n=1, 6)
  Tensor y = x.reshape({1, 1, 2, 3}, {std::nullopt, n.bind(1), std::nullopt, std::nullopt});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 3}));
  EXPECT_EQ(var_name(y, 0), "-");
  EXPECT_EQ(var_name(y, 1), "n=1");
  EXPECT_EQ(y.to_vector<float>(), iota(6));
  EXPECT_EQ(var_name(x.reshape({1, 1, 2, 3}), 0), "n=1") << "plain reshape places it first";
  EXPECT_EQ(var_name(x.reshape({-1, 2, 3}, {n.bind(1), std::nullopt, std::nullopt}), 0), "n=1") << "-1 is inferred";
  EXPECT_ERROR(x.reshape({6}, {std::nullopt}), "must place the symbolic dimension 'n'", "no dimension names it");
  EXPECT_ERROR(x.reshape({1, 6}, {m.bind(1), std::nullopt}), "where dimension 0 names 'm'");
  EXPECT_ERROR(x.reshape({1, 6}, {n.bind(2), std::nullopt}), "'n' bound to 2");
  EXPECT_ERROR(x.reshape({2, 3}, {std::nullopt, std::nullopt}), "must place");
  Tensor x3 = buf.shrink(0, n.bind(3));  // (n=3, 6)
  EXPECT_ERROR(x3.reshape({6, 3}, {std::nullopt, n.bind(3)}), "as its own dimension");
  EXPECT_ERROR(Tensor::ones({1, 2}, dtypes::float32, R).reshape({1, 2}, {n.bind(1), std::nullopt}), "not a symbolic dimension");
}

// Indexing resolves slices against the bound value; on a symbolic axis only the whole axis selects
// the same positions for every value (a reversal at n = 1 is no flip at all, and x[-1] is row n - 1
// of this call only).
TEST(SymbolicDims, IndexingASymbolicAxis) {
  using I = Tensor::Index;
  Variable n("n", 2, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8 * 2), {8, 2}, R).realize();
  Tensor x = buf.shrink(0, n.bind(3));
  EXPECT_EQ(var_name(x.getitem({I::slice(), I::integer(1)}), 0), "n=3") << "another axis";
  EXPECT_EQ(var_name(x.getitem({I::slice(0, std::nullopt, 1), I::slice()}), 0), "n=3") << "the whole axis";
  EXPECT_EQ(var_name(x.getitem({I::slice(std::nullopt, 8)}), 0), "n=3") << "a stop at the max is the whole axis";
  EXPECT_ERROR(x.getitem({I::integer(-1)}), "axis 0 is the symbolic 'n' (bound to 3, range [2, 8])", "only the whole axis");
  EXPECT_ERROR(x.getitem({I::integer(0)}), "symbolic 'n'");
  EXPECT_ERROR(x.getitem({I::slice(std::nullopt, std::nullopt, -1)}), "symbolic 'n'");
  EXPECT_ERROR(x.getitem({I::slice(0, 3)}), "symbolic 'n'");
  EXPECT_ERROR(x.getitem({I::slice(1, std::nullopt)}), "symbolic 'n'");
  EXPECT_ERROR(x.getitem({I::tensor(Tensor::from_vector<int32_t>({0}, {1}, R))}), "symbolic 'n'");
}

TEST(SymbolicDims, ExpandToAVariable) {
  Variable n("n", 1, 8);
  Tensor row = Tensor::from_vector<float>({1, 2, 3}, {1, 3}, R);
  for (int64_t v : {1, 4}) {
    Tensor e = row.expand(0, n.bind(v));
    EXPECT_EQ(e.shape(), (Shape{v, 3}));
    EXPECT_EQ(var_name(e, 0), "n=" + std::to_string(v));
    EXPECT_EQ(e.sum({0}).to_vector<float>(), (std::vector<float>{1.f * v, 2.f * v, 3.f * v}));
  }
  EXPECT_ERROR(row.expand(1, n.bind(3)), "not 1", "'n'");
  EXPECT_ERROR(row.expand(0, n.bind(3)).expand(0, n.bind(3)), "symbolic");
}

// The regression the placement rules exist for: a Jit captured while the variable is bound to 1
// must replay correctly for other values.
TEST(SymbolicDims, AJitCapturedAtOneReplaysOtherValues) {
  Variable n("n", 1, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8 * 2), {8, 2}, R).realize();
  Tensor col = Tensor::from_vector<float>({100, 200}, {2, 1}, R).realize();
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    Tensor x = in[0].shrink(0, vars[0]);  // (n, 2)
    Tensor u = x.unsqueeze(0);            // (1, n, 2)
    return std::vector<Tensor>{(u.transpose(0, 2) + col.reshape({2, 1, 1})).sum({2})};  // (2, n)
  });
  for (int64_t v : {1, 1, 1, 3, 5, 1}) {
    std::vector<Tensor> out = f({buf}, {n.bind(v)});
    ASSERT_EQ(out[0].shape(), (Shape{2, v})) << "n = " << v;
    std::vector<float> got = out[0].to_vector<float>(), want;
    for (int c = 0; c < 2; ++c)
      for (int64_t r = 0; r < v; ++r) want.push_back(static_cast<float>(r * 2 + c) + (c ? 200.f : 100.f));
    EXPECT_EQ(got, want) << "n = " << v;
  }
  EXPECT_TRUE(f.captured());
}

// A Jit whose function realizes its outputs itself (tinygrad's habit, `(x + 1).realize()`):
// realize fixes a tensor's size, but the capture must still replay a symbolic output at each
// call's size (it came back at the captured size, with stale rows beyond it, before
// TensorGraph::realized_vars). An output reduced over the variable stays fixed.
TEST(SymbolicDims, AJitReplaysOutputsItsFunctionRealized) {
  Variable n("n", 1, 8);
  Tensor buf = Tensor::from_vector<float>(iota(8 * 2), {8, 2}, R).realize();
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    Tensor x = in[0].shrink(0, vars[0]);  // (n, 2)
    Tensor rows = (x * 2.0f + 1.0f).realize();
    Tensor total = x.sum({0}).realize();  // (2,) whatever n
    EXPECT_FALSE(rows.symbolic_dim(0)) << "a realized tensor has a fixed size";
    return std::vector<Tensor>{rows, total};
  });
  for (int64_t v : {3, 3, 5, 1, 8, 2}) {
    std::vector<Tensor> out = f({buf}, {n.bind(v)});
    ASSERT_EQ(out[0].shape(), (Shape{v, 2})) << "n = " << v;
    ASSERT_EQ(out[1].shape(), (Shape{2})) << "n = " << v;
    std::vector<float> rows, total(2, 0.f);
    for (int64_t i = 0; i < v * 2; ++i) {
      rows.push_back(static_cast<float>(i) * 2 + 1);
      total[static_cast<size_t>(i % 2)] += static_cast<float>(i);
    }
    EXPECT_EQ(out[0].to_vector<float>(), rows) << "n = " << v;
    EXPECT_EQ(out[1].to_vector<float>(), total) << "n = " << v;
  }
  EXPECT_TRUE(f.captured());
}

// A symbolic view of a buffer as a Jit input (tinygrad's jf(buf[:n])), its variable in `vars`:
// replayed as that view of each call's buffer, at each call's size. Another view is an error, and
// without its variable in `vars` it is realized like any input (replayed at one shape).
TEST(SymbolicDims, AJitTakesSymbolicViewsOfBuffersAsInputs) {
  Variable n("n", 1, 8);
  Tensor a = Tensor::from_vector<float>(iota(8 * 2), {8, 2}, R).realize();
  Tensor b = Tensor::from_vector<float>(iota(8 * 2, 100), {8, 2}, R).realize();
  // the input returned as it is too: realizing it (into a buffer of its own) must not make the
  // plan read the capture call's buffer
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{in[0] * 2.0f + 1.0f, in[0]};
  });
  for (int64_t v : {3, 3, 5, 1, 8, 2}) {
    const bool use_b = v == 5 || v == 2;
    std::vector<Tensor> out = f({(use_b ? b : a).shrink(0, n.bind(v))}, {n.bind(v)});
    ASSERT_EQ(out[0].shape(), (Shape{v, 2})) << "n = " << v;
    ASSERT_EQ(out[1].shape(), (Shape{v, 2})) << "n = " << v;
    std::vector<float> want, same;
    for (int64_t i = 0; i < v * 2; ++i) {
      same.push_back(static_cast<float>(i) + (use_b ? 100.f : 0.f));
      want.push_back(same.back() * 2 + 1);
    }
    EXPECT_EQ(out[0].to_vector<float>(), want) << "n = " << v;
    EXPECT_EQ(out[1].to_vector<float>(), same) << "n = " << v;
  }
  EXPECT_TRUE(f.captured());
  EXPECT_ERROR(f({a.shrink({{0, 8}, {1, 2}}).shrink(0, n.bind(3))}, {n.bind(3)}), "input 0", "not the symbolic view it was captured as");
  EXPECT_ERROR(f({a.shrink(0, n.bind(3))}, {}), "input 0", "its variables are not passed");
  EXPECT_ERROR(f({a}, {n.bind(3)}), "input 0", "not such a view");
  EXPECT_ERROR(f({Tensor::from_vector<float>(iota(9 * 2), {9, 2}, R).realize().shrink(0, n.bind(3))}, {n.bind(3)}),
               "input 0", "BUFFER(float32 16)");

  Jit g([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] + 1.0f}; });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g({a.shrink(0, n.bind(2))}, {})[0].to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_ERROR(g({a.shrink(0, n.bind(3))}, {}), "input 0 has shape (3, 2), captured with (2, 2)");
}
