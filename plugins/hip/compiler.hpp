// plugins/hip/compiler.hpp - HIP source -> AMDGPU code object with clang-15 as a subprocess.
//
//   clang-15 -x hip --offload-arch=<arch> --cuda-device-only --no-gpu-bundle-output -nogpulib
//            -nogpuinc <flags> -c - -o -
//
// The source goes to stdin and the linked code object (ELF, EM_AMDGPU) comes back on stdout. A
// subprocess, not hiprtc: comgr (behind hiprtc) cannot share a process with PoCL, and ROCm 5.2's
// comgr crashes on gfx11. -nogpulib means no device libraries (ROCm 5.2 has none for gfx11), so
// kernels use only clang builtins (the HIP dialect guarantees that).
#pragma once
#include <mutex>
#include <string>
#include <vector>

namespace kiln::hip {

struct CompilerConfig {
  std::string compiler = "clang-15";
  std::vector<std::string> flags{"-O3"};
};

class Compiler {
 public:
  explicit Compiler(CompilerConfig config) : config_(std::move(config)) {}

  // "<clang --version first line>|<flags>|<arch>"; runs clang once, then cached.
  std::string cache_key(const std::string& arch);
  // `entries` names the kernels for messages ("kernel 'a'", "kernels 'a', 'b'"). Throws
  // sdk::Error{INVALID_ARGUMENT} with clang's full log on a compile error, FAILED_PRECONDITION
  // when clang is missing.
  std::string compile(const std::string& source, const std::string& entries, const std::string& arch,
                      const std::string& extra_options, std::string& log);
  // The command compile() runs (for messages and `kiln compile --verbose`).
  std::vector<std::string> command(const std::string& arch, const std::string& extra_options) const;

 private:
  CompilerConfig config_;
  std::mutex mu_;
  std::string version_;
};

}  // namespace kiln::hip
