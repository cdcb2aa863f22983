// kiln/error.hpp - the one exception type every user-facing failure throws.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln {

// Error codes. 0..16 are the canonical status codes (as in PJRT/IREE/absl) and have the same
// numbers as the plugin ABI's KILN_STATUS_* codes; the rest are kiln-specific.
enum class ErrorCode : int32_t {
  ok = 0,
  cancelled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
  unauthenticated = 16,
  incompatible_abi = 17,  // a plugin built for another ABI major
  config_error = 18,      // a manifest or config file is malformed (the CLI exits 3)
};

// Lower-case name of a code ("invalid_argument"); "unknown" for values outside the enum.
const char* error_code_name(ErrorCode code);

// Every failure kiln reports to a user: bad shapes, unknown devices, compile errors, plugin
// errors. The message names the operation, what was given and what was expected.
struct Error : std::runtime_error {
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  explicit Error(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace kiln
