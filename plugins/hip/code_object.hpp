// plugins/hip/code_object.hpp - reading AMDGPU code objects (ELF64) without the HIP runtime.
//
// load() checks a binary before it reaches the GPU (a wrong file is INVALID_ARGUMENT with a
// reason, not a crash in the driver), finds the kernel's argument counts, and the tests validate
// offline code objects with it: machine EM_AMDGPU, the kernel symbol and its `.kd` descriptor.
// Every read is bounds-checked; malformed input throws sdk::Error{INVALID_ARGUMENT}.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::hip {

inline constexpr uint16_t kEmAmdgpu = 224;  // ELF e_machine of AMDGPU code objects

struct ElfSymbol {
  std::string name;
  uint64_t value = 0, size = 0;
  uint16_t section = 0;
  uint8_t type = 0;  // STT_FUNC 2, STT_OBJECT 1
};

struct CodeObject {
  uint16_t type = 0;     // ET_DYN 3 for linked code objects
  uint16_t machine = 0;  // kEmAmdgpu
  uint32_t flags = 0;    // EF_AMDGPU_MACH_* in the low byte
  std::vector<ElfSymbol> symbols;  // .dynsym and .symtab

  const ElfSymbol* symbol(std::string_view name) const;
  // The initial bytes of a data symbol (from its section's contents); empty when it has none.
  std::string_view symbol_bytes(const ElfSymbol& s) const;

  std::string_view image;  // the parsed bytes (borrowed)
  struct Section {
    uint32_t type = 0;
    uint64_t addr = 0, offset = 0, size = 0;
  };
  std::vector<Section> sections;
};

// Parses an ELF64 little-endian file; `bytes` must outlive the result.
CodeObject parse_code_object(std::string_view bytes);

// The argument counts a kiln HIP kernel records (kiln_nargs_<entry> = {buffers, values}), or
// {-1, -1} when the code object has no such symbol (not made by kiln's HIP dialect).
struct ArgCounts {
  int64_t buffers = -1, values = -1;
};
ArgCounts kernel_arg_counts(const CodeObject& co, std::string_view entry);

}  // namespace kiln::hip
