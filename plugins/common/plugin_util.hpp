// plugins/common/plugin_util.hpp - small helpers the opencl and hip plugins share (header-only).
#pragma once
#include <dlfcn.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/sdk.hpp"

namespace kiln::plugins {

// dlopen()s the first library of `names` that loads (RTLD_NOW | RTLD_LOCAL; never closed: plugins
// are never unloaded). Returns nullptr and sets `error` to the first dlerror text otherwise.
inline void* open_first(std::initializer_list<const char*> names, std::string& loaded, std::string& error) {
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      loaded = name;
      return handle;
    }
    const char* e = dlerror();
    if (error.empty()) error = e ? e : name;
  }
  return nullptr;
}

// Bounds check of a copy on a buffer of `size` bytes: throws OUT_OF_RANGE naming the operation.
inline void check_range(uint64_t size, uint64_t offset, uint64_t n, const char* what) {
  if (offset > size || n > size - offset)
    throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, std::string(what) + ": bytes " + std::to_string(offset) + ".." +
                                                   std::to_string(offset + n) + " are outside the buffer's " +
                                                   std::to_string(size) + " bytes"};
}

// A launch index of the LIR ("gidx0".."gidx2": workgroup index, "lidx0".."lidx2": index within
// the workgroup), parsed for dialects that spell each as a built-in call.
struct LaunchIndex {
  bool group;  // gidx
  int dim;     // 0..2
};
inline std::optional<LaunchIndex> parse_launch_index(std::string_view name) {
  if (name.size() != 5 || name[4] < '0' || name[4] > '2') return std::nullopt;
  std::string_view kind = name.substr(0, 4);
  if (kind != "gidx" && kind != "lidx") return std::nullopt;
  return LaunchIndex{kind == "gidx", name[4] - '0'};
}

}  // namespace kiln::plugins
