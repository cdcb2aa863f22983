// plugins/cpu/compiler.hpp - C source -> kernel binary with clang as a subprocess.
//
// The source goes to clang's stdin and, for the "object" format, the object comes back on stdout:
// no temporary files. The "shared" format needs a seekable output for the linker, so it writes a
// temporary file in $TMPDIR and removes it at once. A compile error throws
// sdk::Error{INVALID_ARGUMENT} whose message is the complete compiler log; a missing compiler
// throws FAILED_PRECONDITION naming the program and how to install or configure it.
#pragma once
#include <mutex>
#include <string>
#include <vector>

namespace kiln::cpu {

enum class BinaryFormat { object, shared };

struct CompilerConfig {
  std::string compiler = "clang-15";
  std::vector<std::string> flags;
  BinaryFormat format = BinaryFormat::object;
};

class Compiler {
 public:
  // `features`: the target's ISA features; part of the cache key (-march=native depends on them).
  Compiler(CompilerConfig config, std::string features);

  // "<clang --version first line>|<flags>|<format>|<features>"; runs clang once, then cached.
  std::string cache_key();
  // `extra_options`: whitespace-separated flags appended for this compile only.
  std::string compile(const std::string& source, const std::string& entry, const std::string& extra_options,
                      std::string& log);

 private:
  std::vector<std::string> command(const std::string& extra_options) const;
  CompilerConfig config_;
  std::string features_;
  std::mutex key_mu_;
  std::string key_;
};

}  // namespace kiln::cpu
