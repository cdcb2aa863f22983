// tests/opencl/opencl_errors_test.cpp - every OpenCL status a driver may return has its name.
#include <gtest/gtest.h>

#include <string>

#include "cl_api.hpp"

using kiln::opencl::cl_error_name;

namespace {
bool named(cl_int s) { return std::string(cl_error_name(s)).rfind("CL_", 0) == 0; }
}  // namespace

TEST(OpenclErrors, EveryCoreStatusHasItsName) {
  // OpenCL 3.0 uses 0..-19 and -30..-72; PoCL here is an OpenCL 3.0 device
  for (cl_int s = 0; s >= -19; --s) EXPECT_TRUE(named(s)) << s;
  for (cl_int s = -30; s >= -72; --s) EXPECT_TRUE(named(s)) << s;
  EXPECT_STREQ(cl_error_name(-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED");  // 2.2+, not in the 1.2 headers
  EXPECT_STREQ(cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");     // the ICD loader with no driver
}

TEST(OpenclErrors, UnknownCodesSaySo) {
  EXPECT_STREQ(cl_error_name(-25), "unknown OpenCL error");
  EXPECT_STREQ(cl_error_name(-9999), "unknown OpenCL error");
}
