// plugin/host.cpp - host services (error_new, log) and error conversion.
#include "plugin/host.hpp"

#include <cstring>
#include <new>

#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln {
namespace {

thread_local const char* t_backend = nullptr;

// Returned when the host cannot even allocate an error; never freed.
kiln_error g_out_of_memory{KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory while reporting a plugin error"};

kiln_error* error_new(kiln_status code, const char* message, size_t length) {
  try {
    if (code == KILN_STATUS_OK) code = KILN_STATUS_UNKNOWN;  // an error must not read as success
    return new kiln_error{code, message ? std::string(message, length) : std::string()};
  } catch (...) {
    return &g_out_of_memory;
  }
}

// Errors and warnings always reach stderr; info needs KILN_DEBUG>=1, debug KILN_DEBUG>=3.
void log(int32_t level, const char* message, size_t length) {
  try {
    int64_t debug = 0;
    try {
      debug = debug_level();
    } catch (...) {
    }
    if ((level == KILN_LOG_INFO && debug < 1) || (level >= KILN_LOG_DEBUG && debug < 3)) return;
    const char* tag = level <= KILN_LOG_ERROR ? "error" : level == KILN_LOG_WARNING ? "warning" : level == KILN_LOG_INFO ? "info" : "debug";
    std::string line = "kiln: ";
    if (t_backend) line += std::string(t_backend) + " plugin: ";
    line += tag;
    line += ": ";
    line.append(message ? message : "", message ? length : 0);
    log_line(line);
  } catch (...) {
  }
}

const kiln_host_api g_host_api{sizeof(kiln_host_api), KILN_ABI_MAJOR, KILN_ABI_MINOR, &error_new, &log};

}  // namespace

const kiln_host_api* host_api() { return &g_host_api; }

void free_error(kiln_error* error) noexcept {
  if (error != &g_out_of_memory) delete error;
}

ErrorCode error_code_from_status(kiln_status status) {
  if (status >= 0 && status <= static_cast<kiln_status>(ErrorCode::incompatible_abi)) return static_cast<ErrorCode>(status);
  return ErrorCode::unknown;
}

std::string take_error_message(kiln_error* error) {
  if (!error) return {};
  std::string message = std::move(error->message);
  free_error(error);
  return message;
}

void throw_if_error(kiln_error* error, std::string_view context) {
  if (!error) return;
  ErrorCode code = error_code_from_status(error->code);
  std::string message = take_error_message(error);
  throw Error(code, std::string(context) + ": " + (message.empty() ? std::string(error_code_name(code)) : message));
}

PluginScope::PluginScope(const char* backend) noexcept : previous_(t_backend) { t_backend = backend; }
PluginScope::~PluginScope() { t_backend = previous_; }

StringSink::StringSink() : sink_{this, &StringSink::append} {}

kiln_status StringSink::append(void* ctx, const void* data, size_t n) {
  try {
    static_cast<StringSink*>(ctx)->text_.append(static_cast<const char*>(data), n);
    return KILN_STATUS_OK;
  } catch (...) {
    return KILN_STATUS_RESOURCE_EXHAUSTED;
  }
}

void escaped_exception(std::string_view slot) {
  std::string what = "an exception that is not a std::exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = std::string("std::exception: ") + bounded_copy(e.what(), 1024);
  } catch (...) {
  }
  fail(ErrorCode::internal, "the plugin's ", slot, " threw ", what,
       " across the C ABI; plugins must return an error instead (the SDK's KILN_PLUGIN trampolines do this)");
}

std::string bounded_copy(const char* s, size_t max) {
  if (!s) return "";
  size_t n = strnlen(s, max + 1);
  if (n <= max) return std::string(s, n);
  return std::string(s, max) + "... (truncated: longer than " + std::to_string(max) + " bytes)";
}

}  // namespace kiln
