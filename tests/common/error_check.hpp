// tests/common/error_check.hpp - checking kiln::Error codes and messages in tests.
//
//   ErrorCode code{};
//   std::string msg = error_of([&] { dev->alloc(1ull << 60); }, &code);
//   EXPECT_EQ(code, ErrorCode::resource_exhausted);
//   EXPECT_CONTAINS(msg, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
//   expect_error([&] { dev->alloc(1ull << 60); }, ErrorCode::resource_exhausted, "MAX_MEM_ALLOC");
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "kiln/error.hpp"

namespace kiln::testing {

// The message of the kiln::Error `f` throws ("" when it throws none); its code goes to `code`.
template <typename F>
std::string error_of(F&& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

// Runs `f`, expecting a kiln::Error with `code` whose message contains `text`.
template <typename F>
void expect_error(F&& f, ErrorCode code, const std::string& text) {
  ErrorCode got{};
  std::string msg = error_of(f, &got);
  if (msg.empty()) {
    ADD_FAILURE() << "expected an error containing: " << text;
    return;
  }
  EXPECT_EQ(got, code) << msg;
  EXPECT_NE(msg.find(text), std::string::npos) << msg;
}

}  // namespace kiln::testing

// Expects `stmt` to throw a kiln::Error whose message contains every one of the strings after it:
//   EXPECT_ERROR(Variable("n", 1, 8).bind(9), "'n'", "9", "[1, 8]");
#define EXPECT_ERROR(stmt, ...)                                                                                \
  do {                                                                                                         \
    std::string msg_ = ::kiln::testing::error_of([&] { (void)(stmt); });                                       \
    EXPECT_NE(msg_, "") << #stmt " did not throw";                                                             \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(msg_.find(part), std::string::npos) << "'" << part << "' not in: " << msg_; \
  } while (0)

#ifndef EXPECT_CONTAINS
#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
#endif
