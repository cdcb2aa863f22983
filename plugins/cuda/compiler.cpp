// plugins/cuda/compiler.cpp - NVRTC (dlopened) and clang-15 (a subprocess).
#include "compiler.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>

#include "../common/process.hpp"
#include "kiln/sdk.hpp"
#include "ptx.hpp"

namespace kiln::cuda {

namespace {

// NVRTC's C API (nvrtc.h), declared here: no CUDA header is needed to build the plugin.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
struct Nvrtc {
  nvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* prog, const char* src, const char* name, int n_headers,
                                    const char* const* headers, const char* const* include_names) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* prog) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram prog, int n_options, const char* const* options) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram prog, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram prog, char* ptx) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram prog, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram prog, char* log) = nullptr;
  std::string library, version, error;
};

// Where NVRTC may be: the usual sonames (the loader's path), then the toolkit's default prefix.
const char* const kNvrtcNames[] = {"libnvrtc.so",
                                   "libnvrtc.so.13",
                                   "libnvrtc.so.12",
                                   "libnvrtc.so.11.2",
                                   "/usr/local/cuda/lib64/libnvrtc.so",
                                   "/usr/local/cuda/lib/libnvrtc.so"};

Nvrtc load_nvrtc(const std::string& path) {
  Nvrtc n;
  void* handle = nullptr;
  std::string first_error;
  std::vector<std::string> names;
  if (!path.empty()) names.push_back(path);
  else for (const char* c : kNvrtcNames) names.push_back(c);
  for (const std::string& name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      n.library = name;
      break;
    }
    const char* e = dlerror();
    if (first_error.empty()) first_error = e ? e : name;
  }
  if (!handle) {
    n.error = "NVRTC not found (" + first_error +
              "); install the CUDA toolkit or `pip install nvidia-cuda-nvrtc-cu12` and name its libnvrtc.so.* with "
              "the option nvrtc or " + std::string(kNvrtcEnv) + ", or use compiler = \"clang\"";
    return n;
  }
#define KILN_NVRTC_RESOLVE(name)                                                   \
  n.name = reinterpret_cast<decltype(n.name)>(dlsym(handle, #name));               \
  if (!n.name) {                                                                   \
    n.error = n.library + " has no " #name ": not NVRTC, or one older than CUDA 11"; \
    return n;                                                                      \
  }
  KILN_NVRTC_RESOLVE(nvrtcVersion) KILN_NVRTC_RESOLVE(nvrtcGetErrorString) KILN_NVRTC_RESOLVE(nvrtcCreateProgram)
  KILN_NVRTC_RESOLVE(nvrtcDestroyProgram) KILN_NVRTC_RESOLVE(nvrtcCompileProgram) KILN_NVRTC_RESOLVE(nvrtcGetPTXSize)
  KILN_NVRTC_RESOLVE(nvrtcGetPTX) KILN_NVRTC_RESOLVE(nvrtcGetProgramLogSize) KILN_NVRTC_RESOLVE(nvrtcGetProgramLog)
#undef KILN_NVRTC_RESOLVE
  int major = 0, minor = 0;
  n.nvrtcVersion(&major, &minor);
  n.version = std::to_string(major) + "." + std::to_string(minor);
  return n;
}

// One load per library path for the process (NVRTC is never unloaded).
const Nvrtc& nvrtc(const std::string& path_option) {
  static std::mutex mu;
  static std::vector<std::pair<std::string, std::unique_ptr<Nvrtc>>> loaded;
  const char* env = std::getenv(kNvrtcEnv);
  std::string path = !path_option.empty() ? path_option : env && *env ? env : "";
  std::lock_guard<std::mutex> lock(mu);
  for (auto& [p, n] : loaded)
    if (p == path) return *n;
  loaded.emplace_back(path, std::make_unique<Nvrtc>(load_nvrtc(path)));
  return *loaded.back().second;
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::string clang_missing_hint(const std::string& clang) {
  return "The cuda backend's clang compiler is " + clang +
         ": install it (Debian/Ubuntu: apt-get install clang-15), or use NVRTC ([backends.cuda.options] compiler = "
         "\"nvrtc\") in ~/.config/kiln/config.toml";
}

}  // namespace

NvrtcStatus nvrtc_status(const std::string& path_option) {
  const Nvrtc& n = nvrtc(path_option);
  return {n.error.empty(), n.version, n.library, n.error};
}

std::string clang_arch_for(const std::string& arch) {
  // the CUDA archs LLVM 15's NVPTX back end knows
  static const int known[] = {20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86};
  std::optional<int> sm = sm_number(arch);
  if (!sm || arch.back() == 'a' || arch.back() == 'f') return "";  // arch-specific features: not by relabelling
  int best = 0;
  for (int k : known)
    if (k <= *sm) best = k;
  return best ? "sm_" + std::to_string(best) : "";
}

Compiler::Compiler(CompilerConfig config) : config_(std::move(config)) {
  if (config_.kind != "auto" && config_.kind != "nvrtc" && config_.kind != "clang")
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'compiler': '" + config_.kind + "' is not a CUDA compiler (auto, nvrtc or clang)"};
  kind_ = config_.kind;
  if (kind_ != "clang") {
    nvrtc_ = nvrtc_status(config_.nvrtc);
    if (kind_ == "auto") kind_ = nvrtc_.ok ? "nvrtc" : "clang";
  }
}

std::string Compiler::describe() const {
  if (kind_ == "nvrtc") return "NVRTC " + nvrtc_.version + " (" + nvrtc_.library + ")";
  return config_.clang + (config_.kind == "auto" ? " (NVRTC: " + nvrtc_.error.substr(0, nvrtc_.error.find(';')) + ")" : "");
}

std::vector<std::string> Compiler::clang_command(const std::string& arch, const std::string& extra_options) const {
  std::vector<std::string> argv{config_.clang, "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
                                "--cuda-gpu-arch=" + clang_arch_for(arch), "-O3", "-Wno-unknown-cuda-version"};
  argv.insert(argv.end(), config_.flags.begin(), config_.flags.end());
  std::istringstream extra(extra_options);
  for (std::string w; extra >> w;) argv.push_back(w);
  argv.insert(argv.end(), {"-S", "-", "-o", "-"});
  return argv;
}

std::string Compiler::cache_key(const std::string& arch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (version_.empty()) {
    if (kind_ == "nvrtc") {
      version_ = "NVRTC " + nvrtc_.version;
    } else {
      plugins::ProcessResult r = plugins::run_process({config_.clang, "--version"}, "", clang_missing_hint(config_.clang).c_str());
      if (r.exit_code != 0) throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, config_.clang + " --version failed:\n" + r.err};
      version_ = r.out.substr(0, r.out.find('\n'));
    }
  }
  return version_ + "|" + joined(config_.flags) + "|" + arch;
}

std::string Compiler::compile(const std::string& source, const std::string& entries, const std::string& arch,
                              const std::string& extra_options, std::string& log) {
  if (!sm_number(arch))
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "'" + arch + "' is not a CUDA arch (like sm_80, sm_90)"};
  if (kind_ == "nvrtc") return compile_nvrtc(source, entries, arch, extra_options, log);
  return compile_clang(source, entries, arch, extra_options, log);
}

std::string Compiler::compile_nvrtc(const std::string& source, const std::string& entries, const std::string& arch,
                                    const std::string& extra_options, std::string& log) {
  const Nvrtc& n = nvrtc(config_.nvrtc);
  if (!n.error.empty()) throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, n.error};
  std::vector<std::string> options{"--gpu-architecture=compute_" + arch.substr(3)};
  options.insert(options.end(), config_.flags.begin(), config_.flags.end());
  std::istringstream extra(extra_options);
  for (std::string w; extra >> w;) options.push_back(w);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  nvrtcProgram prog = nullptr;
  nvrtcResult r = n.nvrtcCreateProgram(&prog, source.c_str(), "kiln.cu", 0, nullptr, nullptr);
  if (r != 0) throw sdk::Error{KILN_STATUS_INTERNAL, std::string("nvrtcCreateProgram failed: ") + n.nvrtcGetErrorString(r)};
  struct Destroy {
    const Nvrtc& n;
    nvrtcProgram& p;
    ~Destroy() { n.nvrtcDestroyProgram(&p); }
  } destroy{n, prog};
  r = n.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (n.nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    log.assign(log_size, '\0');
    n.nvrtcGetProgramLog(prog, log.data());
    log.resize(log_size - 1);
  }
  if (r != 0)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compiling " + entries + " for " + arch + " failed: NVRTC " + n.version +
                                                       " says " + n.nvrtcGetErrorString(r) + "\noptions: " + joined(options) +
                                                       "\n" + log};
  size_t size = 0;
  if (n.nvrtcGetPTXSize(prog, &size) != 0 || size == 0)
    throw sdk::Error{KILN_STATUS_INTERNAL, "NVRTC compiled " + entries + " but has no PTX"};
  std::string ptx(size, '\0');
  n.nvrtcGetPTX(prog, ptx.data());
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

std::string Compiler::compile_clang(const std::string& source, const std::string& entries, const std::string& arch,
                                    const std::string& extra_options, std::string& log) {
  std::string clang_arch = clang_arch_for(arch);
  if (clang_arch.empty() || (clang_arch != arch && min_ptx_version(*sm_number(arch)) == 0))
    throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, config_.clang + " cannot compile for " + arch +
                                                          " (LLVM 15 knows sm_20..sm_86; newer plain archs up to "
                                                          "sm_121 by relabelling); use compiler = \"nvrtc\""};
  std::vector<std::string> argv = clang_command(arch, extra_options);
  plugins::ProcessResult r = plugins::run_process(argv, source, clang_missing_hint(config_.clang).c_str());
  log = r.err;
  if (r.exit_code != 0 || r.out.find(".target") == std::string::npos) {
    std::string how = r.signal ? "was killed by signal " + std::to_string(r.signal)
                      : r.exit_code != 0 ? "exited with " + std::to_string(r.exit_code)
                                         : "wrote no PTX";
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compiling " + entries + " for " + arch + " failed: " + config_.clang +
                                                       " " + how + "\ncommand: " + joined(argv) + "\n" + r.err};
  }
  return clang_arch == arch ? std::move(r.out) : retarget_ptx(std::move(r.out), arch);
}

}  // namespace kiln::cuda
