// plugins/opencl/pocl_names.cpp - reading PoCL's renames, renaming in bitcode (the plugin's only
// file with LLVM headers).
#include "pocl_names.hpp"

#include <cctype>
#include <fstream>
#include <regex>
#include <vector>

#include "../common/llvm_clash.hpp"
#include "kiln/sdk.hpp"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace kiln::opencl {

NameSet pocl_renamed_builtins(std::string& where) {
  std::vector<std::string> dirs;
  std::string lib = plugins::loaded_library("libpocl.so");
  if (size_t slash = lib.rfind('/'); slash != std::string::npos) dirs.push_back(lib.substr(0, slash) + "/../../share/pocl");
  dirs.push_back("/usr/share/pocl");
  dirs.push_back("/usr/local/share/pocl");
  where.clear();
  for (const std::string& dir : dirs) {
    std::string path = dir + "/include/_builtin_renames.h";
    std::ifstream in(path);
    if (!in) {
      where += (where.empty() ? "" : ", ") + path;
      continue;
    }
    NameSet names;
    static const std::regex rename(R"(^\s*#\s*define\s+(\w+)\s+_cl_(\w+)\s*$)");
    std::smatch m;
    for (std::string line; std::getline(in, line);)
      if (std::regex_match(line, m, rename) && m[1] == m[2]) names.insert(m[1]);
    where = path;
    return names;
  }
  return {};
}

std::string rename_builtins(std::string_view bitcode, const NameSet& renamed) {
  llvm::LLVMContext context;
  auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(bitcode.data(), bitcode.size()), "kernel", false);
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(buffer->getMemBufferRef(), context);
  if (!module)
    throw sdk::Error{KILN_STATUS_INTERNAL, "reading clang's bitcode failed: " + llvm::toString(module.takeError())};
  for (llvm::Function& f : **module) {
    if (!f.isDeclaration()) continue;
    llvm::StringRef name = f.getName();  // _Z <length> <name> <parameter types>
    if (!name.startswith("_Z")) continue;
    size_t at = 2, length = 0;
    while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at])))
      length = length * 10 + static_cast<size_t>(name[at++] - '0');
    if (length == 0 || at + length > name.size() || !renamed.count(name.substr(at, length).str())) continue;
    f.setName("_Z" + std::to_string(length + 4) + "_cl_" + name.substr(at).str());
  }
  std::string out;
  llvm::raw_string_ostream stream(out);
  llvm::WriteBitcodeToFile(**module, stream);
  stream.flush();
  return out;
}

}  // namespace kiln::opencl
