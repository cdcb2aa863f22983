// plugins/hip/config.hpp - the hip backend's [backend.options], and the offline targets.
//
//   compiler = "clang-15"   the HIP compiler (looked up in PATH)
//   flags    = "-O3"        extra clang flags (a string or an array of strings); part of the cache key
//   arch     = ""           compile for this arch instead of the GPU's (e.g. "gfx1030" for a
//                           gfx1031 card the toolchain does not know); "" = the GPU's. Offline
//                           devices always use their own arch. Checked like the offline archs.
//   offline_arch = []       offline targets (a string or an array of strings), after those of
//                           KILN_HIP_OFFLINE_ARCH
//
// Offline targets: KILN_HIP_OFFLINE_ARCH=gfx90a,gfx1100 (environment) and the option offline_arch
// add one device per arch after the real GPUs, hip:N.. ("offline compiler for gfx1100"). They
// render and compile kernels (`kiln compile --backend hip --arch gfx1100` sets the option), so the
// HIP path is testable on a machine without an AMD GPU; allocating or launching on them is
// UNAVAILABLE. The probe reads them (probe_with_options): offline targets alone make the backend
// usable.
#pragma once
#include <string>
#include <vector>

#include "compiler.hpp"
#include "kiln/sdk.hpp"

namespace kiln::hip {

struct HipConfig {
  CompilerConfig compiler;
  std::string arch;  // override ("" = the device's)
};

inline constexpr const char* kOfflineArchEnv = "KILN_HIP_OFFLINE_ARCH";

// Throws sdk::Error{INVALID_ARGUMENT} naming a bad option; logs unknown keys as warnings.
HipConfig read_config(const sdk::Options& options);

// The archs of KILN_HIP_OFFLINE_ARCH (comma or space separated); throws INVALID_ARGUMENT for a
// name that is not an AMDGPU arch ("gfx" + hex digits, optional ":feature+/-" suffixes).
std::vector<std::string> offline_archs();
// The archs of the option offline_arch; throws INVALID_ARGUMENT naming the option.
std::vector<std::string> offline_archs(const sdk::Options& options);

// "gfx90a:sramecc+:xnack-" -> "gfx90a" (what --offload-arch takes without target features).
std::string base_arch(const std::string& gcn_arch_name);

}  // namespace kiln::hip
