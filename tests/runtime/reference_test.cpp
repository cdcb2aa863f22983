// tests/runtime/reference_test.cpp - the reference executor (device "ref", runtime/reference.cpp)
// against plain loops where its reduce memo matters: a reduce nested in a loop it does not depend
// on is computed once per value of the ranges it does depend on, and recomputed when they change.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

std::vector<float> iota_values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((static_cast<int>(i * 37 % 101) - 50) * 0.03);
  return v;
}

}  // namespace

// softmax's kernel reads the row's max and sum inside the loop over the row's columns (one kernel,
// nested reduces): every row gets its own, never the previous row's
TEST(Reference, NestedReducesFollowTheRangesTheyDependOn) {
  const int64_t rows = 7, cols = 33;
  std::vector<float> x = iota_values(rows * cols);
  Tensor t = Tensor::from_vector<float>(x, {rows, cols}, "ref");
  std::vector<float> got = t.softmax(-1).to_vector<float>();
  std::vector<float> centered = (t - t.mean({-1}, true)).to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0, mean = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c])), mean += x[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(double(x[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_NEAR(got[r * cols + c], std::exp(double(x[r * cols + c]) - m) / s, 1e-6) << r << "," << c;
      EXPECT_NEAR(centered[r * cols + c], x[r * cols + c] - mean, 1e-5) << r << "," << c;
    }
  }
}

// an in-place update whose kernel reads the buffer it writes: no reduce is reused across its stores
TEST(Reference, AnInPlaceUpdateReadsWhatItWrites) {
  const int64_t rows = 5, cols = 9;
  std::vector<float> x = iota_values(rows * cols);
  Tensor t = Tensor::from_vector<float>(x, {rows, cols}, "ref").realize();
  t.assign(t - t.max({-1}, true)).realize();
  std::vector<float> got = t.to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float m = *std::max_element(x.begin() + r * cols, x.begin() + (r + 1) * cols);
    for (int64_t c = 0; c < cols; ++c) EXPECT_FLOAT_EQ(got[r * cols + c], x[r * cols + c] - m) << r << "," << c;
  }
}
