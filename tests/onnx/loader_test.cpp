// loader_test.cpp - models kiln must refuse, each with a kiln::Error that names the file, the node
// at fault (where one is) and what to fix; and external data, which must load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "error_check.hpp"
#include "kiln/onnx.hpp"
#include "model_builder.hpp"

namespace fs = std::filesystem;
using kiln::ErrorCode;
using kiln::Tensor;
using kiln::onnx::Model;
namespace om = kiln::test::onnx_models;
using P = ::onnx::TensorProto;

namespace {

class Loader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_onnx_loader_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string save(const ::onnx::ModelProto& m, const std::string& name = "model.onnx") {
    std::string path = (dir_ / name).string();
    om::save(m, path);
    return path;
  }
  // The error loading `m` from a file (its path in *path), or a test failure when it loads.
  kiln::Error load_error(const ::onnx::ModelProto& m, std::string* path = nullptr) {
    std::string p = save(m);
    if (path) *path = p;
    try {
      Model::load(p);
    } catch (const kiln::Error& e) {
      return e;
    }
    ADD_FAILURE() << "the model loaded";
    return kiln::Error(ErrorCode::internal, "");
  }
  static kiln::Error run_error(const Model& model, const std::map<std::string, Tensor>& feeds) {
    try {
      for (auto& [k, t] : model.run(feeds)) t.realize();
    } catch (const kiln::Error& e) {
      return e;
    }
    ADD_FAILURE() << "the model ran";
    return kiln::Error(ErrorCode::internal, "");
  }
  fs::path dir_;
};

Tensor floats(std::vector<float> v, kiln::Shape shape) { return Tensor::from_vector(v, shape); }

TEST_F(Loader, TruncatedFile) {
  std::string bytes = om::scale_shift().SerializeAsString();
  std::string path = (dir_ / "cut.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    Model::load(path);
    FAIL() << "a truncated model loaded";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::data_loss);
    EXPECT_CONTAINS(e.what(), path + ": not an ONNX model");
    EXPECT_CONTAINS(e.what(), "truncated");
  }
}

TEST_F(Loader, MissingFile) {
  try {
    Model::load((dir_ / "nothing.onnx").string());
    FAIL();
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_CONTAINS(e.what(), "nothing.onnx: cannot open the model file");
  }
}

TEST_F(Loader, OpsetTooNew) {
  std::string path;
  kiln::Error e = load_error(om::scale_shift(99), &path);
  EXPECT_EQ(e.code(), ErrorCode::unimplemented);
  EXPECT_CONTAINS(e.what(), path + ": imports opset 99");
  EXPECT_CONTAINS(e.what(), "kiln supports opsets 1 to ");
  EXPECT_CONTAINS(e.what(), "re-export the model");
}

TEST_F(Loader, UnknownOperator) {
  auto m = om::model();
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"y", P::FLOAT, {"2"}});
  om::node(m, "Frobnicate", {"x"}, {"y"}, "weird");
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_EQ(e.code(), ErrorCode::unimplemented);
  EXPECT_CONTAINS(e.what(), path + ": node 'weird' (Frobnicate, opset 13): operator Frobnicate is not supported");
  EXPECT_CONTAINS(e.what(), "supported_ops()");
}

// A model of another domain only (ai.onnx.ml's classifiers, training's optimizers) imports no
// default-domain opset: the error names the domain, not the missing import.
TEST_F(Loader, OperatorOfAnotherDomain) {
  auto m = om::model();
  m.mutable_opset_import(0)->set_domain("ai.onnx.ml");
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"y", P::FLOAT, {"2"}});
  om::node(m, "Binarizer", {"x"}, {"y"}, "bin")->set_domain("ai.onnx.ml");
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_EQ(e.code(), ErrorCode::unimplemented);
  EXPECT_CONTAINS(e.what(), path + ": node 'bin' (Binarizer, opset 0): operators of domain 'ai.onnx.ml' are not supported");
}

// A model held in memory is named in messages by the name the caller gives (default "<bytes>").
TEST_F(Loader, FromBytesNamesTheModelAsGiven) {
  auto m = om::model();
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"y", P::FLOAT, {"2"}});
  om::node(m, "Frobnicate", {"x"}, {"y"}, "weird");
  const std::string bytes = m.SerializeAsString();
  for (const auto& [given, shown] : {std::pair<std::string, std::string>{"", "<bytes>"}, {"my model", "my model"}}) {
    try {
      Model::from_bytes(bytes, "", given);
      ADD_FAILURE() << "the model loaded";
    } catch (const kiln::Error& e) {
      EXPECT_CONTAINS(e.what(), shown + ": node 'weird' (Frobnicate, opset 13)");
    }
  }
}

TEST_F(Loader, UnknownAttribute) {
  auto m = om::scale_shift();
  auto* a = m.mutable_graph()->mutable_node(2)->add_attribute();
  a->set_name("alpha_typo");
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(1.f);
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), path + ": node 'act' (Relu, opset 13): attribute 'alpha_typo' is not supported");
  EXPECT_CONTAINS(e.what(), "Relu's attributes are:");  // the fix: which names kiln knows
}

// An operator's error at run (here the shapes of an initializer and of the value it meets) names
// the node and the shapes of its inputs, so the user knows which tensor to fix.
TEST_F(Loader, InitializerDoesNotFitItsNode) {
  auto m = om::scale_shift();
  m.mutable_graph()->mutable_initializer(0)->clear_dims();
  m.mutable_graph()->mutable_initializer(0)->add_dims(3);
  m.mutable_graph()->mutable_initializer(0)->add_dims(2);
  std::string path = save(m);
  Model model = Model::load(path);
  kiln::Error e = run_error(model, {{"x", floats({1, 2, 3, 4, 5, 6}, {2, 3})}});
  EXPECT_CONTAINS(e.what(), path + ": node 'scale' (Mul, opset 13): ");
  EXPECT_CONTAINS(e.what(), "'x' float32 (2, 3) (graph input)");
  EXPECT_CONTAINS(e.what(), "'s' float32 (3, 2) (initializer)");
}

TEST_F(Loader, MatMulWeightDoesNotFit) {
  auto ops = kiln::onnx::supported_ops();
  if (std::find(ops.begin(), ops.end(), "MatMul") == ops.end()) GTEST_SKIP() << "this kiln has no MatMul";
  auto m = om::dense_relu();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(3);
  w->add_dims(4);
  std::string path = save(m);
  Model model = Model::load(path);
  kiln::Error e = run_error(model, {{"x", Tensor::zeros({2, 4})}});
  EXPECT_CONTAINS(e.what(), path + ": node 'project' (MatMul, opset 13): ");
  EXPECT_CONTAINS(e.what(), "'w' float32 (3, 4) (initializer)");
  EXPECT_CONTAINS(e.what(), "'x' float32 (2, 4) (graph input)");
}

TEST_F(Loader, InitializerDisagreesWithItsGraphInput) {
  auto m = om::scale_shift();
  om::input(m, {"s", P::FLOAT, {"2", "4"}});  // declared (2, 4), the initializer is (2, 3)
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_CONTAINS(e.what(), path + ": initializer 's' is float32 (2, 3), its graph input declares float32 (2, 4)");
  m = om::scale_shift();
  om::input(m, {"s", P::DOUBLE, {"2", "3"}});
  e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), "initializer 's' is float32 (2, 3), its graph input declares float64 (2, 3)");
}

TEST_F(Loader, Cycle) {
  auto m = om::model();
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"y", P::FLOAT, {"2"}});
  om::node(m, "Add", {"x", "b"}, {"a"}, "first");
  om::node(m, "Relu", {"a"}, {"b"}, "second");
  om::node(m, "Relu", {"a"}, {"y"}, "out");
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_CONTAINS(e.what(), path + ": node 'first' (Add, opset 13): is part of a cycle");
}

TEST_F(Loader, InputNoOneDefines) {
  auto m = om::model();
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"y", P::FLOAT, {"2"}});
  om::node(m, "Add", {"x", "ghost"}, {"y"}, "adder");
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), path + ": node 'adder' (Add, opset 13): input 'ghost' is not a graph input, an initializer");
}

TEST_F(Loader, DuplicateOutput) {
  auto m = om::model();
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"y", P::FLOAT, {"2"}});
  om::node(m, "Relu", {"x"}, {"y"}, "one");
  om::node(m, "Relu", {"x"}, {"y"}, "two");
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), path + ": node 'two' (Relu, opset 13): output 'y' is defined twice");
  // an output that overwrites a graph input is the same mistake
  m = om::model();
  om::input(m, {"x", P::FLOAT, {"2"}});
  om::output(m, {"x", P::FLOAT, {"2"}});
  om::node(m, "Relu", {"x"}, {"x"}, "inplace");
  e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), "node 'inplace' (Relu, opset 13): output 'x' is defined twice");
}

TEST_F(Loader, GraphOutputNoOneProduces) {
  auto m = om::scale_shift();
  om::output(m, {"nowhere", P::FLOAT, {"2"}});
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), path + ": graph output 'nowhere' is produced by no node");
}

::onnx::ModelProto external_model(const std::string& location, int64_t offset = -1) {
  auto m = om::scale_shift();
  auto* s = m.mutable_graph()->mutable_initializer(0);
  s->clear_raw_data();
  s->set_data_location(P::EXTERNAL);
  auto* kv = s->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  if (offset >= 0) {
    kv = s->add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(offset));
    kv = s->add_external_data();
    kv->set_key("length");
    kv->set_value("24");
  }
  return m;
}

TEST_F(Loader, ExternalDataLoads) {
  const std::vector<float> s{1.f, -2.f, 0.5f, 3.f, -1.f, 0.25f};
  fs::create_directories(dir_ / "weights");
  std::ofstream f(dir_ / "weights" / "s.bin", std::ios::binary);
  f << "PAD!PAD!";  // the tensor at offset 8
  f.write(reinterpret_cast<const char*>(s.data()), 24);
  f.close();
  Model model = Model::load(save(external_model("weights/s.bin", 8)));
  auto y = model.run({{"x", floats({1, 2, 3, 4, 5, 6}, {2, 3})}}).at("y").to_vector<float>();
  const std::vector<float> b{0.5f, -0.25f, 1.f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], std::max(0.f, (i + 1) * s[i] + b[i % 3])) << i;
}

TEST_F(Loader, ExternalDataFileMissing) {
  std::string path;
  kiln::Error e = load_error(external_model("gone.bin"), &path);
  EXPECT_EQ(e.code(), ErrorCode::not_found);
  EXPECT_CONTAINS(e.what(), path + ": initializer 's': external data file '");
  EXPECT_CONTAINS(e.what(), "gone.bin' is missing");
  EXPECT_CONTAINS(e.what(), "beside the model");
}

TEST_F(Loader, ExternalDataEscapingTheDirectory) {
  for (const char* where : {"../secret.bin", "/etc/passwd", "sub/../../x.bin"}) {
    std::string path;
    kiln::Error e = load_error(external_model(where), &path);
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << where;
    EXPECT_CONTAINS(e.what(), path + ": initializer 's': external data location '" + where +
                                  "' must be a relative path inside the model's directory");
  }
}

TEST_F(Loader, ExternalDataOffsetNotANumber) {
  auto m = external_model("s.bin", 0);
  m.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("eight");
  std::ofstream(dir_ / "s.bin") << std::string(24, '\0');
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), path + ": initializer 's': external data offset 'eight' is not a number");
}

TEST_F(Loader, InitializerDataOfTheWrongSize) {
  auto m = om::scale_shift();
  m.mutable_graph()->mutable_initializer(1)->mutable_raw_data()->resize(8);
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_EQ(e.code(), ErrorCode::data_loss);
  EXPECT_CONTAINS(e.what(), path + ": initializer 'b': holds 8 bytes of data, its shape (3) and float32 need 12");
}

TEST_F(Loader, InitializerWithAbsurdDims) {
  auto m = om::scale_shift();
  auto* b = m.mutable_graph()->mutable_initializer(1);
  b->clear_dims();
  for (int i = 0; i < 4; ++i) b->add_dims(int64_t{1} << 40);  // numel overflows int64
  std::string path;
  kiln::Error e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), path + ": initializer 'b': ");
  EXPECT_CONTAINS(e.what(), "too many elements");
  b->clear_dims();
  b->add_dims(-3);
  e = load_error(m, &path);
  EXPECT_CONTAINS(e.what(), "initializer 'b': negative dimension -3");
}

TEST_F(Loader, WrongFeeds) {
  std::string path = save(om::scale_shift());
  Model model = Model::load(path);
  kiln::Error e = run_error(model, {{"x", Tensor::zeros({2, 3}, kiln::dtypes::int32)}});
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_CONTAINS(e.what(), path + ": input 'x' is declared float32, the feed is int32 (cast the feed to float32)");
  e = run_error(model, {{"x", Tensor::zeros({3, 2})}});
  EXPECT_CONTAINS(e.what(), path + ": input 'x' is declared (2, 3), the feed is (3, 2)");
  e = run_error(model, {{"x", Tensor::zeros({2, 3})}, {"xx", Tensor::zeros({2, 3})}});
  EXPECT_CONTAINS(e.what(), path + ": feed 'xx' is not an input of the model (its inputs: x)");
  e = run_error(model, {});
  EXPECT_CONTAINS(e.what(), path + ": input 'x' is not fed (the model declares it float32 (2, 3))");
}

TEST_F(Loader, SymbolicDimsAcceptAnySize) {
  auto ops = kiln::onnx::supported_ops();
  auto m = om::model();
  om::input(m, {"x", P::FLOAT, {"N", "3"}});
  om::output(m, {"y", P::FLOAT, {"N", "3"}});
  om::node(m, "Relu", {"x"}, {"y"});
  Model model = Model::load(save(m));
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].dims, (std::vector<std::string>{"N", "3"}));
  auto y = model.run({{"x", floats({-1, 2, -3, 4, -5, 6, 7, -8, 9}, {3, 3})}}).at("y");
  EXPECT_EQ(y.shape(), (kiln::Shape{3, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 2, 0, 4, 0, 6, 7, 0, 9}));
}

}  // namespace
