// plugins/opencl/frontend.hpp - OpenCL C to LLVM bitcode with clang, for drivers that build LLVM IR.
//
// Why: PoCL's clBuildProgram from source costs ~150 ms whatever the kernel. Its own clang front end
// parses clang's whole opencl-c.h (18k lines of overloads) twice, to preprocess for its cache key
// and then to compile. Given LLVM bitcode for its own target (clCreateProgramWithBinary) it only
// links its kernel library: ~3 ms. clang-15 run as a process compiles a kernel with the
// table-generated built-in declarations (-fdeclare-opencl-builtins, clang's default) in ~30 ms.
//
// The flags mirror PoCL's own front end, so the program is the one clBuildProgram would make: the
// device's OpenCL C version, extensions and OpenCL C features, PoCL's target triple and CPU, -O2
// without loop unrolling (PoCL leaves that and vectorising to its work-group compiler), no
// builtin-function folding, stack realignment, kernel argument info. The built-ins the bitcode
// calls are then renamed as PoCL's front end renames them (pocl_names.hpp).
//
// Which devices: PoCL's CPU devices, which name their LLVM target in CL_DEVICE_VERSION
// ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-haswell"). Other drivers take no LLVM IR of
// their own target (SPIR-V would need a translator kiln does not ship) and build from source.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "cl_api.hpp"
#include "config.hpp"
#include "pocl_names.hpp"

namespace kiln::opencl {

// The LLVM target in a PoCL CPU device's CL_DEVICE_VERSION, or nullopt for any other device.
struct LlvmTarget {
  std::string triple;  // "x86_64-pc-linux-gnu"
  std::string cpu;     // "haswell"
};
std::optional<LlvmTarget> pocl_llvm_target(std::string_view device_version);

class ClangFrontend {
 public:
  // For `device`, compiling with the program `clang` (searched in PATH).
  ClangFrontend(std::string clang, LlvmTarget target, NameSet renamed, cl_device_id device);

  // Bitcode for `source` (a whole translation unit); `options` are clBuildProgram options (clang
  // takes the same ones). `log` receives clang's warnings. Throws sdk::Error: INVALID_ARGUMENT with
  // clang's diagnostics when the source does not compile, FAILED_PRECONDITION when clang cannot run
  // (the message says how to install it or choose another front end).
  std::string compile(std::string_view source, std::string_view options, std::string& log) const;

  const std::string& clang() const { return clang_; }

 private:
  std::string clang_;
  LlvmTarget target_;
  NameSet renamed_;         // PoCL's renamed built-ins
  std::string cl_std_;      // "-cl-std=CL3.0": the device's newest OpenCL C, as PoCL builds
  std::string extensions_;  // "-cl-ext=-all,+cl_khr_fp64,...": the device's extensions and features
};

// The front end for a device under option frontend = "clang"/"auto", or nullopt with the reason
// in `why_not`: not a PoCL CPU device, clang not found, PoCL's renames not found.
std::optional<ClangFrontend> clang_frontend(const OpenclConfig& config, cl_device_id device, std::string& why_not);

}  // namespace kiln::opencl
