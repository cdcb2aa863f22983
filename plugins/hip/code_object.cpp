// plugins/hip/code_object.cpp - code objects on top of the ELF64 reader.
#include "code_object.hpp"

#include <string>

namespace kiln::hip {

CodeObject parse_code_object(std::string_view bytes) { return sdk::Elf64::parse(bytes, "AMDGPU code object"); }

ArgCounts kernel_arg_counts(const CodeObject& co, std::string_view entry) {
  ArgCounts c;
  std::string name = "kiln_nargs_" + std::string(entry);
  const ElfSymbol* s = co.symbol(name);
  if (!s) return c;
  std::string_view bytes = co.symbol_bytes(*s);
  if (bytes.size() != 8)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "not a valid AMDGPU code object: " + name + " is not two 32-bit counts"};
  uint32_t v[2];
  std::memcpy(v, bytes.data(), 8);
  c.buffers = v[0];
  c.values = v[1];
  return c;
}

}  // namespace kiln::hip
