// plugins/opencl/frontend.cpp - running clang for OpenCL C bitcode.
#include "frontend.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "../common/process.hpp"

namespace kiln::opencl {

namespace {

// OpenCL 3.0 queries (the plugin's headers target 1.2): arrays of cl_name_version.
constexpr cl_device_info kOpenclCAllVersions = 0x1066;  // CL_DEVICE_OPENCL_C_ALL_VERSIONS
constexpr cl_device_info kOpenclCFeatures = 0x106F;     // CL_DEVICE_OPENCL_C_FEATURES
struct NameVersion {
  cl_uint version;  // major << 22 | minor << 12 | patch
  char name[64];
};

// The array answer of a cl_name_version query; empty where the driver does not know it (< 3.0).
std::vector<NameVersion> name_versions(cl_device_id device, cl_device_info what) {
  size_t bytes = 0;
  if (cl().clGetDeviceInfo(device, what, 0, nullptr, &bytes) != CL_SUCCESS || bytes % sizeof(NameVersion)) return {};
  std::vector<NameVersion> out(bytes / sizeof(NameVersion));
  if (cl().clGetDeviceInfo(device, what, bytes, out.data(), nullptr) != CL_SUCCESS) return {};
  return out;
}

// "-cl-std=CL3.0": the newest OpenCL C the device compiles (PoCL's front end builds with it).
std::string newest_opencl_c(cl_device_id device) {
  cl_uint best = 0;
  for (const NameVersion& v : name_versions(device, kOpenclCAllVersions)) best = std::max(best, v.version);
  if (best) return "-cl-std=CL" + std::to_string(best >> 22) + "." + std::to_string((best >> 12) & 0x3ff);
  std::string version = device_string(device, CL_DEVICE_OPENCL_C_VERSION);  // "OpenCL C 1.2 ..."
  size_t at = version.find_first_of("0123456789");
  return at == std::string::npos ? "" : "-cl-std=CL" + version.substr(at, version.find(' ', at) - at);
}

// "-cl-ext=-all,+ext,...": exactly the device's extensions and OpenCL C features, as PoCL's front
// end declares them (clang's own defaults for the target would differ).
std::string extension_flag(cl_device_id device) {
  std::string flag = "-cl-ext=-all";
  std::istringstream words(device_string(device, CL_DEVICE_EXTENSIONS));
  for (std::string w; words >> w;) flag += ",+" + w;
  for (const NameVersion& f : name_versions(device, kOpenclCFeatures))
    flag += ",+" + std::string(f.name, strnlen(f.name, sizeof f.name));
  return flag;
}

// How to get `clang`, for messages.
std::string install_hint() {
  return "install it (Debian/Ubuntu: apt-get install clang-15) or name another with [backends.opencl.options] clang = "
         "\"/path/to/clang\" in ~/.config/kiln/config.toml";
}

}  // namespace

std::optional<LlvmTarget> pocl_llvm_target(std::string_view version) {
  // "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-haswell": <device driver>-<triple>-<cpu>,
  // the triple being LLVM's four-part host triple and the CPU possibly dashed (skylake-avx512)
  constexpr std::string_view kMark = " PoCL HSTR: ";
  size_t at = version.find(kMark);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view hash = version.substr(at + kMark.size());
  hash = hash.substr(0, hash.find(' '));
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t dash = hash.find('-', start);
    parts.push_back(hash.substr(start, dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  if (parts.size() < 6) return std::nullopt;
  LlvmTarget t;
  for (size_t i = 1; i < 5; ++i) t.triple += (i > 1 ? "-" : "") + std::string(parts[i]);
  for (size_t i = 5; i < parts.size(); ++i) t.cpu += (i > 5 ? "-" : "") + std::string(parts[i]);
  for (std::string_view p : parts)
    if (p.empty()) return std::nullopt;
  return t;
}

ClangFrontend::ClangFrontend(std::string clang, LlvmTarget target, NameSet renamed, cl_device_id device)
    : clang_(std::move(clang)), target_(std::move(target)), renamed_(std::move(renamed)),
      cl_std_(newest_opencl_c(device)), extensions_(extension_flag(device)) {}

std::string ClangFrontend::compile(std::string_view source, std::string_view options, std::string& log) const {
  std::vector<std::string> argv = {clang_, "-x", "cl", "-target", target_.triple,
                                   // the driver would pick its own generic CPU; the last -target-cpu wins
                                   "-Xclang", "-target-cpu", "-Xclang", target_.cpu,
                                   "-Xclang", "-cl-kernel-arg-info", "-Xclang", extensions_,
                                   "-fno-builtin", "-mstackrealign", "-fno-unroll-loops"};
  if (!cl_std_.empty()) argv.push_back(cl_std_);
  std::istringstream words{std::string(options)};  // after ours: the user's -cl-std wins
  for (std::string w; words >> w;) argv.push_back(w);
  for (const char* a : {"-c", "-emit-llvm", "-o", "-", "-"}) argv.emplace_back(a);
  std::string hint = "The opencl backend compiles OpenCL C for PoCL with " + clang_ + ": " + install_hint() +
                     ", or let the driver compile the source with frontend = \"driver\"";
  plugins::ProcessResult r = plugins::run_process(argv, source, hint.c_str());
  log = r.err;
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
  if (r.exit_code == 0 && !r.out.empty()) return rename_builtins(r.out, renamed_);
  std::string what = r.signal ? clang_ + " was killed by signal " + std::to_string(r.signal)
                              : clang_ + " exited with status " + std::to_string(r.exit_code);
  throw sdk::Error{r.exit_code > 0 ? KILN_STATUS_INVALID_ARGUMENT : KILN_STATUS_INTERNAL,
                   what + "\nbuild log:\n" + (log.empty() ? "(empty)" : log)};
}

namespace {

// Whether `program` names an executable file: a path, or a name found in PATH.
bool program_exists(const std::string& program) {
  if (program.empty()) return false;
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t colon = std::min(dirs.find(':', start), dirs.size());
    std::string dir(dirs.substr(start, colon - start));
    if (access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0) return true;
    start = colon + 1;
  }
  return false;
}

}  // namespace

std::optional<ClangFrontend> clang_frontend(const OpenclConfig& config, cl_device_id device, std::string& why_not) {
  std::string version = device_string(device, CL_DEVICE_VERSION);
  std::optional<LlvmTarget> target = pocl_llvm_target(version);
  if (!(device_value<cl_device_type>(device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU)) target.reset();
  if (!target) {
    why_not = "it does not build LLVM bitcode (only PoCL's CPU devices do; this one is " +
              device_string(device, CL_DEVICE_NAME) + ", " + version + ")";
    return std::nullopt;
  }
  if (!program_exists(config.clang)) {
    why_not = "'" + config.clang + "' is not found (" + install_hint() + ")";
    return std::nullopt;
  }
  std::string where;
  NameSet renamed = pocl_renamed_builtins(where);
  if (renamed.empty()) {
    why_not = "PoCL's list of renamed built-ins was not found (looked for " + where +
              "; it comes with PoCL's common files, Debian: libpocl2-common)";
    return std::nullopt;
  }
  return ClangFrontend(config.clang, std::move(*target), std::move(renamed), device);
}

}  // namespace kiln::opencl
