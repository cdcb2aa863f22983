// support/check.cpp - error code names and the failure path of KILN_CHECK.
#include "support/check.hpp"

#include <cstring>

namespace kiln {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok: return "ok";
    case ErrorCode::cancelled: return "cancelled";
    case ErrorCode::unknown: return "unknown";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::deadline_exceeded: return "deadline_exceeded";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::already_exists: return "already_exists";
    case ErrorCode::permission_denied: return "permission_denied";
    case ErrorCode::resource_exhausted: return "resource_exhausted";
    case ErrorCode::failed_precondition: return "failed_precondition";
    case ErrorCode::aborted: return "aborted";
    case ErrorCode::out_of_range: return "out_of_range";
    case ErrorCode::unimplemented: return "unimplemented";
    case ErrorCode::internal: return "internal";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::data_loss: return "data_loss";
    case ErrorCode::unauthenticated: return "unauthenticated";
    case ErrorCode::incompatible_abi: return "incompatible_abi";
    case ErrorCode::config_error: return "config_error";
  }
  return "unknown";
}

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  const char* base = std::strrchr(file, '/');
  std::string text = cat(base ? base + 1 : file, ":", line, ": internal error: check failed: ", cond);
  if (!msg.empty()) text += cat(": ", msg);
  throw Error(ErrorCode::internal, text);
}

}  // namespace kiln
