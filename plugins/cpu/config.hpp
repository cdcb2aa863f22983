// plugins/cpu/config.hpp - the cpu backend's [backend.options].
//
//   threads  = 0                   worker threads per launch, 0 = every core this process may use
//   compiler = "clang-15"          the C compiler (looked up in PATH)
//   flags    = "-O2 -march=native -ffreestanding -fno-builtin -fno-math-errno -fPIC -nostdlib"
//                                  (a string or an array of strings)
//   binary   = "object"            "object": clang -c + the in-plugin ELF loader (fast first call);
//                                  "shared": clang -shared + dlopen from a memfd
#pragma once
#include "compiler.hpp"
#include "kiln/sdk.hpp"
#include "sysinfo.hpp"

namespace kiln::cpu {

struct CpuConfig {
  unsigned threads = 1;
  CompilerConfig compiler;
};

inline constexpr const char* kDefaultFlags =
    "-O2 -march=native -ffreestanding -fno-builtin -fno-math-errno -fPIC -nostdlib";

// Throws sdk::Error{INVALID_ARGUMENT} for a wrong type or value; logs unknown keys as warnings.
CpuConfig read_config(const sdk::Options& options, const CpuInfo& cpu);

}  // namespace kiln::cpu
