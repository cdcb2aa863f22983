// sdk/conformance/src/kit.hpp - what the kit's tests share: the plugin under test, the test list
// and the ways a test passes, fails or skips.
//
// A test is a function of the Kit that returns normally (passed), throws Skip (not applicable,
// with a reason) or throws anything else (failed, with the exception's message).
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/backend.hpp"
#include "kiln/conformance.hpp"
#include "kiln/plugin.h"

namespace kiln::conformance {

struct Skip {
  std::string reason;
};

struct TestFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Fails the current test with `message` unless `condition` holds.
inline void require(bool condition, const std::string& message) {
  if (!condition) throw TestFailure(message);
}

struct Kit {
  std::string manifest;    // absolute path
  std::string backend;     // backend name
  std::string library;     // the resolved library path
  int stdout_fd = -1;      // where the process's stdout goes (a file in run_isolated), -1 unknown
  const kiln_plugin_api* api = nullptr;  // once the backend loaded
  std::string load_problem;  // why the library did not load ("" when it did)
  bool usable = false;     // status ok, with devices
  std::string unusable;    // why not (the backend's status and reason)
  uint32_t devices = 0;

  // `backend:0` through the process-wide registry (opened once). Skips when the backend is not
  // usable, naming why.
  backend::Device& device();
  // device(), skipping when it cannot allocate memory (an offline compiler target): what every
  // test that moves data or runs kernels needs.
  backend::Device& memory_device();
  // memory_device() (device() when only compiling), skipping when the plugin has no renderer: the
  // core cannot generate kernels for such a device, so the tests of kiln's kernels do not apply.
  backend::Device& kernel_device(bool with_memory = true);
  std::string device_name() const { return backend + ":0"; }
  void require_usable() const {
    if (!usable) throw Skip{unusable};
  }
};

struct TestCase {
  int level;
  std::string name;
  std::function<void(Kit&)> run;
};

// Loads the backend through the process-wide registry and fills in the kit; never throws
// (level_load.cpp). Runs before the first test.
void setup(Kit& kit);

// The tests of each level, in order (level_*.cpp).
void add_load_tests(std::vector<TestCase>& tests);
void add_device_tests(std::vector<TestCase>& tests);
void add_memory_tests(std::vector<TestCase>& tests);
void add_kernel_tests(std::vector<TestCase>& tests);
void add_corpus_tests(std::vector<TestCase>& tests);
void add_lifecycle_tests(std::vector<TestCase>& tests);

// Runs the tests of `options` against `kit`, reporting each to `observer` (runner.cpp).
std::vector<TestResult> run_tests(Kit& kit, const Options& options, Observer& observer);

}  // namespace kiln::conformance
