// plugins/cpu/image.hpp - compiled kernels mapped into the process.
//
// Two binary formats, chosen by the `binary` option of the cpu backend:
//   "object" (default): a relocatable x86-64 ELF object from `clang -c`, loaded by a small
//       in-plugin linker (elf_loader.cpp). No linker process, no dlopen: the fastest first call.
//   "shared": a shared library from `clang -shared`, loaded with dlopen from a memfd.
// load_image() recognises either by the ELF header, so a binary loads whatever the option says now.
// Undefined symbols (memset, expf, ...) resolve against the process's global scope (libc, libm).
#pragma once
#include <memory>
#include <string_view>

namespace kiln::cpu {

class Image {
 public:
  virtual ~Image() = default;  // unmaps the code
  // The address of a defined global symbol, or nullptr.
  virtual void* symbol(std::string_view name) const = 0;
};

// Throws sdk::Error{INVALID_ARGUMENT} naming the problem (not ELF, wrong machine, an unresolved
// symbol, an unsupported relocation or section kind).
std::unique_ptr<Image> load_object(std::string_view elf);  // ET_REL
std::unique_ptr<Image> load_shared(std::string_view elf);  // ET_DYN
std::unique_ptr<Image> load_image(std::string_view binary);

}  // namespace kiln::cpu
