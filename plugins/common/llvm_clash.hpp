// plugins/common/llvm_clash.hpp - which LLVM-based compilers are already loaded in this process.
//
// PoCL (libpocl -> libclang-cpp.so.15) and AMD's code object manager (libamd_comgr.so.2, which
// the HIP runtime dlopens to read or build GPU code) both register LLVM command-line options in
// the one shared libLLVM-15; when both are mapped, the second one aborts the whole process
// ("CommandLine Error: Option '...' registered more than once!"), whichever comes first. No
// RTLD_LOCAL or load order avoids it (toolchain.md section 6). So each of the two plugins looks
// before it does anything that may load its compiler, and refuses with an explanation instead of
// letting the process die.
#pragma once
#include <link.h>

#include <string>
#include <string_view>

namespace kiln::plugins {

// The path of a loaded shared object whose file name contains `needle` ("" when none is).
inline std::string loaded_library(std::string_view needle) {
  struct Search {
    std::string_view needle;
    std::string found;
  } s{needle, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* ctx) -> int {
        auto* s = static_cast<Search*>(ctx);
        std::string_view path = info->dlpi_name ? info->dlpi_name : "";
        size_t slash = path.rfind('/');
        std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
        if (file.find(s->needle) == std::string_view::npos) return 0;
        s->found = std::string(path);
        return 1;  // stop
      },
      &s);
  return s.found;
}

// The PoCL/clang side and the comgr side of the clash.
inline std::string loaded_pocl_compiler() {
  std::string p = loaded_library("libclang-cpp.so");
  return p.empty() ? loaded_library("libpocl.so") : p;
}
inline std::string loaded_comgr() { return loaded_library("libamd_comgr.so"); }

}  // namespace kiln::plugins
