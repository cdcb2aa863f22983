// tests/ops/norm_test.cpp - layernorm, batchnorm and dropout against plain C++
// references (and finite differences for the gradients), plus the safetensors round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "kiln/safetensors.hpp"
#include "error_check.hpp"
#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

// For each element of a row-major tensor of `shape`, the flat index of its group: its index with
// the `axes` coordinates set to 0 (the elements a reduction over `axes` combines).
std::vector<int64_t> groups_of(const Shape& shape, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, key = 0, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t c = rest % shape[d];
      rest /= shape[d];
      bool reduced = false;
      for (int a : axes) reduced |= (a < 0 ? a + static_cast<int>(shape.size()) : a) == static_cast<int>(d);
      if (!reduced) key += c * stride;
      stride *= shape[d];
    }
    out[static_cast<size_t>(i)] = key;
  }
  return out;
}

std::vector<double> ref_layernorm(const std::vector<double>& x, const Shape& shape, const std::vector<int>& axes, double eps) {
  std::vector<int64_t> g = groups_of(shape, axes);
  std::map<int64_t, double> sum, sq, count;
  for (size_t i = 0; i < x.size(); ++i) sum[g[i]] += x[i], count[g[i]] += 1;
  for (size_t i = 0; i < x.size(); ++i) {
    double m = sum[g[i]] / count[g[i]];
    sq[g[i]] += (x[i] - m) * (x[i] - m);
  }
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double m = sum[g[i]] / count[g[i]], v = sq[g[i]] / count[g[i]];
    out[i] = (x[i] - m) / std::sqrt(v + eps);
  }
  return out;
}

// Restores the training flag a test changed, also when the test fails.
struct TrainingScope {
  bool was = Tensor::training();
  explicit TrainingScope(bool on) { Tensor::set_training(on); }
  ~TrainingScope() { Tensor::set_training(was); }
};


}  // namespace

TEST(Layernorm, MatchesReferenceOverOneOrSeveralAxes) {
  struct Case {
    Shape shape;
    std::vector<int> axes;
    double eps;
  };
  for (const Case& c : {Case{{3, 5}, {-1}, 1e-5}, Case{{1, 7}, {1}, 1e-5}, Case{{4, 1}, {-1}, 1e-5}, Case{{2, 3, 4}, {0, 2}, 1e-3},
                        Case{{2, 3, 4}, {-2, -1}, 0.5}, Case{{5}, {0}, 1e-5}}) {
    auto x = sample(c.shape, 3);
    EXPECT_EQ(compare(host_tensor(x, c.shape).layernorm(c.axes, c.eps), c.shape, ref_layernorm(x, c.shape, c.axes, c.eps), 1e-4, 1e-5), "")
        << "axes " << c.axes.size() << " eps " << c.eps;
  }
}

TEST(Layernorm, GradientMatchesFiniteDifferences) {
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].layernorm() * x[1]; },
                           {{sample({3, 4}, 5), {3, 4}}, {sample({3, 4}, 6), {3, 4}}}),
            "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0].layernorm({0, 2}, 1e-2) * x[1]; },
                           {{sample({2, 3, 2}, 7), {2, 3, 2}}, {sample({2, 3, 2}, 8), {2, 3, 2}}}),
            "");
}

TEST(Layernorm, BadAxesNameTheProblem) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_NE(error_of([&] { x.layernorm({2}); }).find("layernorm"), std::string::npos);
  EXPECT_NE(error_of([&] { x.layernorm({1, -1}); }).find("twice"), std::string::npos);
  EXPECT_NE(error_of([&] { x.layernorm({}); }).find("at least one axis"), std::string::npos);
}

TEST(Batchnorm, MatchesReferenceOnChannels) {
  const Shape s{2, 3, 2, 2};
  auto x = sample(s, 11), w = sample({3}, 12), b = sample({3}, 13), m = sample({3}, 14), inv = sample({3}, 15, 0.5, 2);
  std::vector<double> want(x.size()), want_plain(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t c = (i / 4) % 3;
    want[i] = (x[i] - m[c]) * w[c] * inv[c] + b[c];
    want_plain[i] = (x[i] - m[c]) * inv[c];
  }
  Tensor X = host_tensor(x, s);
  EXPECT_EQ(compare(X.batchnorm(host_tensor(w, {3}), host_tensor(b, {3}), host_tensor(m, {3}), host_tensor(inv, {3})), s, want), "");
  EXPECT_EQ(compare(X.batchnorm(std::nullopt, std::nullopt, host_tensor(m, {3}), host_tensor(inv, {3})), s, want_plain), "");
  // a 0-d invstd multiplies as it is
  std::vector<double> want_scalar(x.size());
  for (size_t i = 0; i < x.size(); ++i) want_scalar[i] = (x[i] - m[(i / 4) % 3]) * 2.0;
  EXPECT_EQ(compare(X.batchnorm(std::nullopt, std::nullopt, host_tensor(m, {3}), host_tensor({2.0}, {})), s, want_scalar), "");
}

TEST(Batchnorm, SeveralAxesAndNegativeAxes) {
  const Shape s{2, 3, 4};
  auto x = sample(s, 21), m = sample({3, 4}, 22), inv = sample({3, 4}, 23, 0.5, 2);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = (x[i] - m[i % 12]) * inv[i % 12];
  EXPECT_EQ(compare(host_tensor(x, s).batchnorm(std::nullopt, std::nullopt, host_tensor(m, {3, 4}), host_tensor(inv, {3, 4}), {-2, -1}), s, want), "");
}

TEST(Batchnorm, GradientMatchesFiniteDifferences) {
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& t) { return t[0].batchnorm(t[1], t[2], t[3], t[4]); },
                           {{sample({2, 3, 2}, 31), {2, 3, 2}}, {sample({3}, 32), {3}}, {sample({3}, 33), {3}},
                            {sample({3}, 34), {3}}, {sample({3}, 35, 0.5, 2), {3}}}),
            "");
}

TEST(Batchnorm, MismatchedStatisticsNameTheOperand) {
  Tensor x = Tensor::zeros({2, 3, 4});
  std::string e = error_of([&] { x.batchnorm(std::nullopt, std::nullopt, Tensor::zeros({4}), Tensor::ones({3})); });
  EXPECT_NE(e.find("batchnorm: mean of shape (4,)"), std::string::npos) << e;
  e = error_of([&] { x.batchnorm(Tensor::ones({2}), std::nullopt, Tensor::zeros({3}), Tensor::ones({3})); });
  EXPECT_NE(e.find("weight"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { x.batchnorm(std::nullopt, std::nullopt, Tensor::zeros({3}), Tensor::ones({3}), {3}); }).find("batchnorm"),
            std::string::npos);
}

TEST(Dropout, IsIdentityUnlessTraining) {
  TrainingScope off(false);
  Tensor x = host_tensor(sample({4, 5}, 41), {4, 5});
  EXPECT_EQ(x.dropout(0.5).uop(), x.uop());
  TrainingScope on(true);
  EXPECT_EQ(x.dropout(0).uop(), x.uop());
}

TEST(Dropout, TrainingKeepsScaledOrZeroes) {
  TrainingScope on(true);
  const Shape s{64, 64};
  auto xs = sample(s, 42, 1, 2);  // no zeros, so a zero in the result is a dropped element
  Tensor x = host_tensor(xs, s);
  manual_seed(7);
  std::vector<float> y = x.dropout(0.25).to_vector<float>();
  size_t dropped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0) ++dropped;
    else EXPECT_NEAR(y[i], xs[i] / 0.75, 1e-5) << "element " << i;
  }
  // 4096 draws at p = 0.25: 1024 expected, sd ~28; 200 either side is > 7 sd
  EXPECT_GT(dropped, 824u);
  EXPECT_LT(dropped, 1224u);
  // the same seed, the same mask
  manual_seed(7);
  EXPECT_EQ(x.dropout(0.25).to_vector<float>(), y);
  // p == 1 drops everything, NaN included, and the gradient is zeros
  Tensor n = host_tensor({1, NAN, 3}, {3}).requires_grad_();
  Tensor d = n.dropout(1.0);
  EXPECT_EQ(compare(d, {3}, {0, 0, 0}), "");
  d.sum().backward();
  EXPECT_EQ(compare(*n.grad(), {3}, {0, 0, 0}), "");
}

TEST(Dropout, GradientIsTheMaskScaled) {
  TrainingScope on(true);
  Tensor x = host_tensor(sample({100}, 43, 1, 2), {100}).requires_grad_();
  Tensor y = x.dropout(0.5);
  y.sum().backward();
  std::vector<float> yv = y.to_vector<float>(), g = x.grad()->to_vector<float>();
  for (size_t i = 0; i < yv.size(); ++i) EXPECT_EQ(g[i], yv[i] == 0 ? 0.0f : 2.0f) << "element " << i;
}

TEST(Dropout, RejectsPOutsideTheUnitInterval) {
  Tensor x = Tensor::ones({2});
  EXPECT_NE(error_of([&] { x.dropout(-0.1); }).find("dropout: p must be in [0, 1]"), std::string::npos);
  EXPECT_NE(error_of([&] { x.dropout(1.5); }).find("got 1.5"), std::string::npos);
}

TEST(Safetensors, RoundTripsEveryDtype) {
  safetensors::Named in{
      {"f32", host_tensor(sample({2, 3}, 51), {2, 3})},
      {"f16", host_tensor({0.5, -2, 3}, {3}, dtypes::float16)},
      {"bf16", host_tensor({1, -1.5}, {2}, dtypes::bfloat16)},
      {"f64", host_tensor({1e-300, 3}, {2}, dtypes::float64)},
      {"i64", Tensor::from_vector<int64_t>({-1, int64_t{1} << 40}, {2})},
      {"u8", Tensor::from_vector<uint8_t>({0, 255}, {2})},
      {"b", Tensor::from_vector<bool>({true, false, true}, {3})},
      {"scalar", host_tensor({7}, {})},
      {"empty", Tensor::zeros({0, 4})},
  };
  std::string bytes = safetensors::serialize(in, {{"format", "pt"}, {"quote\"d", "a\nb"}});
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ((8 + n) % 8, 0u);  // data aligned
  EXPECT_NE(bytes.find("\"f32\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"), std::string::npos);
  safetensors::Contents out = safetensors::deserialize(bytes.data(), bytes.size(), "cpu:0");
  ASSERT_EQ(out.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out.tensors[i].first, in[i].first);
    const Tensor &a = in[i].second, &b = out.tensors[i].second;
    EXPECT_EQ(b.shape(), a.shape()) << in[i].first;
    EXPECT_EQ(b.dtype(), a.dtype()) << in[i].first;
    std::string ab(static_cast<size_t>(a.numel() * a.dtype().itemsize()), '\0'), bb = ab;
    a.to_bytes(ab.data(), ab.size());
    b.to_bytes(bb.data(), bb.size());
    EXPECT_EQ(ab, bb) << in[i].first;
  }
  ASSERT_EQ(out.metadata.size(), 2u);
  EXPECT_EQ(out.metadata[1].first, "quote\"d");
  EXPECT_EQ(out.metadata[1].second, "a\nb");
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // as another writer might lay it out: spaces, escapes, metadata last, data in reverse order
  std::string header = R"( { "b" : {"dtype":"I32","shape":[],"data_offsets":[8,12]}, "a\u0041":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
      "__metadata__": {"k": "v"} })";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i) & 0xFF);
  file += header;
  float f[2] = {1.5f, -2};
  int32_t k = 42;
  file.append(reinterpret_cast<const char*>(f), 8).append(reinterpret_cast<const char*>(&k), 4);
  safetensors::Contents c = safetensors::deserialize(file.data(), file.size(), "cpu:0");
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].first, "b");
  EXPECT_EQ(c.tensors[0].second.item<int32_t>(), 42);
  EXPECT_EQ(c.tensors[1].first, "aA");
  EXPECT_EQ(compare(c.tensors[1].second, {2}, {1.5, -2}), "");
  ASSERT_EQ(c.metadata.size(), 1u);
}

TEST(Safetensors, CorruptFilesNameTheProblem) {
  auto with_header = [](const std::string& h, size_t data) {
    std::string f(8, '\0');
    for (int i = 0; i < 8; ++i) f[static_cast<size_t>(i)] = static_cast<char>(h.size() >> (8 * i) & 0xFF);
    return f + h + std::string(data, '\0');
  };
  auto err = [](const std::string& f) { return error_of([&] { safetensors::deserialize(f.data(), f.size(), "cpu:0"); }); };
  EXPECT_NE(err("abc").find("shorter than the 8-byte header length"), std::string::npos);
  std::string big(8, '\xff');
  EXPECT_NE(err(big).find("runs past the end"), std::string::npos);
  EXPECT_NE(err(with_header("{\"a\":", 0)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)).find("needs 12 bytes"), std::string::npos);
  EXPECT_NE(err(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)).find("outside the 4 bytes"), std::string::npos);
  EXPECT_NE(err(with_header(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8)).find("'C64'"), std::string::npos);
  EXPECT_NE(err(with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", 8)).find("non-negative"), std::string::npos);
  EXPECT_NE(err(with_header(R"({"a":{"shape":[1]}})", 0)).find("needs \"dtype\""), std::string::npos);
  EXPECT_NE(error_of([] { safetensors::serialize({{"x", Tensor::ones({1})}, {"x", Tensor::ones({1})}}); }).find("given twice"), std::string::npos);
  EXPECT_NE(error_of([] { safetensors::load("/nonexistent/kiln.safetensors"); }).find("cannot open '/nonexistent/kiln.safetensors'"),
            std::string::npos);
}
