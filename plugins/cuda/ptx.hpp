// plugins/cuda/ptx.hpp - what the plugin reads from PTX text, without the driver.
//
// load() checks a binary before it reaches the driver (a wrong file is INVALID_ARGUMENT with a
// reason, not a JIT error later), and the tests check compiled kernels with the same reader: the
// ISA version, the target arch, and each kernel's parameters.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cuda {

// "sm_90" -> 90, "sm_90a" -> 90; nullopt for anything that is not sm_<digits>[a|f].
std::optional<int> sm_number(std::string_view arch);

struct PtxInfo {
  int version_major = 0, version_minor = 0;  // .version
  std::string target;                         // .target (its first word: "sm_90")
};

// Throws sdk::Error{INVALID_ARGUMENT} "not PTX: ..." when the text has no .version or .target.
PtxInfo parse_ptx(std::string_view ptx);

// The number of parameters of `.entry <entry>(...)`, or nullopt when the PTX defines no such kernel.
std::optional<int> ptx_entry_params(std::string_view ptx, std::string_view entry);

// The smallest PTX ISA version (major*10+minor) that can name `arch`; 0 for an arch this table
// does not know.
int min_ptx_version(int sm);

// The newest PTX ISA version (major*10+minor) a driver of cuDriverGetVersion() `driver` (12080 =
// CUDA 12.8) loads; 0 for one older than CUDA 11.
int max_ptx_version_of_driver(int driver);
// The PTX with its .version set to `version` (major*10+minor).
std::string with_ptx_version(std::string ptx, int version);

// PTX made for an older arch, relabelled for `arch` (its .target and, when needed, .version):
// PTX is forward compatible, so code valid for sm_86 is valid for sm_90; ptxas or the driver then
// compiles it for the newer arch. How clang-15 (which knows archs up to sm_86) targets newer GPUs.
std::string retarget_ptx(std::string ptx, const std::string& arch);

}  // namespace kiln::cuda
