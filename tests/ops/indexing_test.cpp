// tests/ops/indexing_test.cpp - Tensor::getitem / setitem against a plain C++ reference of numpy's
// basic indexing (ints, slices with any step, None, ...), hand-computed advanced (tensor) indexing
// including torch's placement of separated index dims, gradients through both, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "error_check.hpp"
#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;
using Ix = Tensor::Index;

namespace {

std::vector<double> iota_values(const Shape& s) {
  std::vector<double> v(static_cast<size_t>(std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>())));
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

// numpy's basic indexing, written out: per input axis the list of positions it keeps (Python's
// slice.indices rules), then every combination in row-major order.
struct Ref {
  Shape shape;
  std::vector<double> values;
};

Ref basic_reference(const std::vector<double>& x, const Shape& shape, std::vector<Ix> ix) {
  int consumed = 0;
  for (auto& i : ix) consumed += i.kind != Ix::Kind::none && i.kind != Ix::Kind::ellipsis;
  std::vector<Ix> full;
  bool had_ellipsis = false;
  for (auto& i : ix) {
    if (i.kind == Ix::Kind::ellipsis) {
      had_ellipsis = true;
      for (size_t k = 0; k < shape.size() - consumed; ++k) full.push_back(Ix::slice());
    } else {
      full.push_back(i);
    }
  }
  if (!had_ellipsis)
    for (size_t k = 0; k < shape.size() - consumed; ++k) full.push_back(Ix::slice());
  std::vector<std::vector<int64_t>> keep;  // per input axis
  Shape out;
  size_t axis = 0;
  for (auto& i : full) {
    if (i.kind == Ix::Kind::none) {
      out.push_back(1);
      continue;
    }
    int64_t n = shape[axis++];
    std::vector<int64_t> pos;
    if (i.kind == Ix::Kind::integer) {
      pos.push_back(i.value < 0 ? i.value + n : i.value);
    } else {
      int64_t step = i.step.value_or(1);
      auto adj = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
        if (!v) return dflt;
        int64_t x = *v < 0 ? *v + n : *v;
        return std::clamp(x, lo, hi);
      };
      if (step > 0)
        for (int64_t p = adj(i.start, 0, 0, n), e = adj(i.stop, n, 0, n); p < e; p += step) pos.push_back(p);
      else
        for (int64_t p = adj(i.start, n - 1, -1, n - 1), e = adj(i.stop, -1, -1, n - 1); p > e; p += step) pos.push_back(p);
      out.push_back(static_cast<int64_t>(pos.size()));
    }
    keep.push_back(pos);
  }
  Ref r{out, {}};
  std::vector<size_t> at(keep.size(), 0);
  bool empty = std::any_of(keep.begin(), keep.end(), [](auto& k) { return k.empty(); });
  while (!empty) {
    int64_t flat = 0;
    for (size_t a = 0; a < keep.size(); ++a) flat = flat * shape[a] + keep[a][at[a]];
    r.values.push_back(x[static_cast<size_t>(flat)]);
    size_t a = keep.size();
    while (a > 0 && ++at[a - 1] == keep[a - 1].size()) at[--a] = 0;
    if (a == 0) break;
  }
  return r;
}

void expect_basic(const Shape& shape, const std::vector<Ix>& ix) {
  std::vector<double> v = iota_values(shape);
  Ref want = basic_reference(v, shape, ix);
  EXPECT_EQ(compare(host_tensor(v, shape).getitem(ix), want.shape, want.values), "");
}

std::optional<int64_t> none = std::nullopt;

Tensor ints(const std::vector<double>& v, const Shape& s) { return host_tensor(v, s, dtypes::int32); }


}  // namespace

TEST(Indexing, IntsAndSlicesMatchNumpy) {
  expect_basic({5}, {Ix::integer(0)});
  expect_basic({5}, {Ix::integer(-1)});
  expect_basic({3, 4}, {Ix::integer(1)});
  expect_basic({3, 4, 5}, {Ix::integer(-2), Ix::slice(1, 3), Ix::integer(4)});
  expect_basic({7}, {Ix::slice(-6, 50)});   // ends clamp
  expect_basic({7}, {Ix::slice(5, 2)});     // empty
  expect_basic({7}, {Ix::slice(-15, -9)});  // both ends out of range: empty
  expect_basic({7, 5, 10}, {Ix::slice(none, none, 2), Ix::slice(none, none, 3), Ix::slice(none, none, 4)});
  expect_basic({7, 5, 10}, {Ix::slice(1, 5, 2), Ix::integer(3), Ix::slice(2, none, 4)});
  expect_basic({0, 3}, {Ix::slice(), Ix::integer(1)});  // a size-0 axis
}

TEST(Indexing, NegativeStepsMatchNumpy) {
  expect_basic({10}, {Ix::slice(none, none, -1)});
  expect_basic({10}, {Ix::slice(none, none, -3)});
  expect_basic({10}, {Ix::slice(8, 1, -2)});
  expect_basic({6, 7}, {Ix::slice(4, 0, -3), Ix::slice(-1, -6, -2)});
  expect_basic({6, 7}, {Ix::slice(2, 5, -1)});          // empty
  expect_basic({6, 7}, {Ix::slice(50, -50, -4)});       // clamped both ways
  expect_basic({6, 7}, {Ix::slice(), Ix::slice(0, none, -1)});  // just position 0
  // an emptied leading axis: the (0, 10, 10) kernel used to store 100 elements into its 0-byte
  // output and corrupt the heap (runtime: an empty output launches nothing now)
  expect_basic({10, 10, 10}, {Ix::slice(2, 5, -1)});
  EXPECT_TRUE(Tensor::zeros({0, 10, 10}, dtypes::float32, kOpsDevice).to_vector<float>().empty());
}

TEST(Indexing, NoneAndEllipsis) {
  expect_basic({}, {Ix::none()});
  expect_basic({3, 3, 3}, {Ix::slice(1, 2), Ix::none(), Ix::slice(1, 2), Ix::none(), Ix::integer(-1)});
  expect_basic({3, 3, 3, 3}, {Ix::integer(0), Ix::ellipsis(), Ix::integer(0)});
  expect_basic({3, 3, 3, 3}, {Ix::none(), Ix::slice(0, 3), Ix::ellipsis(), Ix::integer(0), Ix::none()});
  expect_basic({2, 3}, {Ix::ellipsis()});
  expect_basic({2, 3}, {});
}

TEST(Indexing, TensorIndicesSelectRows) {
  Tensor x = host_tensor(iota_values({4, 3}), {4, 3});
  // x[[3, 0, -1]] -> rows 3, 0, 3
  EXPECT_EQ(compare(x.getitem({Ix::tensor(ints({3, 0, -1}, {3}))}), {3, 3}, {9, 10, 11, 0, 1, 2, 9, 10, 11}), "");
  // x[:, [[2], [0]]] -> shape (4, 2, 1)
  EXPECT_EQ(compare(x.getitem({Ix::slice(), Ix::tensor(ints({2, 0}, {2, 1}))}), {4, 2, 1}, {2, 0, 5, 3, 8, 6, 11, 9}), "");
  // x[rows, cols] broadcast together: rows (2, 1), cols (3,) -> (2, 3)
  EXPECT_EQ(compare(x.getitem({Ix::tensor(ints({1, 3}, {2, 1})), Ix::tensor(ints({0, 2, -1}, {3}))}), {2, 3}, {3, 5, 5, 9, 11, 11}), "");
  // a 0-d index tensor drops its axis like an int
  EXPECT_EQ(compare(x.getitem({Ix::tensor(ints({2}, {})), Ix::slice(1, none)}), {2}, {7, 8}), "");
  // out of range entries select 0 (as gather)
  EXPECT_EQ(compare(x.getitem({Ix::tensor(ints({4, 1}, {2})), Ix::integer(0)}), {2}, {0, 3}), "");
}

TEST(Indexing, AdjacentTensorIndicesStaySeparatedOnesLead) {
  Shape s{2, 3, 4, 5};
  std::vector<double> v = iota_values(s);
  Tensor x = host_tensor(v, s);
  Tensor i = ints({0, 2}, {2}), j = ints({1, 3}, {2});
  auto at = [&](int64_t a, int64_t b, int64_t c, int64_t d) { return v[static_cast<size_t>(((a * 3 + b) * 4 + c) * 5 + d)]; };
  // x[:, i, j] -> (2, 2, 5): the index dim stays where the indexed axes were
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int k = 0; k < 2; ++k)
      for (int d = 0; d < 5; ++d) want.push_back(at(a, k ? 2 : 0, k ? 3 : 1, d));
  EXPECT_EQ(compare(x.getitem({Ix::slice(), Ix::tensor(i), Ix::tensor(j)}), {2, 2, 5}, want), "");
  // x[:, i, :, j] -> (2, 2, 4): separated, the index dim leads (torch, numpy)
  want.clear();
  for (int k = 0; k < 2; ++k)
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 4; ++c) want.push_back(at(a, k ? 2 : 0, c, k ? 3 : 1));
  EXPECT_EQ(compare(x.getitem({Ix::slice(), Ix::tensor(i), Ix::slice(), Ix::tensor(j)}), {2, 2, 4}, want), "");
  // an int between them collapses first (torch): x[1, i, 0, j]... i and j are separated by the int
  // in the subscript but adjacent after it, so they stay in place: shape (2,)
  want = {at(1, 0, 0, 1), at(1, 2, 0, 3)};
  EXPECT_EQ(compare(x.getitem({Ix::integer(1), Ix::tensor(i), Ix::integer(0), Ix::tensor(j)}), {2}, want), "");
  // a new axis first, then adjacent index tensors, a slice and an int: x[None, i2, j2, 1:3, 0] -> (1, 2, 2)
  Tensor i2 = ints({0, 1}, {2}), j2 = ints({0, 2}, {2});
  want.clear();
  for (int k = 0; k < 2; ++k)
    for (int c = 1; c < 3; ++c) want.push_back(at(k, k ? 2 : 0, c, 0));
  EXPECT_EQ(compare(x.getitem({Ix::none(), Ix::tensor(i2), Ix::tensor(j2), Ix::slice(1, 3), Ix::integer(0)}), {1, 2, 2}, want), "");
  // a new axis between them separates them: x[i2, None, j2] -> (2, 1, 4, 5)
  want.clear();
  for (int k = 0; k < 2; ++k)
    for (int c = 0; c < 4; ++c)
      for (int d = 0; d < 5; ++d) want.push_back(at(k, k ? 2 : 0, c, d));
  EXPECT_EQ(compare(x.getitem({Ix::tensor(i2), Ix::none(), Ix::tensor(j2)}), {2, 1, 4, 5}, want), "");
}

TEST(Indexing, GradientsFlowThroughBasicAndAdvancedIndexing) {
  std::vector<std::pair<std::vector<double>, Shape>> in{{sample({4, 5, 6}, 3), {4, 5, 6}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].getitem({Ix::slice(3, 0, -2), Ix::integer(-1), Ix::none()}); }, in), "");
  EXPECT_EQ(check_gradient(
                [](const std::vector<Tensor>& x) {
                  // repeated rows accumulate their gradients
                  Tensor idx = Tensor::from_vector<int32_t>({1, 1, 3, -4}, {4}, kOpsDevice);
                  return x[0].getitem({Ix::slice(), Ix::tensor(idx), Ix::slice(none, none, 2)}) * 2.0;
                },
                in),
            "");
}

TEST(Indexing, SetitemWritesTheIndexedPositions) {
  Shape s{4, 5};
  std::vector<double> v = iota_values(s);
  // basic: x[1:4:2, ::-2] = [[-1], [-2]] (broadcast along the columns)
  Tensor x = host_tensor(v, s);
  x.setitem({Ix::slice(1, 4, 2), Ix::slice(none, none, -2)}, host_tensor({-1, -2}, {2, 1}));
  std::vector<double> want = v;
  for (int c : {4, 2, 0}) want[static_cast<size_t>(5 + c)] = -1, want[static_cast<size_t>(15 + c)] = -2;
  EXPECT_EQ(compare(x, s, want), "");
  // an int and a scalar value
  Tensor y = host_tensor(v, s);
  y.setitem({Ix::integer(-1)}, host_tensor({7}, {}));
  want = v;
  for (int c = 0; c < 5; ++c) want[static_cast<size_t>(15 + c)] = 7;
  EXPECT_EQ(compare(y, s, want), "");
  // advanced: repeated positions take the last value (numpy)
  Tensor z = host_tensor(v, s);
  z.setitem({Ix::tensor(ints({0, 2, 0}, {3})), Ix::tensor(ints({1, -1, 1}, {3}))}, host_tensor({10, 20, 30}, {3}));
  want = v;
  want[1] = 30, want[14] = 20;
  EXPECT_EQ(compare(z, s, want), "");
}

TEST(Indexing, ErrorsNameTheProblem) {
  Tensor x = Tensor::ones({4, 3}, dtypes::float32, kOpsDevice);
  expect_error([&] { x.getitem({Ix::integer(1), Ix::integer(3)}); }, ErrorCode::out_of_range, "index 3 is out of bounds for axis 1 with size 3");
  expect_error([&] { x.getitem({Ix::integer(-5)}); }, ErrorCode::out_of_range, "index -5 is out of bounds for axis 0 with size 4");
  expect_error([&] { x.getitem({Ix::integer(1), Ix::integer(1), Ix::integer(1)}); }, ErrorCode::out_of_range, "too many indices");
  expect_error([&] { Tensor::ones({}, dtypes::float32, kOpsDevice).getitem({Ix::slice()}); }, ErrorCode::out_of_range, "too many indices");
  expect_error([&] { x.getitem({Ix::ellipsis(), Ix::ellipsis()}); }, ErrorCode::out_of_range, "single ellipsis");
  expect_error([&] { x.getitem({Ix::slice(none, none, 0)}); }, ErrorCode::invalid_argument, "step cannot be zero");
  expect_error([&] { x.getitem({Ix::tensor(host_tensor({1}, {1}))}); }, ErrorCode::invalid_argument, "integer dtype, got float32");
  expect_error([&] { x.getitem({Ix::tensor(ints({0, 1, 2}, {3})), Ix::tensor(ints({0, 1}, {2}))}); }, ErrorCode::invalid_argument,
               "cannot be broadcast together");
  Tensor y = Tensor::zeros({4, 3}, dtypes::float32, kOpsDevice);
  expect_error([&] { y.setitem({Ix::integer(0)}, host_tensor({1, 2}, {2})); }, ErrorCode::invalid_argument,
               "cannot be broadcast to the indexed shape (3,)");
}
