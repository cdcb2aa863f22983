// plugin/host.hpp - the host services every plugin receives, and the host side of kiln_error.
//
// Errors cross the ABI as kiln_error* objects made only by host_api()->error_new; the host owns
// them. take_error() turns one into a kiln::Error (and frees it), so every plugin failure reaches
// the user as an exception with the plugin's code and message plus the host's context.
#pragma once
#include <cxxabi.h>

#include <memory>
#include <string>
#include <string_view>

#include "kiln/error.hpp"
#include "kiln/plugin.h"

// The host's definition of the ABI's opaque error object.
struct kiln_error {
  kiln_status code;
  std::string message;
};

namespace kiln {

// The host-services table handed to every plugin (valid for the life of the process).
const kiln_host_api* host_api();

// Frees an error made by error_new (NULL is fine).
void free_error(kiln_error* error) noexcept;

// The plugin status as a kiln::ErrorCode (codes outside the known range become `unknown`).
ErrorCode error_code_from_status(kiln_status status);

// The error's "message" (empty for NULL); frees the error.
std::string take_error_message(kiln_error* error);

// If `error` is non-NULL: frees it and throws kiln::Error(code, context + ": " + message).
void throw_if_error(kiln_error* error, std::string_view context);

// Runs one call into a plugin (`f` returns the slot's result). An exception escaping it (a plugin
// on the bare C ABI, without the SDK's trampolines) becomes kiln::Error(internal) naming `slot`,
// instead of std::terminate or a foreign exception unwinding through the caller.
[[noreturn]] void escaped_exception(std::string_view slot);
template <typename F>
decltype(auto) plugin_call(std::string_view slot, F&& f) {
  try {
    return f();
  } catch (abi::__forced_unwind&) {
    throw;  // thread cancellation unwinds through here and must not be swallowed
  } catch (...) {
    escaped_exception(slot);
  }
}

// A string a plugin handed over, copied with at most `max` bytes (NULL is ""): a plugin that
// returns a megabyte for a name must not flood every listing.
std::string bounded_copy(const char* s, size_t max = 4096);

// The backend whose plugin code this thread is currently running (for log prefixes); set by
// the loader and Device around plugin calls. Cheap: a thread-local pointer store.
class PluginScope {
 public:
  explicit PluginScope(const char* backend) noexcept;
  ~PluginScope();
  PluginScope(const PluginScope&) = delete;
  PluginScope& operator=(const PluginScope&) = delete;

 private:
  const char* previous_;
};

// A kiln_sink that appends to a std::string.
class StringSink {
 public:
  StringSink();
  StringSink(const StringSink&) = delete;  // the sink points at this object
  StringSink& operator=(const StringSink&) = delete;
  kiln_sink* sink() { return &sink_; }
  std::string& str() { return text_; }

 private:
  static kiln_status append(void* ctx, const void* data, size_t n);
  std::string text_;
  kiln_sink sink_;
};

}  // namespace kiln
