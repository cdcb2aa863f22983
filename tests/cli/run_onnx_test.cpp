// tests/cli/run_onnx_test.cpp - `kiln run MODEL.onnx` as users run it: a node-test model with its
// .pb inputs (the checksum matches the expected output), a model built here fed from .npy files,
// symbolic dimensions, --jit, --json, and the errors of bad flags, files and feeds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kiln/onnx.hpp"
#include "model_builder.hpp"
#include "run_cli.hpp"

namespace fs = std::filesystem;
namespace om = kiln::test::onnx_models;

namespace kiln::test {
namespace {

const fs::path kNodeDir = "/usr/share/libonnx-testdata/data/node";

// The number after `"key": ` in a --json document (the first occurrence at or after `from`).
double json_number(const std::string& doc, const std::string& key, size_t from = 0) {
  size_t at = doc.find("\"" + key + "\": ", from);
  if (at == std::string::npos) return NAN;
  return std::strtod(doc.c_str() + at + key.size() + 4, nullptr);
}

// A .npy file (format 1.0) of float32 or int64 values.
template <typename T>
void write_npy(const fs::path& path, const std::vector<T>& v, const std::string& shape, const char* descr,
               bool fortran = false) {
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
}

class KilnRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_cli_run_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string save(const ::onnx::ModelProto& m, const std::string& name = "model.onnx") {
    om::save(m, (dir_ / name).string());
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(KilnRun, NodeTestModelMatchesItsExpectedOutput) {
  const fs::path test = kNodeDir / "test_add";
  if (!fs::exists(test / "model.onnx")) GTEST_SKIP() << "no ONNX node tests here (libonnx-testdata)";
  const fs::path data = test / "test_data_set_0";
  CliResult r = run_kiln({"run", (test / "model.onnx").string(), "--input", "x=" + (data / "input_0.pb").string(),
                          "--input", "y=" + (data / "input_1.pb").string(), "--iters", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_JSON(r.out);
  std::vector<double> want = onnx::load_tensor((data / "output_0.pb").string()).cast(dtypes::float64).to_vector<double>();
  double sum = 0, abs_sum = 0;
  for (double v : want) sum += v, abs_sum += std::fabs(v);
  EXPECT_NEAR(json_number(r.out, "sum"), sum, 1e-4 * abs_sum);
  EXPECT_NEAR(json_number(r.out, "abs_sum"), abs_sum, 1e-4 * abs_sum);
  EXPECT_CONTAINS(r.out, "\"name\": \"sum\"");
  EXPECT_CONTAINS(r.out, "\"dtype\": \"float32\"");
  EXPECT_CONTAINS(r.out, "\"opset\": ");
  EXPECT_CONTAINS(r.out, "\"iters\": 3");
  EXPECT_GT(json_number(r.out, "first_ms"), 0);
  EXPECT_GE(json_number(r.out, "steady_ms"), 0);
  // the human-readable form: one line per input and output, the times
  CliResult h = run_kiln({"run", (test / "model.onnx").string(), "--iters", "2"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_CONTAINS(h.out, "input   x float32 (3, 4, 5) <- random");
  EXPECT_CONTAINS(h.out, "output  sum float32 (3, 4, 5) sum ");
  EXPECT_CONTAINS(h.out, "first   ");
  EXPECT_CONTAINS(h.out, "steady  ");
}

// An input that holds a shape cannot be random: the operator's error says which inputs were, and
// the same model runs with the real shape given.
TEST_F(KilnRun, RandomShapeInputsAreNamedWhenTheModelRefusesThem) {
  const fs::path test = kNodeDir / "test_expand_dim_changed";
  if (!fs::exists(test / "model.onnx")) GTEST_SKIP() << "no ONNX node tests here (libonnx-testdata)";
  auto ops = onnx::supported_ops();
  if (std::find(ops.begin(), ops.end(), "Expand") == ops.end()) GTEST_SKIP() << "this kiln has no Expand";
  CliResult r = run_kiln({"run", (test / "model.onnx").string(), "--iters", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "node 'expanded' (Expand, opset 13)");
  EXPECT_CONTAINS(r.err, "(inputs data, new_shape were random: one that holds a shape, indices or sizes needs real values");
  CliResult ok = run_kiln({"run", (test / "model.onnx").string(), "--iters", "1", "-i",
                           "new_shape=" + (test / "test_data_set_0" / "input_1.pb").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_CONTAINS(ok.out, "output  expanded float32 (2, 3, 6) sum ");
}

TEST_F(KilnRun, GeneratedModelFedFromNpyFiles) {
  std::string model = save(om::scale_shift());
  write_npy(dir_ / "x.npy", std::vector<float>{1, 2, 3, 4, 5, 6}, "(2, 3)", "<f4");
  CliResult r = run_kiln({"run", model, "-i", "x=" + (dir_ / "x.npy").string(), "--json", "--show", "6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_JSON(r.out);
  // relu(x * s + b), s = (1, -2, .5, 3, -1, .25), b = (.5, -.25, 1): 1.5, 0, 2.5, 12.5, 0, 2.5
  EXPECT_CONTAINS(r.out, "\"shape\": [\n        2,\n        3\n      ]");
  EXPECT_DOUBLE_EQ(json_number(r.out, "sum", r.out.find("\"outputs\"")), 19.0);
  EXPECT_DOUBLE_EQ(json_number(r.out, "abs_sum", r.out.find("\"outputs\"")), 19.0);
  std::string first = r.out.substr(r.out.find("\"first\""));
  EXPECT_EQ(first.substr(0, first.find(']')), "\"first\": [\n        1.5,\n        0,\n        2.5,\n        12.5,\n        0,\n        2.5\n      ");
  // the same through a Jit's replays
  CliResult j = run_kiln({"run", model, "-i", "x=" + (dir_ / "x.npy").string(), "--jit", "--iters", "4"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_CONTAINS(j.out, "output  y float32 (2, 3) sum 19 |sum| 19 [1.5, 0, 2.5, 12.5, 0, ...]");
  EXPECT_CONTAINS(j.out, "Jit replays of");
}

TEST_F(KilnRun, SymbolicDimensions) {
  auto m = om::model();
  om::input(m, {"x", ::onnx::TensorProto::FLOAT, {"batch", "3"}});
  om::output(m, {"y", ::onnx::TensorProto::FLOAT, {"batch", "3"}});
  om::node(m, "Relu", {"x"}, {"y"});
  std::string model = save(m);
  CliResult r = run_kiln({"run", model, "--dim", "batch=4", "--iters", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "input   x float32 (4, 3) <- random");
  EXPECT_CONTAINS(r.out, "output  y float32 (4, 3)");
  CliResult typo = run_kiln({"run", model, "--dim", "batchsize=4"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_CONTAINS(typo.err, "--dim batchsize: no input of the model has a dimension named 'batchsize' (its symbolic dimensions: 'batch')");
  CliResult d = run_kiln({"run", model, "--iters", "1"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_CONTAINS(d.out, "input   x float32 (1, 3) <- random");
  EXPECT_CONTAINS(d.err, "symbolic dimension 'batch' set to 1");
  // random feeds are repeatable: the same seed gives the same checksum
  CliResult again = run_kiln({"run", model, "--iters", "1"});
  EXPECT_EQ(again.out.substr(0, again.out.find("first")), d.out.substr(0, d.out.find("first")));
}

TEST_F(KilnRun, BadFlagsAndFiles) {
  std::string model = save(om::scale_shift());
  struct Case {
    std::vector<std::string> args;
    int exit;
    std::string message;
  };
  const std::string npy = (dir_ / "x.npy").string(), fortran = (dir_ / "f.npy").string(), ints = (dir_ / "i.npy").string();
  write_npy(dir_ / "x.npy", std::vector<float>{1, 2, 3, 4, 5, 6}, "(2, 3)", "<f4");
  write_npy(dir_ / "f.npy", std::vector<float>{1, 2, 3, 4, 5, 6}, "(2, 3)", "<f4", true);
  write_npy(dir_ / "i.npy", std::vector<int64_t>{1, 2, 3, 4, 5, 6}, "(2, 3)", "<i8");
  write_npy(dir_ / "be.npy", std::vector<float>{1, 2, 3, 4, 5, 6}, "(2, 3)", ">f4");
  write_npy(dir_ / "c8.npy", std::vector<double>{1, 2, 3, 4, 5, 6}, "(2, 3)", "<c8");
  write_npy(dir_ / "short.npy", std::vector<float>{1, 2, 3, 4, 5}, "(2, 3)", "<f4");
  const auto at = [&](const char* f) { return "x=" + (dir_ / f).string(); };
  const std::vector<Case> cases = {
      {{"run"}, 2, "kiln run: no model given"},
      {{"run", model, "--frobnicate"}, 2, "unrecognised option '--frobnicate'"},
      {{"run", model, "--input", "x"}, 2, "--input x: expected NAME=FILE"},
      {{"run", model, "--input", "nope=" + npy}, 2, "--input nope: the model has no input 'nope' (its inputs: x)"},
      {{"run", model, "--input", "x=data.txt"}, 2, "give a .npy file, an ONNX TensorProto .pb file or 'random'"},
      {{"run", model, "--dim", "N=-2"}, 2, "--dim N=-2: the size must be a non-negative integer"},
      {{"run", model, "--iters", "-1"}, 2, "--iters must be at least 0"},
      {{"run", (dir_ / "missing.onnx").string()}, 1, "missing.onnx: no such model file"},
      {{"run", model, "--input", "x=" + (dir_ / "gone.npy").string()}, 1, "gone.npy: cannot open the .npy file"},
      {{"run", model, "--input", "x=" + fortran}, 1, "f.npy: the array is in Fortran order"},
      {{"run", model, "--input", "x=" + ints}, 1, "input 'x' is declared float32, the feed is int64 (cast the feed to float32)"},
      {{"run", model, "--input", "x=" + model + ".pb"}, 1, "cannot open the tensor file"},
      {{"run", model, "--input", at("be.npy")}, 1, "be.npy: the data is big-endian ('>f4'); save a little-endian copy"},
      {{"run", model, "--input", at("c8.npy")}, 1, "c8.npy: dtype '<c8' is not one kiln has"},
      {{"run", model, "--input", at("short.npy")}, 1, "short.npy: holds 20 bytes of data, its shape (2, 3) and float32 need 24"},
  };
  for (const Case& c : cases) {
    CliResult r = run_kiln(c.args);
    EXPECT_EQ(r.exit_code, c.exit) << c.args.back() << "\n" << r.err;
    EXPECT_CONTAINS(r.err, c.message);
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // a model that is not one: the loader's message, and with --json a document saying so
  std::ofstream(dir_ / "junk.onnx") << "this is not a protobuf";
  CliResult j = run_kiln({"run", (dir_ / "junk.onnx").string(), "--json"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_JSON(j.out);
  EXPECT_CONTAINS(j.out, "\"command\": \"run\"");
  EXPECT_CONTAINS(j.out, "not an ONNX model");
  CliResult help = run_kiln({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* o : {"--input", "--dim", "--iters", "--jit", "--json", "examples:"}) EXPECT_CONTAINS(help.out, o);
  CliResult top = run_kiln({"--help"});
  EXPECT_CONTAINS(top.out, "  run ");
}

}  // namespace
}  // namespace kiln::test
