// tests/runtime/debug_output_test.cpp - what KILN_DEBUG prints for kernels on a plugin device:
// =2 one line per kernel built (times of each step) and launched (sizes, time, GFLOP/s, GB/s),
// =4 the rendered source, =5 the LIR's text form.
#include <gtest/gtest.h>

#include <string>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "runtime/program_cache.hpp"
#include "support/env.hpp"

using namespace kiln;

namespace {

// stderr of one realize of a kernel not in the program cache, at debug level `level`
std::string debug_output(int level) {
  runtime::clear_program_cache();
  Tensor x = Tensor::full({4096}, 1.5, dtypes::float32, "cpu:0").contiguous();
  x.realize();
  set_knob(Knob::debug, level);
  ::testing::internal::CaptureStderr();
  (x * 2.0 + 1.0).realize();
  std::string err = ::testing::internal::GetCapturedStderr();
  set_knob(Knob::debug, 0);
  return err;
}

}  // namespace

TEST(DebugOutput, LevelTwoTimesEveryKernel) {
  std::string err = debug_output(2);
  EXPECT_CONTAINS(err, "cpu:0  built E_4096: codegen ");
  EXPECT_CONTAINS(err, " ms, render ");
  EXPECT_CONTAINS(err, " ms, load ");
  EXPECT_CONTAINS(err, " ms; actions: ");  // what the kernel runs with (heuristic or search)
  EXPECT_CONTAINS(err, "cpu:0  E_4096  global=(");
  EXPECT_CONTAINS(err, ") local=(1,1,1)  ");
  EXPECT_CONTAINS(err, " GFLOP/s  ");
  EXPECT_CONTAINS(err, " GB/s");
  EXPECT_EQ(err.find("define "), std::string::npos) << "level 2 prints no source:\n" << err;
}

TEST(DebugOutput, LevelFourPrintsTheSourceAndFiveTheLir) {
  std::string four = debug_output(4);
  EXPECT_CONTAINS(four, "define ");        // the cpu device renders LLVM IR
  EXPECT_CONTAINS(four, "@E_4096(");
  EXPECT_EQ(four.find("kernel E_4096 buffers="), std::string::npos) << "level 4 prints no LIR";
  std::string five = debug_output(5);
  EXPECT_CONTAINS(five, "kernel E_4096 buffers=2 vars=1 global=");  // (the program's scalar is a variable)
  EXPECT_CONTAINS(five, "define ");
}
