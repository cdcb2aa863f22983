// sdk/conformance/src/level_load.cpp - level 0: the manifest, the library and the ABI handshake.
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "kit.hpp"
#include "kiln/sdk/elf64.hpp"

namespace kiln::conformance {

namespace {

// The plugin library, already loaded by the registry (RTLD_NOLOAD: never a second copy).
void* loaded_handle(const Kit& k) {
  void* h = dlopen(k.library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  require(h != nullptr, k.library + " is not loaded in this process: " + std::string(dlerror() ? dlerror() : "?"));
  return h;
}

kiln_plugin_entry_fn entry_of(const Kit& k) {
  auto fn = reinterpret_cast<kiln_plugin_entry_fn>(dlsym(loaded_handle(k), KILN_ENTRY_SYMBOL));
  require(fn != nullptr, k.library + " does not export " KILN_ENTRY_SYMBOL);
  return fn;
}

// The file a (possibly bare soname) library was loaded from.
std::string library_file(const Kit& k) {
  if (k.library.find('/') != std::string::npos) return k.library;
  link_map* map = nullptr;
  require(dlinfo(loaded_handle(k), RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name, "cannot find the file of " + k.library);
  return map->l_name;
}

off_t stdout_size(const Kit& k) {
  struct stat st {};
  if (k.stdout_fd < 0 || fstat(k.stdout_fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return st.st_size;
}

void manifest(Kit& k) {
  backend::ManifestInfo m = backend::read_manifest(k.manifest);
  require(m.ok(), m.error);
  require(!m.library.empty(), k.manifest + ": backend.library is empty");
}

void load(Kit& k) { require(k.load_problem.empty(), k.load_problem); }

// Exactly one defined, visible dynamic symbol: the entry point (and no STB_GNU_UNIQUE, which
// would pin the library and merge its statics with other copies).
void exports(Kit& k) {
  std::string path = library_file(k);
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "cannot read " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string image = bytes.str();
  sdk::Elf64 elf = sdk::Elf64::parse(image, "shared library");
  std::set<std::string> visible;
  std::string unique;
  for (const sdk::ElfSymbol& s : elf.symbols) {
    if (!s.dynamic || s.section == 0) continue;
    if (s.binding == 10) unique += (unique.empty() ? "" : ", ") + s.name;
    bool global = s.binding == 1 || s.binding == 2;
    if (global && (s.visibility == 0 || s.visibility == 3) && (s.type == 1 || s.type == 2)) visible.insert(s.name);
  }
  // the plugin's own names first: the standard library's inline functions usually follow in bulk
  std::vector<std::string> others;
  for (const std::string& name : visible)
    if (name != KILN_ENTRY_SYMBOL) others.push_back(name);
  std::stable_partition(others.begin(), others.end(), [](const std::string& n) { return n.rfind("_ZNSt", 0) != 0 && n.rfind("_ZNKSt", 0) != 0 && n.rfind("_ZSt", 0) != 0; });
  std::string extra;
  for (size_t i = 0; i < others.size() && i < 4; ++i) extra += (i ? ", " : "") + others[i];
  if (others.size() > 4) extra += " and " + std::to_string(others.size() - 4) + " more";
  require(visible.count(KILN_ENTRY_SYMBOL) == 1, path + " does not export " KILN_ENTRY_SYMBOL);
  std::string problems;
  if (!extra.empty()) problems += "it exports " + std::to_string(others.size()) + " symbols besides " KILN_ENTRY_SYMBOL ": " + extra;
  if (!unique.empty())
    problems += std::string(problems.empty() ? "" : "; ") + "it exports STB_GNU_UNIQUE symbols (they pin the library and "
                "merge its statics with other copies): " + unique.substr(0, 300);
  require(problems.empty(), path + ": " + problems +
                                " (hide them: -fvisibility=hidden and a version script, as kiln_add_backend_plugin does)");
}

// The handshake: another ABI major gets INCOMPATIBLE_ABI with the plugin's table filled in; a
// too-small argument struct is rejected without a crash; the host's own ABI works.
void entry_abi(Kit& k) {
  kiln_plugin_entry_fn entry = entry_of(k);
  kiln_entry_args other{sizeof(kiln_entry_args), KILN_ABI_MAJOR + 1, 0, backend::host_api(), nullptr};
  kiln_status s = entry(&other);
  require(s == KILN_STATUS_INCOMPATIBLE_ABI,
          "for host ABI " + std::to_string(KILN_ABI_MAJOR + 1) + ".0 the entry returned status " + std::to_string(s) +
              ", expected INCOMPATIBLE_ABI (17)");
  require(other.plugin != nullptr, "with INCOMPATIBLE_ABI the entry must still return its plugin table");
  kiln_entry_args tiny{4, KILN_ABI_MAJOR, KILN_ABI_MINOR, backend::host_api(), nullptr};
  require(entry(&tiny) != KILN_STATUS_OK, "the entry accepted kiln_entry_args with struct_size 4");
  kiln_entry_args args{sizeof(kiln_entry_args), KILN_ABI_MAJOR, KILN_ABI_MINOR, backend::host_api(), nullptr};
  require(entry(&args) == KILN_STATUS_OK && args.plugin, "the entry rejected this host's ABI");
  k.api = args.plugin;
}

void table(Kit& k) {
  require(k.api != nullptr, "no plugin table (the entry test did not pass)");
  const kiln_plugin_api* a = k.api;
  require(a->struct_size >= KILN_SIZE_UPTO(kiln_plugin_api, device_open),
          "kiln_plugin_api.struct_size " + std::to_string(a->struct_size) + " is smaller than ABI 0.1's");
  require(a->abi_major == KILN_ABI_MAJOR && a->abi_minor == KILN_ABI_MINOR, "the table reports another ABI");
  require(a->name && k.backend == a->name, "the plugin calls itself '" + std::string(a->name ? a->name : "") +
                                               "' but the manifest says backend.name = \"" + k.backend + "\"");
  require(a->version && *a->version, "the plugin has no version string");
  require(a->device_count && a->device_open, "device_count and device_open are required slots");
}

// The probe is cheap (no contexts, no device memory): well under the limit, with a one-line
// reason. The slot tested is the one the host calls: probe_with_options (with the backend's
// options) when the plugin has it, else probe.
void probe(Kit& k) {
  require(k.api != nullptr, "no plugin table");
  bool with_options = KILN_HAS(k.api, kiln_plugin_api, probe_with_options) && k.api->probe_with_options;
  if (!with_options && !k.api->probe) throw Skip{"the plugin has no probe slot"};
  const char* slot = with_options ? "probe_with_options" : "probe";
  std::optional<backend::BackendState> state = backend::backend_state(k.backend);
  std::string options = state ? state->options_toml : "";
  backend::StringSink sink;
  const std::string& reason = sink.str();
  int32_t score = -1;
  auto start = std::chrono::steady_clock::now();
  kiln_error* e = with_options ? k.api->probe_with_options(options.data(), options.size(), &score, sink.sink())
                               : k.api->probe(&score, sink.sink());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (e) throw TestFailure(std::string(slot) + " failed: " + backend::take_error_message(e));
  require(s < 10, std::string(slot) + " took " + std::to_string(s) + " s (limit 10 s)");
  require(score >= 0, std::string(slot) + " returned a negative score");
  require(reason.find('\n') == std::string::npos, "the probe reason is more than one line: " + reason);
  require(score == 0 || !reason.empty(), "probe gave no reason");
}

// Plugins log through the host; they never print (a stray line corrupts `kiln ... --json`).
void quiet(Kit& k) {
  off_t size = stdout_size(k);
  if (size < 0) throw Skip{"stdout is not a file this kit can measure (run through `kiln test` to check)"};
  require(size == 0, "the plugin wrote " + std::to_string(size) + " bytes to stdout while loading");
}

}  // namespace

// Discovery of the process-wide registry (KILN_BACKENDS is this manifest): load, probe,
// initialize, count devices. A backend that is merely unavailable here is usable for level 0;
// the levels that need devices skip with its reason. Every test depends on this, so it runs
// before the first one whatever the filter.
void setup(Kit& k) {
  std::optional<std::string> only = backend::registry_backends();
  if (!only || *only != k.manifest) {
    k.load_problem = "this process set up its backends before the kit ran (KILN_BACKENDS=" + only.value_or("") +
                     "), so it cannot test " + k.manifest + ": run the kit before any other kiln call";
    k.unusable = k.load_problem;
    return;
  }
  std::optional<backend::BackendState> r = backend::backend_state(k.backend);
  if (!r) {
    k.load_problem = "the registry did not find backend " + k.backend + " in " + k.manifest;
    k.unusable = k.load_problem;
    return;
  }
  k.library = r->library_path;
  if (r->ok()) {
    k.usable = r->device_count > 0;
    k.devices = r->device_count;
    k.api = r->api;
    k.unusable = "backend " + k.backend + " has no devices";
    return;
  }
  if (!r->unavailable()) {
    k.load_problem = r->status + ": " + r->reason;
    k.unusable = "backend " + k.backend + " did not load";
    return;
  }
  k.unusable = "backend " + k.backend + " is unavailable here: " + r->reason;
  // unavailable: the library loaded, so its table is there for the level-0 tests
  if (void* h = dlopen(k.library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))
    if (auto entry = reinterpret_cast<kiln_plugin_entry_fn>(dlsym(h, KILN_ENTRY_SYMBOL))) {
      kiln_entry_args args{sizeof(kiln_entry_args), KILN_ABI_MAJOR, KILN_ABI_MINOR, backend::host_api(), nullptr};
      if (entry(&args) == KILN_STATUS_OK) k.api = args.plugin;
    }
}

void add_load_tests(std::vector<TestCase>& t) {
  t.push_back({0, "L0.manifest", manifest});
  t.push_back({0, "L0.load", load});
  t.push_back({0, "L0.exports", exports});
  t.push_back({0, "L0.entry_abi", entry_abi});
  t.push_back({0, "L0.table", table});
  t.push_back({0, "L0.probe", probe});
  t.push_back({0, "L0.quiet", quiet});
}

}  // namespace kiln::conformance
