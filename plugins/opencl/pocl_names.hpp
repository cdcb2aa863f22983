// plugins/opencl/pocl_names.hpp - the names PoCL's kernel library gives the OpenCL built-ins.
//
// PoCL's own front end includes its _builtin_renames.h, which renames most built-ins
// (`#define vload8 _cl_vload8`), so a kernel it compiles calls _Z10_cl_vload8mPU8CLglobalKf. Its
// kernel library defines them under those names with the target's calling convention; the
// standard names there are wrappers for SPIR input (SPIR calling convention, vectors passed
// directly, SPIR address-space mangling). Bitcode that clang made for the CPU target must
// therefore call the renamed functions: with the standard names it reaches the wrappers and, for
// vectors wider than 256 bits (x86 passes those in memory), crashes PoCL's code generator.
#pragma once
#include <string>
#include <string_view>
#include <unordered_set>

namespace kiln::opencl {

using NameSet = std::unordered_set<std::string>;

// The names PoCL renames, read from the _builtin_renames.h of the PoCL loaded in this process
// (next to its private data: <lib>/../../share/pocl/include, or /usr[/local]/share/pocl/include).
// Empty when the file is not found; `where` receives the path read or the places searched.
NameSet pocl_renamed_builtins(std::string& where);

// `bitcode` with every declared function whose Itanium-mangled base name is in `renamed` renamed
// as PoCL's front end would have named it (_Z6vload8... -> _Z10_cl_vload8...). Throws
// sdk::Error{INTERNAL} if the bitcode does not parse.
std::string rename_builtins(std::string_view bitcode, const NameSet& renamed);

}  // namespace kiln::opencl
