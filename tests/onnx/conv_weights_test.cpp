// conv_weights_test.cpp - Conv weights the loader stores output channel innermost
// (tensor_proto.hpp, Layout::out_channels_last): the outputs must equal a plain C++ convolution,
// the weight read by any other node must keep its values and shape, and a run on another device
// (which copies the initializers) must agree; 1 x 1 and grouped convolutions, stored as given,
// alongside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <random>

#include "kiln/onnx.hpp"
#include "model_builder.hpp"

namespace fs = std::filesystem;
using kiln::Tensor;
using kiln::onnx::Model;
namespace om = kiln::test::onnx_models;
using P = ::onnx::TensorProto;

namespace {

struct ConvCase {
  int64_t n, c, h, w;             // input
  int64_t o, kh, kw, group;       // weight (o, c / group, kh, kw)
  int64_t pad, stride, dilation;  // the same on both spatial axes
};

void PrintTo(const ConvCase& k, std::ostream* os) {
  *os << "x " << k.n << "x" << k.c << "x" << k.h << "x" << k.w << ", w " << k.o << "x" << k.c / k.group << "x" << k.kh
      << "x" << k.kw << ", group " << k.group << ", pad " << k.pad << ", stride " << k.stride << ", dilation " << k.dilation;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// The convolution as ONNX defines it, in double, with the bias.
std::vector<double> reference(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b, int64_t oh, int64_t ow) {
  const int64_t cg = k.c / k.group, og = k.o / k.group;
  std::vector<double> y(size_t(k.n * k.o * oh * ow));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t yy = 0; yy < oh; ++yy)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = b[size_t(o)];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                const int64_t iy = yy * k.stride + ky * k.dilation - k.pad, ix = xx * k.stride + kx * k.dilation - k.pad;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t c = (o / og) * cg + ci;
                s += double(x[size_t(((n * k.c + c) * k.h + iy) * k.w + ix)]) *
                     double(w[size_t(((o * cg + ci) * k.kh + ky) * k.kw + kx)]);
              }
          y[size_t(((n * k.o + o) * oh + yy) * ow + xx)] = s;
        }
  return y;
}

// y = Conv(x, w, b) and w_seen = Identity(w): the weight as the graph sees it, whatever its storage.
std::string write_model(const ConvCase& k, int64_t oh, int64_t ow, const std::vector<float>& w, const std::vector<float>& b,
                        const fs::path& dir) {
  auto s = [](int64_t v) { return std::to_string(v); };
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {s(k.n), s(k.c), s(k.h), s(k.w)}});
  om::output(m, {"y", P::FLOAT, {s(k.n), s(k.o), s(oh), s(ow)}});
  om::output(m, {"w_seen", P::FLOAT, {s(k.o), s(k.c / k.group), s(k.kh), s(k.kw)}});
  om::initializer(m, "w", {k.o, k.c / k.group, k.kh, k.kw}, w);
  om::initializer(m, "b", {k.o}, b);
  auto* conv = om::node(m, "Conv", {"x", "w", "b"}, {"y"}, "conv");
  auto ints = [&](const char* name, std::vector<int64_t> v) {
    auto* a = conv->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto i : v) a->add_ints(i);
  };
  ints("pads", {k.pad, k.pad, k.pad, k.pad});
  ints("strides", {k.stride, k.stride});
  ints("dilations", {k.dilation, k.dilation});
  auto* g = conv->add_attribute();
  g->set_name("group");
  g->set_type(::onnx::AttributeProto::INT);
  g->set_i(k.group);
  om::node(m, "Identity", {"w"}, {"w_seen"}, "seen");
  const std::string path = (dir / "conv.onnx").string();
  om::save(m, path);
  return path;
}

double worst_error(const std::vector<float>& y, const std::vector<double>& want, size_t* at) {
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double err = std::abs(double(y[i]) - want[i]) / (1 + std::abs(want[i]));
    if (err > worst) worst = err, *at = i;
  }
  return worst;
}

// A case's output size and its random input, weight and bias (seeds from `seed`).
struct CaseData {
  int64_t oh, ow;
  std::vector<float> x, w, b;
};
CaseData case_data(const ConvCase& k, uint32_t seed) {
  return {(k.h + 2 * k.pad - k.dilation * (k.kh - 1) - 1) / k.stride + 1,
          (k.w + 2 * k.pad - k.dilation * (k.kw - 1) - 1) / k.stride + 1, random_floats(size_t(k.n * k.c * k.h * k.w), seed),
          random_floats(size_t(k.o * (k.c / k.group) * k.kh * k.kw), seed + 1), random_floats(size_t(k.o), seed + 2)};
}

class ConvWeights : public ::testing::TestWithParam<ConvCase> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_onnx_conv_weights_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(ConvWeights, MatchAPlainConvolutionOnEveryDevice) {
  const ConvCase k = GetParam();
  const auto [oh, ow, x, w, b] = case_data(k, 1);
  const std::string path = write_model(k, oh, ow, w, b, dir_);

  const Model model = Model::load(path);
  const auto want = reference(k, x, w, b, oh, ow);
  for (const std::string device : {"", "ref"}) {  // "ref": the initializers copied to another device
    SCOPED_TRACE("device '" + device + "'");
    Tensor input = Tensor::from_vector(x, {k.n, k.c, k.h, k.w});
    auto out = model.run({{"x", device.empty() ? input : input.to(device)}}, device);
    std::vector<Tensor> both{out.at("y"), out.at("w_seen")};
    Tensor::realize_all(both);
    ASSERT_EQ(out.at("w_seen").shape(), (kiln::Shape{k.o, k.c / k.group, k.kh, k.kw}));
    EXPECT_EQ(out.at("w_seen").to_vector<float>(), w);  // element by element, in the file's order
    const auto y = out.at("y").to_vector<float>();
    ASSERT_EQ(y.size(), want.size());
    size_t at = 0;
    EXPECT_LT(worst_error(y, want, &at), 1e-5) << "y[" << at << "] = " << y[at] << ", expected " << want[at];
  }
}

// The loader hands its own copy of the weights to the cpu device without another copy
// (tensor_proto.cpp, host_tensor): that memory must live as long as a tensor over it, here a lazy
// output realized after the model that loaded it is gone (ASan reports a use after free).
TEST_P(ConvWeights, OutputsRealizedAfterTheModelIsGone) {
  const ConvCase k = GetParam();
  const auto [oh, ow, x, w, b] = case_data(k, 4);
  std::map<std::string, Tensor> out;
  {
    const Model model = Model::load(write_model(k, oh, ow, w, b, dir_));
    out = model.run({{"x", Tensor::from_vector(x, {k.n, k.c, k.h, k.w})}});
  }
  EXPECT_EQ(out.at("w_seen").to_vector<float>(), w);
  const auto y = out.at("y").to_vector<float>();
  const auto want = reference(k, x, w, b, oh, ow);
  ASSERT_EQ(y.size(), want.size());
  size_t at = 0;
  EXPECT_LT(worst_error(y, want, &at), 1e-5) << "y[" << at << "] = " << y[at] << ", expected " << want[at];
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ConvWeights,
    ::testing::Values(ConvCase{1, 3, 9, 7, 5, 3, 2, 1, 1, 1, 1},     // stored out-channels-last, a non-square window
                      ConvCase{2, 16, 7, 7, 33, 3, 3, 1, 1, 1, 1},   // odd output channels, batch 2
                      ConvCase{1, 8, 11, 10, 16, 3, 3, 1, 0, 2, 2},  // strided, dilated, unpadded
                      ConvCase{1, 4, 6, 6, 6, 1, 1, 1, 0, 1, 1},     // 1 x 1: stored as given
                      ConvCase{1, 6, 6, 6, 6, 3, 3, 3, 1, 1, 1}));   // grouped: stored as given

}  // namespace
