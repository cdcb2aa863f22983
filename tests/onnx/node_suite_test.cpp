// node_suite_test.cpp - ONNX's own node tests (Debian's libonnx-testdata: 932 tests, opset <= 17)
// run through kiln::onnx, each output compared as onnx's backend runner does: the same dtype and
// shape, then rtol 1e-3 / atol 1e-7 for floats (NaN equal to NaN) and equality for the rest.
//
// unsupported.txt lists the tests kiln does not run, each with its reason. A listed test must fail
// loudly (a kiln::Error at load or run): one that passes must leave the list, and one that gives a
// wrong answer is a failure either way. Every other test must pass. Two kinds of listed test run:
// a reason starting "random:" marks an operator whose outputs are random numbers (Bernoulli, ...),
// which no other generator reproduces, and "reference:" expected values that are themselves wrong
// (the reason says how, and why kiln's are right): they must run and give the expected dtypes and
// shapes, and they count as not passed.
// KILN_ONNX_NODE_DIR overrides the directory; KILN_ONNX_REPORT=<file> appends one line per test
// (name, pass/error/wrong, detail) for triage.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/onnx.hpp"

namespace fs = std::filesystem;
using kiln::Tensor;

namespace {

fs::path node_dir() {
  const char* d = std::getenv("KILN_ONNX_NODE_DIR");
  return d ? fs::path(d) : fs::path("/usr/share/libonnx-testdata/data/node");
}

std::map<std::string, std::string> unsupported() {
  std::map<std::string, std::string> out;
  std::ifstream f(KILN_ONNX_UNSUPPORTED);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string name, reason;
    is >> name;
    std::getline(is >> std::ws, reason);
    out[name] = reason;
  }
  return out;
}

std::vector<std::string> node_tests() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(node_dir(), ec))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back("no_node_tests_found");
  return out;
}

std::vector<double> as_doubles(const Tensor& t) {
  if (t.numel() == 0) return {};
  return t.cast(kiln::dtypes::float64).to_vector<double>();
}

// Compares like onnx.backend.test.runner.assert_similar_outputs; "" when they agree. values false:
// the dtypes and shapes only.
std::string compare(const Tensor& want, const Tensor& got, bool values) {
  if (want.dtype() != got.dtype()) return "dtype " + got.dtype().name() + ", expected " + want.dtype().name();
  if (want.shape() != got.shape()) {
    std::string w, g;
    for (auto d : want.shape()) w += std::to_string(d) + ",";
    for (auto d : got.shape()) g += std::to_string(d) + ",";
    return "shape (" + g + "), expected (" + w + ")";
  }
  if (want.numel() == 0 || !values) return "";
  if (want.dtype() == kiln::dtypes::int64 || want.dtype() == kiln::dtypes::uint64) {  // exact, beyond double's 53 bits
    std::vector<char> a(want.numel() * 8), b(want.numel() * 8);
    want.to_bytes(a.data(), a.size());
    got.to_bytes(b.data(), b.size());
    return a == b ? "" : "64-bit integers differ";
  }
  auto w = as_doubles(want), g = as_doubles(got);
  const bool is_float = want.dtype().is_float();
  for (size_t i = 0; i < w.size(); ++i) {
    bool ok;
    if (!is_float) ok = w[i] == g[i];
    else if (std::isnan(w[i]) || std::isnan(g[i])) ok = std::isnan(w[i]) && std::isnan(g[i]);
    else if (std::isinf(w[i]) || std::isinf(g[i])) ok = w[i] == g[i];
    else ok = std::abs(w[i] - g[i]) <= 1e-7 + 1e-3 * std::abs(w[i]);
    if (!ok) {
      std::ostringstream os;
      os << "element " << i << " is " << g[i] << ", expected " << w[i];
      return os.str();
    }
  }
  return "";
}

// Test data written before numpy had bfloat16 stores bfloat16 values as their UINT16 bits, so a
// UINT16 tensor for a value the model declares BFLOAT16 is read as those bits (onnx's newer
// runner does the same when it loads such data).
Tensor as_declared(const Tensor& t, kiln::DType declared) {
  return t.dtype() == kiln::dtypes::uint16 && declared == kiln::dtypes::bfloat16 ? t.bitcast(declared) : t;
}

// Runs one node test; "" on success, else what went wrong. `loud` tells whether it was an error.
// shapes_only: compare dtypes and shapes, not values (random outputs).
std::string run_test(const fs::path& dir, bool& loud, bool shapes_only = false) {
  loud = false;
  try {
    auto model = kiln::onnx::Model::load((dir / "model.onnx").string());
    for (int set = 0; fs::exists(dir / ("test_data_set_" + std::to_string(set))); ++set) {
      const fs::path data = dir / ("test_data_set_" + std::to_string(set));
      std::map<std::string, Tensor> feeds;
      for (size_t i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i) {
        if (i >= model.inputs().size()) return "the data set has more inputs than the model declares";
        feeds.emplace(model.inputs()[i].name,
                      as_declared(kiln::onnx::load_tensor((data / ("input_" + std::to_string(i) + ".pb")).string()),
                                  model.inputs()[i].dtype));
      }
      auto outs = model.run(feeds);
      std::vector<Tensor> got;
      for (const auto& o : model.outputs()) got.push_back(outs.at(o.name));
      Tensor::realize_all(got);
      for (size_t i = 0; fs::exists(data / ("output_" + std::to_string(i) + ".pb")); ++i) {
        if (i >= got.size()) return "the data set has more outputs than the model declares";
        Tensor want = as_declared(kiln::onnx::load_tensor((data / ("output_" + std::to_string(i) + ".pb")).string()),
                                  model.outputs()[i].dtype);
        std::string diff = compare(want, got[i], !shapes_only);
        if (!diff.empty()) return "output " + model.outputs()[i].name + ": " + diff;
      }
    }
    return "";
  } catch (const kiln::Error& e) {
    loud = true;
    return e.what();
  } catch (const std::exception& e) {
    return std::string("std::exception (not a kiln::Error): ") + e.what();
  }
}

void report(const std::string& name, const std::string& status, const std::string& detail) {
  if (const char* r = std::getenv("KILN_ONNX_REPORT")) {
    std::ofstream f(r, std::ios::app);
    std::string d = detail.substr(0, 300);
    for (char& c : d)
      if (c == '\n') c = ' ';
    f << name << '\t' << status << '\t' << d << '\n';
  }
}

class NodeSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeSuite, MatchesOnnxReference) {
  const std::string name = GetParam();
  if (name == "no_node_tests_found") GTEST_SKIP() << "no node tests under " << node_dir() << " (install libonnx-testdata)";
  static const auto listed = unsupported();
  auto it = listed.find(name);
  const bool values_differ = it != listed.end() && (it->second.rfind("random:", 0) == 0 || it->second.rfind("reference:", 0) == 0);
  bool loud = false;
  const std::string err = run_test(node_dir() / name, loud, values_differ);
  report(name, err.empty() ? "pass" : loud ? "error" : "wrong", err);
  if (values_differ) {
    EXPECT_EQ(err, "") << name << " (" << it->second << ": dtypes and shapes compared)";
  } else if (it != listed.end()) {
    EXPECT_FALSE(err.empty()) << name << " is listed as unsupported (" << it->second
                              << ") but passes: remove it from tests/onnx/unsupported.txt";
    EXPECT_TRUE(err.empty() || loud) << name << " is listed as unsupported but gives a wrong answer without an error: "
                                     << err;
  } else {
    EXPECT_EQ(err, "") << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Onnx, NodeSuite, ::testing::ValuesIn(node_tests()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The suite's bar: at least 85% of the node tests run and pass (every test not listed must pass).
TEST(NodeSuiteCoverage, AtLeast85PercentPass) {
  auto tests = node_tests();
  if (tests.size() == 1 && tests[0] == "no_node_tests_found") GTEST_SKIP();
  auto listed = unsupported();
  size_t excluded = 0;
  for (const auto& t : tests) excluded += listed.count(t);
  for (const auto& [name, reason] : listed) {
    EXPECT_TRUE(std::find(tests.begin(), tests.end(), name) != tests.end()) << "unsupported.txt names " << name
                                                                           << ", which is not a node test";
    EXPECT_FALSE(reason.find_first_not_of(" \t") == std::string::npos) << name << " is listed without a reason";
  }
  const double pass = 1.0 - static_cast<double>(excluded) / static_cast<double>(tests.size());
  size_t run_anyway = 0;
  for (const auto& [name, reason] : listed) run_anyway += reason.rfind("random:", 0) == 0 || reason.rfind("reference:", 0) == 0;
  std::printf("onnx node tests: %zu of %zu pass (%.1f%%); %zu listed as unsupported, %zu of which run with their "
              "dtypes and shapes checked (random or wrong expected values)\n",
              tests.size() - excluded, tests.size(), 100 * pass, excluded, run_anyway);
  EXPECT_GE(pass, 0.85);
}

}  // namespace
