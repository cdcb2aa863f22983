// tests/runtime/debug_output_test.cpp - what KILN_DEBUG prints for kernels on a plugin device:
// =2 one line per kernel built (times of each step) and launched (sizes, time, GFLOP/s, GB/s),
// =4 the rendered source, =5 the LIR's text form, =6 every step of the scheduler's and codegen's pass
// lists (sizes and time), =7 also the IR after each.
#include <gtest/gtest.h>

#include <string>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "codegen/pipeline.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/kernelize.hpp"
#include "schedule/schedule.hpp"
#include "support/env.hpp"

using namespace kiln;

namespace {

// stderr of one realize of a kernel not in the program cache, at debug level `level`
std::string debug_output(int level) {
  runtime::clear_program_cache();
  clear_schedule_cache();
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

// Every step the scheduler and codegen run, in order: the normalisation before the schedule
// cache, the schedule's pass list, codegen's, then linearize, render and compile.
std::vector<std::string> every_step() {
  std::vector<std::string> steps{"normalize"};
  for (const char* s : schedule_pass_names()) steps.push_back(s);
  for (const CodegenPass& p : codegen_passes()) steps.push_back(p.name);
  for (const char* s : {"linearize", "render", "compile"}) steps.push_back(s);
  return steps;
}

TEST(DebugOutput, LevelSixTracesEveryStepOfTheSchedulerAndCodegenInOrder) {
  std::string six = debug_output(6);
  size_t at = 0;
  for (const std::string& step : every_step()) {
    size_t line = six.find("step '" + step + "': ", at);
    ASSERT_NE(line, std::string::npos) << "no line for step '" << step << "' (after the previous step's):\n" << six;
    at = line;
  }
  EXPECT_CONTAINS(six, "step 'group': ");
  EXPECT_CONTAINS(six, " kernels, ");  // the schedule's steps say their size in their own units
  EXPECT_EQ(six.find("IR after step"), std::string::npos) << "level 6 prints no IR";
}

TEST(DebugOutput, LevelSevenPrintsTheIrAfterEveryStep) {
  std::string seven = debug_output(7);
  for (const std::string& step : every_step()) {
    if (step == "compile") continue;  // (its output is a binary)
    EXPECT_CONTAINS(seven, "IR after step '" + step + "':\n");
  }
  EXPECT_CONTAINS(seven, "realized: %");                  // the kernel boundaries, by node
  EXPECT_CONTAINS(seven, "kernel 0 E_4096 on cpu:0: bufs L0 in0");  // a kernel of the template
  EXPECT_CONTAINS(seven, "L0 float32[4096] on cpu:0: storage 0 (output)");  // the memory plan
  EXPECT_CONTAINS(seven, "kernel E_4096 buffers=2");      // the LIR after linearize
  EXPECT_CONTAINS(seven, "define ");                      // the source after render
}
