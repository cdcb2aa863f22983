// support/check.hpp - internal invariant checks and message building.
//
// KILN_CHECK(cond, parts...) throws kiln::Error(internal) naming file:line and the condition;
// user-facing validation throws kiln::Error with a specific code via fail(). Neither aborts.
#pragma once
#include <sstream>
#include <string>
#include <utility>

#include "kiln/error.hpp"

namespace kiln {

// Concatenates anything printable with operator<< into a string (error paths, not hot paths).
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(ErrorCode code, Args&&... args) {
  throw Error(code, cat(std::forward<Args>(args)...));
}

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace kiln

#define KILN_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (__builtin_expect(!(cond), 0))                                           \
      ::kiln::check_failed(__FILE__, __LINE__, #cond, ::kiln::cat(__VA_ARGS__)); \
  } while (0)

#define KILN_UNREACHABLE(...) ::kiln::check_failed(__FILE__, __LINE__, "unreachable", ::kiln::cat(__VA_ARGS__))
