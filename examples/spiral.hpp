// examples/spiral.hpp - the data and the model's start shared by train_mlp.cpp and
// train_mlp_dist.cpp: a generated three-arm spiral (2-D points, three classes; the same points on
// every machine, no download) and the MLP 2-64-64-3's initial weights.
#pragma once
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spiral {

constexpr int64_t kPerClass = 300, kClasses = 3, kHidden = 64, kBatch = 128;

// A 64-bit LCG: the same numbers on every platform (std distributions are not).
struct Lcg {
  uint64_t s;
  double uniform() {  // [0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  }
};

struct Data {
  std::vector<float> x;    // (n, 2)
  std::vector<int32_t> y;  // (n,)
};

// Three spiral arms; every 5th point is held out.
inline void generate(Data& train, Data& test) {
  Lcg rng{42};
  for (int64_t c = 0; c < kClasses; ++c)
    for (int64_t i = 0; i < kPerClass; ++i) {
      double r = static_cast<double>(i) / kPerClass;
      double t = 4.0 * static_cast<double>(c) + 4.0 * r + 0.2 * (rng.uniform() - 0.5) * 2;
      Data& d = i % 5 == 0 ? test : train;
      d.x.push_back(static_cast<float>(r * std::sin(t)));
      d.x.push_back(static_cast<float>(r * std::cos(t)));
      d.y.push_back(static_cast<int32_t>(c));
    }
  // shuffled (Fisher-Yates), so that a window of the training set holds every class
  for (size_t i = train.y.size() - 1; i > 0; --i) {
    size_t j = static_cast<size_t>(rng.uniform() * static_cast<double>(i + 1));
    std::swap(train.y[i], train.y[j]);
    std::swap(train.x[2 * i], train.x[2 * j]);
    std::swap(train.x[2 * i + 1], train.x[2 * j + 1]);
  }
}

inline kiln::Tensor init(int64_t out, int64_t in, const std::string& dev) {
  return ((kiln::Tensor::rand({out, in}, kiln::dtypes::float32, dev) - 0.5) * (2 / std::sqrt(double(in)))).contiguous().realize();
}

// The MLP's parameters (w1, b1, w2, b2, w3, b3) on `dev`, from the kiln generator's current state.
inline std::vector<kiln::Tensor> init_params(const std::string& dev) {
  using kiln::Tensor;
  return {init(kHidden, 2, dev), Tensor::zeros({kHidden}, kiln::dtypes::float32, dev).contiguous(),
          init(kHidden, kHidden, dev), Tensor::zeros({kHidden}, kiln::dtypes::float32, dev).contiguous(),
          init(kClasses, kHidden, dev), Tensor::zeros({kClasses}, kiln::dtypes::float32, dev).contiguous()};
}

}  // namespace spiral
