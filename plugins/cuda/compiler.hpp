// plugins/cuda/compiler.hpp - CUDA C -> PTX, with NVRTC or with clang-15.
//
// NVRTC (`libnvrtc.so*`, dlopened; the toolkit's, or the `nvidia-cuda-nvrtc` wheel's): the source
// is compiled in process with --gpu-architecture=compute_XX, giving PTX with `.target sm_XX`.
//
// clang (`clang-15` as a subprocess, offline, no toolkit):
//   clang-15 -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=<arch> -O3
//            -Wno-unknown-cuda-version <flags> -S - -o -
// LLVM 15 knows archs up to sm_86: a newer arch is compiled for the newest one clang knows below
// it, and the PTX relabelled for the arch asked for (ptx.hpp: PTX is forward compatible). Such
// PTX uses no instruction newer than sm_86 (no tensor-memory or wgmma): correct, not the fastest.
//
// Which one: the option `compiler` = "auto" (NVRTC when its library loads, else clang), "nvrtc"
// or "clang". The source is the same for both (cuda_c.hpp: a header-free dialect). The cache key
// names the compiler and its version, the flags and the arch.
#pragma once
#include <mutex>
#include <string>
#include <vector>

namespace kiln::cuda {

struct CompilerConfig {
  std::string kind = "auto";       // auto | nvrtc | clang
  std::string nvrtc;               // libnvrtc path ("" = search)
  std::string clang = "clang-15";  // the clang for kind clang
  std::vector<std::string> flags;  // extra options for the chosen compiler
};

inline constexpr const char* kNvrtcEnv = "KILN_CUDA_NVRTC";  // a libnvrtc path, when the option is ""

// The loaded NVRTC's version ("12.9") and library, or the reason it cannot be loaded.
struct NvrtcStatus {
  bool ok = false;
  std::string version, library, error;
};
NvrtcStatus nvrtc_status(const std::string& path_option);

class Compiler {
 public:
  // Resolves "auto" (loading NVRTC if it can); throws INVALID_ARGUMENT for an unknown kind. With
  // kind "nvrtc" and no NVRTC, compile() is FAILED_PRECONDITION saying why.
  explicit Compiler(CompilerConfig config);

  // "nvrtc" or "clang": the compiler this object uses.
  const std::string& kind() const { return kind_; }
  // "NVRTC 12.9 (libnvrtc.so.12)" or "clang-15"
  std::string describe() const;
  // "<compiler and version>|<flags>|<arch>"; runs clang --version once, then cached.
  std::string cache_key(const std::string& arch);
  // PTX text for `arch` ("sm_90"). `entries` names the kernels for messages. Throws
  // sdk::Error{INVALID_ARGUMENT} with the compiler's log on a compile error, FAILED_PRECONDITION
  // when the compiler is missing or does not know the arch.
  std::string compile(const std::string& source, const std::string& entries, const std::string& arch,
                      const std::string& extra_options, std::string& log);
  // The clang command compile() runs for `arch` (for messages and tests).
  std::vector<std::string> clang_command(const std::string& arch, const std::string& extra_options) const;

 private:
  std::string compile_nvrtc(const std::string& source, const std::string& entries, const std::string& arch,
                            const std::string& extra_options, std::string& log);
  std::string compile_clang(const std::string& source, const std::string& entries, const std::string& arch,
                            const std::string& extra_options, std::string& log);

  CompilerConfig config_;
  std::string kind_;
  NvrtcStatus nvrtc_;
  std::mutex mu_;
  std::string version_;
};

// The arch clang-15 compiles for when asked for `arch` (itself, or the newest older arch LLVM 15
// knows); "" when there is none.
std::string clang_arch_for(const std::string& arch);

}  // namespace kiln::cuda
