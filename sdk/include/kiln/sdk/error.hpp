// kiln/sdk/error.hpp - the exception plugin code throws.
#pragma once
#include <exception>
#include <string>
#include <utility>

#include "kiln/plugin.h"

namespace kiln::sdk {

// Thrown anywhere inside a plugin: `throw kiln::sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "..."}`.
// The SDK trampolines catch it at the ABI boundary and return host->error_new(code, message), so
// the message should say what was wrong and how to fix it; it reaches the user verbatim.
struct Error : std::exception {
  Error(kiln_status code_, std::string message_) : code(code_), message(std::move(message_)) {}
  const char* what() const noexcept override { return message.c_str(); }
  kiln_status code;
  std::string message;
};

}  // namespace kiln::sdk
