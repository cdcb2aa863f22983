// plugin/loader.cpp - Boost.DLL loading and the entry/probe/initialize handshake.
#include "plugin/loader.hpp"

#include <elf.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "plugin/diagnostic.hpp"
#include "plugin/host.hpp"

namespace fs = std::filesystem;

namespace kiln {

const char* status_name(BackendStatus status) {
  switch (status) {
    case BackendStatus::ok: return "ok";
    case BackendStatus::unavailable: return "unavailable";
    case BackendStatus::abi_mismatch: return "abi-mismatch";
    case BackendStatus::load_error: return "load-error";
    case BackendStatus::config_error: return "config-error";
    case BackendStatus::disabled: return "disabled";
    case BackendStatus::shadowed: return "shadowed";
    case BackendStatus::not_loaded: return "not-loaded";
    case BackendStatus::crashed: return "crashed";
  }
  return "?";
}

std::string resolve_library(const std::string& manifest_path, const std::string& library) {
  if (library.find('/') == std::string::npos) return library;  // a soname: the system search
  fs::path p(library);
  if (p.is_relative()) p = fs::path(manifest_path).parent_path() / p;
  std::error_code ec;
  return fs::absolute(p, ec).lexically_normal().string();
}

namespace {

// Boost.DLL's message is "...load() failed (dlerror system message: <text>): <errno text>"; the
// errno part is misleading ("Bad file descriptor"), the dlerror text is what the user needs.
std::string dlerror_text(const std::string& what) {
  const std::string marker = "dlerror system message: ";
  size_t b = what.find(marker);
  if (b == std::string::npos) return what;
  b += marker.size();
  size_t e = what.rfind("): ");
  return what.substr(b, e == std::string::npos || e < b ? std::string::npos : e - b);
}

// glibc reports a library for another machine as "No such file or directory" (it keeps looking for
// a matching one); read the ELF header to say what the file really is.
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr const char* kHostName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr const char* kHostName = "aarch64";
#else
constexpr uint16_t kHostMachine = EM_NONE;
constexpr const char* kHostName = "this machine";
#endif

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "32-bit ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390x";
    case EM_AMDGPU: return "AMDGPU";
  }
  return "machine " + std::to_string(machine);
}

// "" when the file is not an ELF or is one this process can load; else why not.
std::string elf_mismatch(const std::string& path) {
  unsigned char h[20] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return "";
  size_t n = std::fread(h, 1, sizeof h, f);
  std::fclose(f);
  if (n < sizeof h || std::memcmp(h, ELFMAG, SELFMAG) != 0) return "";
  bool little = h[EI_DATA] == ELFDATA2LSB;
  uint16_t machine = little ? static_cast<uint16_t>(h[18] | h[19] << 8) : static_cast<uint16_t>(h[18] << 8 | h[19]);
  int bits = h[EI_CLASS] == ELFCLASS64 ? 64 : 32;
  bool host_64 = sizeof(void*) == 8;
  if (machine == kHostMachine && (bits == 64) == host_64) return "";
  return "wrong architecture: " + path + " is a " + std::to_string(bits) + "-bit ELF for " + machine_name(machine) +
         ", this kiln is " + kHostName + "; build the plugin for " + kHostName;
}

std::string abi_text(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

// Keeps every library loaded for the life of the process (never destroyed: plugin threads and
// exit-time destructors must not race with an unload).
struct LibraryCache {
  std::mutex mu;
  std::map<std::string, LoadResult> results;
  std::vector<boost::dll::shared_library*> libraries;
};
LibraryCache& cache() {
  static LibraryCache* c = new LibraryCache();
  return *c;
}

LoadResult load_uncached(const std::string& backend, const std::string& manifest_path, const std::string& path, const std::string& options_toml, LibraryCache& c) {
  LoadResult r;
  r.library_path = path;
  bool soname = path.find('/') == std::string::npos;
  if (std::string problem = soname ? "" : file_problem(path); !problem.empty()) {
    r.reason = "library " + path + " " + problem + "; build or install the " + backend +
               " backend, or fix backend.library in " + manifest_path + " (relative paths are relative to it)";
    return r;
  }
  namespace mode = boost::dll::load_mode;
  auto flags = mode::rtld_now | mode::rtld_local;
  if (soname) flags = flags | mode::search_system_folders;  // else Boost.DLL turns "libx.so" into "./libx.so"
  boost::dll::shared_library* lib = nullptr;
  try {
    lib = new boost::dll::shared_library(boost::dll::fs::path(path), flags);
  } catch (const std::exception& e) {
    std::string arch = soname ? "" : elf_mismatch(path);
    r.reason = arch.empty() ? "cannot load " + path + ": " + dlerror_text(e.what()) : arch;
    return r;
  }
  c.libraries.push_back(lib);
  if (!lib->has(KILN_ENTRY_SYMBOL)) {
    r.reason = path + " does not export " KILN_ENTRY_SYMBOL
               ": it is not a kiln backend plugin (plugins define the entry with KILN_PLUGIN(Type) from "
               "kiln/sdk.hpp, or export it from C)";
    return r;
  }
  kiln_plugin_entry_fn entry = &lib->get<kiln_status(kiln_entry_args*)>(KILN_ENTRY_SYMBOL);
  kiln_entry_args args{sizeof(kiln_entry_args), KILN_ABI_MAJOR, KILN_ABI_MINOR, host_api(), nullptr};
  PluginScope scope(backend.c_str());
  kiln_status status = plugin_call(KILN_ENTRY_SYMBOL, [&] { return entry(&args); });
  const kiln_plugin_api* api = args.plugin;
  if (!api || api->struct_size < KILN_SIZE_UPTO(kiln_plugin_api, abi_minor)) {
    r.reason = KILN_ENTRY_SYMBOL " returned status " + std::to_string(status) + " (" +
               error_code_name(error_code_from_status(status)) + ") without a usable plugin table";
    return r;
  }
  r.plugin_abi = abi_text(api->abi_major, api->abi_minor);
  // While the major is 0 every minor may break the ABI, so only an exact match is accepted.
  bool compatible = api->abi_major == KILN_ABI_MAJOR && (KILN_ABI_MAJOR != 0 || api->abi_minor == KILN_ABI_MINOR);
  if (!compatible) {
    r.status = BackendStatus::abi_mismatch;
    r.reason = "plugin built for ABI " + r.plugin_abi + "; this core supports " + abi_text(KILN_ABI_MAJOR, KILN_ABI_MINOR) +
               ". Rebuild the plugin against this kiln SDK";
    return r;
  }
  if (status != KILN_STATUS_OK) {
    r.reason = KILN_ENTRY_SYMBOL " failed with status " + std::to_string(status) + " (" +
               error_code_name(error_code_from_status(status)) + ")";
    return r;
  }
  if (api->struct_size < KILN_SIZE_UPTO(kiln_plugin_api, device_open)) {
    r.reason = "the plugin table is too small for ABI " + r.plugin_abi + " (struct_size " +
               std::to_string(api->struct_size) + ")";
    return r;
  }
  r.plugin_name = bounded_copy(api->name, 256);
  r.plugin_version = bounded_copy(api->version, 256);
  if (r.plugin_name != backend) {
    r.reason = path + " is the plugin '" + r.plugin_name + "', but the manifest " + manifest_path +
               " declares backend.name = \"" + backend + "\"";
    return r;
  }
  if (!api->device_count || !api->device_open) {
    r.reason = "the plugin table has no device_count/device_open slot";
    return r;
  }
  // A slot that read the options and returns INVALID_ARGUMENT rejected them: a config error.
  auto failed = [&](kiln_error* e, const char* step, bool read_options) {
    bool bad_options = read_options && e->code == KILN_STATUS_INVALID_ARGUMENT;
    r.status = bad_options ? BackendStatus::config_error : BackendStatus::unavailable;
    r.reason = (bad_options ? std::string("the plugin rejected its options: ") : step + std::string(" failed: ")) +
               take_error_message(e);
  };
  // probe_with_options (when the plugin has it) sees the options initialize will get, so an
  // option can make a backend usable here (offline targets).
  bool with_options = KILN_HAS(api, kiln_plugin_api, probe_with_options) && api->probe_with_options;
  if (with_options || api->probe) {
    StringSink reason;
    int32_t score = 0;
    kiln_error* e = with_options ? plugin_call("probe_with_options",
                                               [&] {
                                                 return api->probe_with_options(options_toml.data(), options_toml.size(),
                                                                                &score, reason.sink());
                                               })
                                 : plugin_call("probe", [&] { return api->probe(&score, reason.sink()); });
    if (e) {
      failed(e, "probe", with_options);
      return r;
    }
    r.probe_score = score;
    r.probe_reason = bounded_copy(reason.str().c_str(), 4096);
    if (score <= 0) {
      r.status = BackendStatus::unavailable;
      r.reason = r.probe_reason.empty() ? "the plugin's probe reports it cannot run here" : r.probe_reason;
      return r;
    }
  } else {
    r.probe_score = 1;
  }
  if (api->initialize) {
    if (kiln_error* e =
            plugin_call("initialize", [&] { return api->initialize(options_toml.data(), options_toml.size()); })) {
      failed(e, "initialize", true);
      return r;
    }
  }
  uint32_t count = 0;
  if (kiln_error* e = plugin_call("device_count", [&] { return api->device_count(&count); })) {
    r.status = BackendStatus::unavailable;
    r.reason = "device_count failed: " + take_error_message(e);
    return r;
  }
  if (count > kMaxDevices) {
    r.status = BackendStatus::load_error;
    r.reason = "device_count reported " + std::to_string(count) + " devices; more than " + std::to_string(kMaxDevices) +
               " is taken for a bug in the plugin (fix its device_count)";
    return r;
  }
  r.device_count = count;
  if (count == 0) {
    r.status = BackendStatus::unavailable;
    r.reason = "no devices" + (r.probe_reason.empty() ? std::string() : " (" + r.probe_reason + ")");
    return r;
  }
  r.status = BackendStatus::ok;
  r.api = api;
  return r;
}

}  // namespace

LoadResult load_plugin(const std::string& backend, const std::string& manifest_path, const std::string& library,
                       const std::string& options_toml) {
  std::string path = resolve_library(manifest_path, library);
  std::error_code ec;
  std::string key = path.find('/') == std::string::npos ? path : fs::weakly_canonical(path, ec).string();
  LibraryCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);  // plugins are loaded and initialized from one thread at a time
  auto it = c.results.find(key);
  if (it == c.results.end()) {
    LoadResult r;
    try {
      r = load_uncached(backend, manifest_path, path, options_toml, c);
    } catch (const std::exception& e) {  // host-side allocation, or an exception escaping a plugin slot
      r.status = BackendStatus::load_error;
      r.reason = std::string("loading failed: ") + e.what();
    }
    it = c.results.emplace(key, std::move(r)).first;
  }
  LoadResult r = it->second;
  r.library_path = path;
  if (!r.plugin_name.empty() && r.plugin_name != backend && r.status == BackendStatus::ok) {
    r.status = BackendStatus::load_error;
    r.api = nullptr;
    r.reason = path + " is the plugin '" + r.plugin_name + "', but the manifest " + manifest_path +
               " declares backend.name = \"" + backend + "\"";
  }
  return r;
}

}  // namespace kiln
