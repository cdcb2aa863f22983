// plugins/hip/code_object.hpp - reading AMDGPU code objects (ELF64) without the HIP runtime.
//
// load() checks a binary before it reaches the GPU (a wrong file is INVALID_ARGUMENT with a
// reason, not a crash in the driver) and finds the kernel's argument counts; the tests validate
// offline code objects with it: machine EM_AMDGPU, the kernel symbol and its `.kd` descriptor.
#pragma once
#include <cstdint>
#include <string_view>

#include "kiln/sdk/elf64.hpp"

namespace kiln::hip {

inline constexpr uint16_t kEmAmdgpu = 224;  // ELF e_machine of AMDGPU code objects

using CodeObject = sdk::Elf64;
using ElfSymbol = sdk::ElfSymbol;

// Parses an ELF64 file; throws sdk::Error{INVALID_ARGUMENT} "not a valid AMDGPU code object: ...".
CodeObject parse_code_object(std::string_view bytes);

// The argument counts a kiln HIP kernel records (kiln_nargs_<entry> = {buffers, values}), or
// {-1, -1} when the code object has no such symbol (not made by kiln's HIP dialect).
struct ArgCounts {
  int64_t buffers = -1, values = -1;
};
ArgCounts kernel_arg_counts(const CodeObject& co, std::string_view entry);

}  // namespace kiln::hip
