// tests/tensor/api_test.cpp - shapes, dtypes, errors and execution semantics of the Tensor API.
#include <gtest/gtest.h>

#include <cmath>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "support/env.hpp"

using namespace kiln;

namespace {
const char* R = "ref";
Tensor vec(std::vector<float> v) { return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}, R); }

}  // namespace

TEST(TensorApi, ShapesAndDtypes) {
  Tensor x = Tensor::zeros({2, 3}, dtypes::float32, R);
  EXPECT_EQ(x.shape(), (Shape{2, 3}));
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.reshape({3, -1}).shape(), (Shape{3, 2}));
  EXPECT_EQ(x.sum({-1}).shape(), (Shape{2}));
  EXPECT_EQ(x.sum({0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(x.sum().shape(), (Shape{}));
  EXPECT_EQ((x + Tensor::ones({3}, dtypes::float32, R)).shape(), (Shape{2, 3}));
  EXPECT_EQ(x.lt(x).dtype(), dtypes::bool_);
  Tensor i = Tensor::zeros({2}, dtypes::int32, R);
  EXPECT_EQ((i + x.sum({0}).shrink({{0, 2}})).dtype(), dtypes::float32);
  EXPECT_EQ((i + 1).dtype(), dtypes::int32) << "integer scalars are weak";
  EXPECT_EQ((i + 1.0).dtype(), dtypes::float32) << "double scalars make floats";
  EXPECT_EQ((i / i).dtype(), dtypes::float32) << "true division";
  EXPECT_EQ(Tensor::zeros({2}, dtypes::int8, R).sum().dtype(), dtypes::int32);
  EXPECT_EQ((Tensor::zeros({2}, dtypes::int8, R) + Tensor::zeros({2}, dtypes::uint8, R)).dtype(), dtypes::int16);
  EXPECT_EQ(x.argmax(1).dtype(), dtypes::int32);
  EXPECT_EQ(x.matmul(x.transpose()).shape(), (Shape{2, 2}));
  EXPECT_EQ(Tensor::zeros({5, 2, 3}, dtypes::float32, R).matmul(Tensor::zeros({3, 4}, dtypes::float32, R)).shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(Tensor::zeros({1, 3, 8, 8}, dtypes::float32, R).conv2d(Tensor::zeros({4, 3, 3, 3}, dtypes::float32, R), std::nullopt, 2, 1).shape(),
            (Shape{1, 4, 4, 4}));
}

TEST(TensorApi, MisuseNamesOpShapesAndFix) {
  Tensor a = Tensor::zeros({2, 3}, dtypes::float32, R), b = Tensor::zeros({4, 3}, dtypes::float32, R);
  EXPECT_ERROR(a + b, "add", "(2, 3)", "(4, 3)", "broadcast");
  EXPECT_ERROR(a.matmul(a), "matmul", "inner dimensions", "(2, 3)", "3 != 2");
  EXPECT_ERROR(a.sum({2}), "sum", "axis 2", "out of range");
  EXPECT_ERROR(a.reshape({4, 2}), "reshape", "(2, 3)", "(4, 2)");
  EXPECT_ERROR(a.reshape({-1, -1}), "reshape", "only one dimension can be -1");
  EXPECT_ERROR(a.pad({{1, 1}}), "pad", "one per dimension");
  EXPECT_ERROR(a.pad({{-1, 0}, {0, 0}}), "pad", "negative", "shrink");
  EXPECT_ERROR(a.shrink({{0, 3}, {0, 3}}), "shrink", "(0, 3)", "size 2");
  EXPECT_ERROR(a.permute({0, 0}), "permute", "twice");
  EXPECT_ERROR(a.expand({4, 3}), "expand", "(2, 3)", "(4, 3)");
  EXPECT_ERROR(a.idiv(a), "idiv", "integer");
  EXPECT_ERROR(a.item<float>(), "item", "6 elements");
  EXPECT_ERROR(Tensor::from_vector<float>({1, 2, 3}, {2, 2}, R), "from_vector", "3 values", "(2, 2)");
  EXPECT_ERROR(Tensor::zeros({1, 1, 4, 4}, dtypes::float32, R).conv2d(b), "conv2d", "OIHW");
  EXPECT_ERROR(a.conv2d(b), "conv2d", "NCHW");
  EXPECT_ERROR(Tensor::zeros({2}, dtypes::float32, "nosuchdevice"), "nosuchdevice");
  EXPECT_ERROR(Variable("n", 1, 8).bind(9), "'n'", "9", "[1, 8]");
  EXPECT_ERROR(Tensor::arange(0, 1, 0, dtypes::float32, R), "arange", "step");
}

TEST(TensorApi, MisuseMessagesNameTheUsersShapesAndArguments) {
  auto z = [](Shape s) { return Tensor::zeros(s, dtypes::float32, R); };
  // batched matmul: reported as matmul with the shapes the user passed, not an internal mul
  std::string mm = kiln::testing::error_of([&] { (void)z({2, 3, 4}).matmul(z({5, 4, 6})); });
  EXPECT_ERROR(z({2, 3, 4}).matmul(z({5, 4, 6})), "matmul", "(2, 3, 4)", "(5, 4, 6)", "batch", "2 != 5", "match or be 1");
  EXPECT_EQ(mm.rfind("matmul:", 0), 0u) << "must be reported as matmul, not an internal op: " << mm;
  EXPECT_ERROR(z({3, 2, 2, 4}).matmul(z({3, 4, 6})), "matmul", "(3, 2, 2, 4)", "(3, 4, 6)", "batch", "2 != 3");
  EXPECT_EQ(z({3, 1, 2, 4}).matmul(z({5, 4, 6})).shape(), (Shape{3, 5, 2, 6})) << "size-1 batch dimensions still broadcast";
  // pooling: the values given and the input shape
  EXPECT_ERROR(z({1, 2, 8, 8}).max_pool2d(0, 1, 0), "max_pool2d", "kernel 0", "stride 1", "padding 0", "(1, 2, 8, 8)", "kernel >= 1");
  EXPECT_ERROR(z({1, 2, 8, 8}).avg_pool2d(2, -1, 0), "avg_pool2d", "kernel 2", "stride -1", "(1, 2, 8, 8)", "stride >= 0");
  EXPECT_ERROR(z({1, 2, 8, 8}).avg_pool2d(3, 1, -2), "avg_pool2d", "padding -2", "(1, 2, 8, 8)", "padding >= 0");
  // repeated axes: the tensor's shape and the argument as given
  EXPECT_ERROR(z({2, 3, 4}).permute({0, 2, -1}), "permute", "axis -1", "twice", "(0, 2, -1)", "(2, 3, 4)");
  EXPECT_ERROR(z({2, 3}).flip({0, -2}), "flip", "axis -2", "twice", "(0, -2)", "(2, 3)");
  EXPECT_ERROR(z({2, 3}).sum({1, -1}), "sum", "axis -1", "twice", "(1, -1)", "(2, 3)");
  // negative pad: the pair, the dimension and the shape
  EXPECT_ERROR(z({2, 3}).pad({{0, 0}, {2, -1}}), "pad", "(2, -1)", "dimension 1", "(2, 3)", ">= 0", "shrink");
  // bad axes: the axis, the shape and the valid range
  EXPECT_ERROR(z({2, 3}).sum({2}), "sum", "axis 2", "(2, 3)", "-2 <= axis < 2");
  EXPECT_ERROR(z({2, 3}).flip({-3}), "flip", "axis -3", "(2, 3)", "-2 <= axis < 2");
  EXPECT_ERROR(z({2, 3}).permute({0, 5}), "permute", "axis 5", "(2, 3)");
  EXPECT_ERROR(z({2, 3}).argmax(3), "argmax", "axis 3", "(2, 3)");
  EXPECT_ERROR(z({2, 3}).unsqueeze(4), "unsqueeze", "axis 4", "(2, 3)", "-3 <= axis < 3");
  EXPECT_ERROR(Tensor::stack({z({2, 3}), z({2, 3})}, 3), "stack", "axis 3", "(2, 3)", "-3 <= axis < 3");
}

TEST(TensorApi, RealizeSharesStateAndRedirectsLazyGraphs) {
  Tensor x = vec({1, 2, 3});
  Tensor y = x * 2.0;
  Tensor z = y + 1.0;  // lazy, built on the unrealized y
  Tensor y2 = y;       // copy shares state
  y.realize();
  EXPECT_EQ(y2.uop(), y.uop());
  EXPECT_NE(y.uop().op(), Ops::MUL);
  // z now reads y's buffer instead of recomputing y
  auto items = z.schedule();
  int kernels = 0;
  for (auto& e : items) kernels += !e.is_copy;
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{3, 5, 7}));
}

TEST(TensorApi, RealizeLeavesOlderGraphsAlone) {
  // a lazy graph built before y (which cannot read y) keeps its graph; the ones built on y, before
  // and after other work, read y's buffer (realize skips graphs older than what it realized)
  Tensor w = vec({4, 5, 6}) * 3.0;
  UOp w_before = w.uop();
  Tensor y = vec({1, 2, 3}) * 2.0;
  Tensor z = y + 1.0;
  Tensor u = (vec({1, 1, 1}) - 1.0) + y;  // made after y with parts of its own
  y.realize();
  EXPECT_EQ(w.uop(), w_before);
  for (Tensor* t : {&z, &u}) {
    int kernels = 0;
    for (auto& e : t->schedule()) kernels += !e.is_copy;
    EXPECT_EQ(kernels, 1);  // y is not computed again
  }
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{12, 15, 18}));
}

TEST(TensorApi, AssignAfterReadSeesOldValue) {
  Tensor a = vec({1, 2, 3}).realize();
  Tensor before = a + 10.0;     // reads a's current contents
  Tensor alias = a;             // shares state: sees the assign
  a.assign(a * 2.0);
  std::vector<Tensor> both{a, before};
  Tensor::realize_all(both);
  EXPECT_EQ(before.to_vector<float>(), (std::vector<float>{11, 12, 13}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  // assigning a transposed read of itself goes through a temporary (no in-place hazard)
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, R).realize();
  m.assign(m.transpose());
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{1, 3, 2, 4}));
}

TEST(TensorApi, ReadBackConvertsDtype) {
  Tensor x = vec({1.5f, -2.5f});
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{1, -2}));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1.5, -2.5}));
  EXPECT_EQ(x.lt(vec({0, 0})).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_FLOAT_EQ(x.sum().item<float>(), -1.0f);
}

TEST(TensorApi, BytesCrossInTheTensorsOwnDtype) {
  // float16 1.5, -2, 65504 (the Python package moves numpy arrays of every dtype this way)
  std::vector<uint16_t> half{0x3e00, 0xc000, 0x7bff};
  Tensor h = Tensor::from_bytes(half.data(), 6, dtypes::float16, {3}, R);
  EXPECT_EQ(h.dtype(), dtypes::float16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 65504.0f}));
  std::vector<uint16_t> back(3);
  (h * 1.0).to_bytes(back.data(), 6);
  EXPECT_EQ(back, half);
  std::vector<uint8_t> flags{1, 0, 1, 1};
  Tensor b = Tensor::from_bytes(flags.data(), 4, dtypes::bool_, {2, 2}, R);
  EXPECT_EQ(b.permute({1, 0}).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  std::vector<int64_t> out(2);
  Tensor::from_vector<int64_t>({3, 4}, {2}, R).to_bytes(out.data(), 16);
  EXPECT_EQ(out, (std::vector<int64_t>{3, 4}));
  EXPECT_ERROR(Tensor::from_bytes(half.data(), 4, dtypes::float16, {3}, R), "from_bytes", "6 bytes");
  EXPECT_ERROR(h.to_bytes(back.data(), 8), "to_bytes", "6 bytes");
  EXPECT_NO_THROW(Tensor::from_bytes(nullptr, 0, dtypes::float32, {0, 3}, R).to_bytes(nullptr, 0));
}

TEST(TensorApi, RandIsSeededUniformAndRandnIsNormal) {
  manual_seed(7);
  auto a = Tensor::rand({1000}, dtypes::float32, R).to_vector<float>();
  manual_seed(7);
  auto b = Tensor::rand({1000}, dtypes::float32, R).to_vector<float>();
  auto c = Tensor::rand({1000}, dtypes::float32, R).to_vector<float>();
  EXPECT_EQ(a, b) << "same seed, same numbers";
  EXPECT_NE(a, c) << "the counter advances";
  double mean = 0;
  for (float v : a) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
    mean += v;
  }
  EXPECT_NEAR(mean / 1000, 0.5, 0.05);
  auto h = Tensor::rand({500}, dtypes::float16, R).to_vector<float>();
  for (float v : h) EXPECT_LT(v, 1.0f) << "half rand stays below 1";
  auto n = Tensor::randn({4000}, dtypes::float32, R).to_vector<float>();
  double m = 0, s = 0;
  for (float v : n) m += v;
  m /= n.size();
  for (float v : n) s += (v - m) * (v - m);
  EXPECT_NEAR(m, 0.0, 0.1);
  EXPECT_NEAR(std::sqrt(s / n.size()), 1.0, 0.1);
}

// An out-of-range gather index gives 0 (tensor.hpp); KILN_CHECK_BOUNDS=1 turns it into an error
// that names the index, where it is and the valid range.
TEST(TensorApi, GatherOutOfRangeIsZeroOrAnErrorWhenChecked) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, R);
  Tensor bad = Tensor::from_vector<int32_t>({0, 3, -4, -1}, {2, 2}, R);
  Tensor good = Tensor::from_vector<int32_t>({0, 2, -3, -1}, {2, 2}, R);
  EXPECT_EQ(x.gather(1, bad).to_vector<float>(), (std::vector<float>{1, 0, 0, 6}));
  // wide indices are not narrowed on the way: these would wrap to 1 and -1 in 32 bits
  EXPECT_EQ(x.gather(1, Tensor::from_vector<uint64_t>({(uint64_t{1} << 32) + 1, ~uint64_t{0}}, {1, 2}, R)).to_vector<float>(),
            (std::vector<float>{0, 0}));
  struct Restore {
    ~Restore() { set_knob(Knob::check_bounds, 0); }
  } restore;
  set_knob(Knob::check_bounds, 1);
  kiln::testing::expect_error([&] { (void)x.gather(1, bad); }, ErrorCode::out_of_range,
                        "gather: index 3 at position (0, 1) is out of range for axis 1 of size 3 (valid: -3 to 2");
  kiln::testing::expect_error([&] { (void)x.gather(-2, Tensor::from_vector<int64_t>({2}, {1, 1}, R)); }, ErrorCode::out_of_range,
                        "index 2 at position (0, 0) is out of range for axis 0 of size 2");
  EXPECT_EQ(x.gather(1, good).to_vector<float>(), (std::vector<float>{1, 3, 4, 6})) << "in-range indices pass the check";
  kiln::testing::expect_error([&] { (void)x.gather(1, Tensor::from_vector<uint64_t>({0, ~uint64_t{0}}, {1, 2}, R)); },
                              ErrorCode::out_of_range, "index 18446744073709551615 at position (0, 1)");
}
