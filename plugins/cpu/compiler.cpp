// plugins/cpu/compiler.cpp - running clang.
#include "compiler.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/process.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cpu {
namespace {

std::string missing_hint(const std::string& compiler) {
  return "The cpu backend compiles kernels with " + compiler +
         ": install it (Debian/Ubuntu: apt-get install clang-15) or point the backend at another clang with "
         "[backends.cpu.options] compiler = \"/path/to/clang\" in ~/.config/kiln/config.toml";
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

const char* format_name(BinaryFormat f) { return f == BinaryFormat::object ? "object" : "shared"; }

// A private temporary directory for the linker's output (removed with its contents).
struct TempDir {
  std::string path;
  TempDir() {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-cpu-XXXXXX";
    if (!mkdtemp(pattern.data()))
      throw sdk::Error{KILN_STATUS_INTERNAL, "cannot create a temporary directory from " + pattern};
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

Compiler::Compiler(CompilerConfig config, std::string features)
    : config_(std::move(config)), features_(std::move(features)) {}

std::vector<std::string> Compiler::command(const std::string& extra_options) const {
  std::vector<std::string> argv{config_.compiler};
  argv.insert(argv.end(), config_.flags.begin(), config_.flags.end());
  for (std::string& w : split_words(extra_options)) argv.push_back(std::move(w));
  return argv;
}

std::string Compiler::cache_key() {
  std::lock_guard<std::mutex> lock(key_mu_);
  if (!key_.empty()) return key_;
  plugins::ProcessResult r = plugins::run_process({config_.compiler, "--version"}, "", missing_hint(config_.compiler).c_str());
  if (r.exit_code != 0)
    throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, config_.compiler + " --version failed:\n" + r.err};
  std::string version = r.out.substr(0, r.out.find('\n'));
  std::string flags;
  for (const std::string& f : config_.flags) flags += (flags.empty() ? "" : " ") + f;
  key_ = version + "|" + flags + "|" + format_name(config_.format) + "|" + features_;
  return key_;
}

std::string Compiler::compile(const std::string& source, const std::string& entry, const std::string& extra_options,
                              std::string& log) {
  std::vector<std::string> argv = command(extra_options);
  std::unique_ptr<TempDir> tmp;
  std::string out_path;
  if (config_.format == BinaryFormat::object) {
    argv.insert(argv.end(), {"-c", "-x", "c", "-", "-o", "-"});
  } else {
    tmp = std::make_unique<TempDir>();
    out_path = tmp->path + "/kernel.so";
    argv.insert(argv.end(), {"-shared", "-x", "c", "-", "-o", out_path});
  }
  plugins::ProcessResult r = plugins::run_process(argv, source, missing_hint(config_.compiler).c_str());
  log = r.err;
  if (r.exit_code != 0) {
    std::string cmd;
    for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    std::string how = r.signal ? "was killed by signal " + std::to_string(r.signal) : "exited with " + std::to_string(r.exit_code);
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compiling kernel '" + entry + "' failed: " + config_.compiler + " " +
                                                       how + "\ncommand: " + cmd + "\n" + r.err};
  }
  if (config_.format == BinaryFormat::object) return std::move(r.out);
  std::ifstream in(out_path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw sdk::Error{KILN_STATUS_INTERNAL, "cannot read the linked kernel " + out_path};
  return bytes.str();
}

}  // namespace kiln::cpu
