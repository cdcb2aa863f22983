// plugins/cpu/config.hpp - the cpu backend's [backend.options].
//
//   devices  = 1                   how many devices cpu:0 ... cpu:N-1 the backend shows, each with
//                                  its own allocator and threads (multi-device work on one machine)
//   threads  = 0                   worker threads per launch and device; 0 = the cores this process
//                                  may use, split evenly between the devices (at least 1 each)
//   compiler = "llvm"              "llvm": LLVM IR compiled inside the process (fast first call);
//                                  else a C compiler (looked up in PATH), e.g. "clang-15"
//   flags    = "-O2 -march=native -ffreestanding -fno-builtin -fno-math-errno -fPIC -nostdlib -fstack-clash-protection"
//                                  the C compiler's flags (a string or an array of strings)
//   isa      = "native"            the x86-64 level kernels are compiled for: "native" (this host's CPU
//                                  and every feature it has) or "x86-64-v2"/"-v3"/"-v4"; a level
//                                  above the host's compiles but cannot run. "x86-64-v4+avx512bf16"
//                                  adds AVX512-BF16 (bfloat16 matmuls through vdpbf16ps) to v4
//   binary   = "object"            "object": an ELF object + the in-plugin ELF loader;
//                                  "shared": clang -shared + dlopen from a memfd (C compilers only)
//   offline_arch = []              more devices, one per x86-64 level named (after those of
//                                  KILN_CPU_OFFLINE_ARCH; read in plugin.cpp)
#pragma once
#include "compiler.hpp"
#include "kiln/sdk.hpp"
#include "sysinfo.hpp"

namespace kiln::cpu {

struct CpuConfig {
  unsigned devices = 1;
  unsigned threads = 1;
  CompilerConfig compiler;
  std::string isa;  // "" = native, else one of kIsaLevels
  bool avx512bf16 = false;  // isa's "+avx512bf16" (native: the host's own flag decides)
};

inline constexpr const char* kDefaultFlags =
    "-O2 -march=native -ffreestanding -fno-builtin -fno-math-errno -fPIC -nostdlib -fstack-clash-protection";

// An x86-64 level and the extensions after it ("x86-64-v4+avx512bf16"); `where` names the setting
// in the error a wrong one throws (INVALID_ARGUMENT).
struct IsaChoice {
  std::string level;
  bool avx512bf16 = false;
};
IsaChoice parse_isa(const std::string& text, const std::string& where);

// Throws sdk::Error{INVALID_ARGUMENT} for a wrong type or value; logs unknown keys as warnings.
CpuConfig read_config(const sdk::Options& options, const CpuInfo& cpu);

}  // namespace kiln::cpu
