// plugins/hip/compiler.cpp - running clang-15 for AMDGPU.
#include "compiler.hpp"

#include <sstream>

#include "../common/process.hpp"
#include "kiln/sdk.hpp"

namespace kiln::hip {

namespace {

std::string missing_hint(const std::string& compiler) {
  return "The hip backend compiles kernels with " + compiler +
         ": install it (Debian/Ubuntu: apt-get install clang-15) or point the backend at another clang with "
         "[backends.hip.options] compiler = \"/path/to/clang\" in ~/.config/kiln/config.toml";
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

std::vector<std::string> Compiler::command(const std::string& arch, const std::string& extra_options) const {
  std::vector<std::string> argv{config_.compiler, "-x", "hip", "--offload-arch=" + arch, "--cuda-device-only",
                                "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc"};
  argv.insert(argv.end(), config_.flags.begin(), config_.flags.end());
  std::istringstream extra(extra_options);
  for (std::string w; extra >> w;) argv.push_back(w);
  argv.insert(argv.end(), {"-c", "-", "-o", "-"});
  return argv;
}

std::string Compiler::cache_key(const std::string& arch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (version_.empty()) {
    plugins::ProcessResult r = plugins::run_process({config_.compiler, "--version"}, "", missing_hint(config_.compiler).c_str());
    if (r.exit_code != 0)
      throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, config_.compiler + " --version failed:\n" + r.err};
    version_ = r.out.substr(0, r.out.find('\n'));
  }
  return version_ + "|" + joined(config_.flags) + "|" + arch;
}

std::string Compiler::compile(const std::string& source, const std::string& entries, const std::string& arch,
                              const std::string& extra_options, std::string& log) {
  std::vector<std::string> argv = command(arch, extra_options);
  plugins::ProcessResult r = plugins::run_process(argv, source, missing_hint(config_.compiler).c_str());
  log = r.err;
  if (r.exit_code != 0 || r.out.size() < 4 || r.out.compare(0, 4, "\x7f" "ELF") != 0) {
    std::string how = r.signal ? "was killed by signal " + std::to_string(r.signal)
                      : r.exit_code != 0 ? "exited with " + std::to_string(r.exit_code)
                                         : "wrote no code object";
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compiling " + entries + " for " + arch + " failed: " +
                                                       config_.compiler + " " + how + "\ncommand: " + joined(argv) +
                                                       "\n" + r.err};
  }
  return std::move(r.out);
}

}  // namespace kiln::hip
