// tests/e2e/cpu_errors_test.cpp - compiler failures reach the user as kiln::Error naming the
// kernel and carrying the compiler's log. Runs in its own process with a user config
// (cpu_broken_compiler.toml) that makes every kernel compile fail.
#include <gtest/gtest.h>

#include "kiln/kiln.hpp"

using namespace kiln;

TEST(CpuErrors, CompileErrorNamesTheKernelAndCarriesTheLog) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, "cpu:0");
  try {
    (x * 2).to_vector<float>();
    FAIL() << "a kernel compiled although the compiler flags are broken";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("kernel E_3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kiln_missing_header.h"), std::string::npos) << msg;  // from clang's log
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << msg;
  }
  // The failure is not cached: the same program fails the same way again, and the process lives on.
  EXPECT_THROW((x * 2).to_vector<float>(), Error);
}
