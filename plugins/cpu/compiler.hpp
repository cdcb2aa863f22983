// plugins/cpu/compiler.hpp - kernel source -> ELF object (or shared library).
//
// Two compilers, chosen by the option `compiler`:
//   "llvm"    (default) LLVM IR from the LLVM renderer (llvm_ir.hpp), optimised by kiln's pass
//             pipeline (the parts of O2 kernels use) and emitted as an ELF object by LLVM 15
//             inside this process (llvm_compiler.cpp): 5-20 ms for most kernels, up to ~150 ms
//             for a large convolution tile; no process start-up.
//   a program C from the C dialect (c_dialect.hpp), compiled by that clang as a subprocess
//             (ClangCompiler below): ~40 ms a kernel, mostly clang's start-up.
//
// ClangCompiler: the source goes to clang's stdin and, for the "object" format, the object comes back on stdout:
// no temporary files. The "shared" format needs a seekable output for the linker, so it writes a
// temporary file in $TMPDIR and removes it at once. A compile error throws
// sdk::Error{INVALID_ARGUMENT} whose message is the complete compiler log; a missing compiler
// throws FAILED_PRECONDITION naming the program and how to install or configure it.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::cpu {

enum class BinaryFormat { object, shared };  // in the order of option binary's names

inline constexpr const char* kInProcessLlvm = "llvm";

struct CompilerConfig {
  std::string compiler = kInProcessLlvm;
  std::vector<std::string> flags;  // for a C compiler
  BinaryFormat format = BinaryFormat::object;
  bool in_process() const { return compiler == kInProcessLlvm; }
};

class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  // Changes whenever the compiler, its options or the target ISA change a binary.
  virtual std::string cache_key() = 0;
  // `extra_options`: whitespace-separated options for this compile only. A compile error throws
  // sdk::Error{INVALID_ARGUMENT} carrying the full log.
  virtual std::string compile(const std::string& source, const std::string& entry, const std::string& extra_options,
                              std::string& log) = 0;
};

// The in-process LLVM compiler (llvm_compiler.cpp) for this host's CPU and features, or for an
// x86-64 level (`isa`, e.g. "x86-64-v4": the level's features, whatever the host has). Thread-safe:
// each compile has its own LLVMContext and TargetMachine.
std::unique_ptr<KernelCompiler> make_llvm_compiler(const std::string& isa = "", const std::string& features = "");
// What that compiler's optimisation pipeline makes of an LLVM IR module, as text (tests of the
// pipeline: the object compile() returns is machine code).
std::string llvm_optimized_ir(const std::string& source, const std::string& isa = "", const std::string& features = "");

class Compiler final : public KernelCompiler {
 public:
  // `features`: the target's ISA features; part of the cache key (-march=native depends on them).
  Compiler(CompilerConfig config, std::string features);

  // "<clang --version first line>|<flags>|<format>|<features>"; runs clang once, then cached.
  std::string cache_key() override;
  std::string compile(const std::string& source, const std::string& entry, const std::string& extra_options,
                      std::string& log) override;

 private:
  std::vector<std::string> command(const std::string& extra_options) const;
  CompilerConfig config_;
  std::string features_;
  std::mutex key_mu_;
  std::string key_;
};

}  // namespace kiln::cpu
