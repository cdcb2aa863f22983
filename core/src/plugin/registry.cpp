// plugin/registry.cpp - discovery, configuration, device naming and selection.
#include "plugin/registry.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "plugin/isolate.hpp"
#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln {

Registry& Registry::get() {
  static Registry* registry = new Registry(Settings::from_environment());  // never destroyed, see header
  return *registry;
}

Registry::Registry(Settings settings) : settings_(std::move(settings)) {}
Registry::~Registry() = default;

const std::vector<BackendRecord>& Registry::backends() {
  load_all();
  return backends_;
}

bool Registry::set_option(std::string_view backend, OptionEntry option) {
  ensure_discovered();
  std::lock_guard<std::mutex> lock(load_mu_);
  BackendRecord* r = find_backend(backend);
  if (!r) return false;
  if (!r->pending)
    fail(ErrorCode::failed_precondition, "backend ", r->name, " is ", r->api ? "loaded" : "tried", " already; option ",
         option.key, " (", option.origin, ") would not reach it");
  r->options = merge_options(std::move(r->options), {std::move(option)});
  r->checked = false;  // a child may have probed it with the old options
  return true;
}

const std::vector<BackendRecord>& Registry::known_backends() {
  ensure_discovered();
  return backends_;
}

const BackendRecord* Registry::backend(std::string_view name) {
  ensure_discovered();
  BackendRecord* r = find_backend(name);
  if (r) load(*r);
  return r;
}

BackendRecord* Registry::find_backend(std::string_view name) {
  for (BackendRecord& r : backends_)
    if (r.name == name && !r.is_shadowed()) return &r;
  return nullptr;
}

const UserConfig& Registry::config() {
  ensure_discovered();
  return config_;
}

const ManifestSearch& Registry::search() {
  ensure_discovered();
  return search_;
}

const std::vector<Diagnostic>& Registry::diagnostics() {
  ensure_discovered();
  return diagnostics_;
}

void Registry::discover() {
  ConfigLocation where = user_config_location(settings_);
  config_ = read_user_config(where.path, where.origin, where.explicit_path);
  diagnostics_ = config_.diagnostics;
  search_ = find_manifests(settings_);
  diagnostics_.insert(diagnostics_.end(), search_.diagnostics.begin(), search_.diagnostics.end());

  for (const ManifestFile& file : search_.files) {
    Manifest m = read_manifest(file.path);
    BackendRecord r;
    r.name = m.name;
    r.manifest = m.path;
    r.manifest_origin = file.origin;
    r.library = m.library;
    r.abi = m.abi;
    r.version = m.version;
    r.description = m.description;
    r.priority = m.priority;
    r.enabled = m.enabled;
    r.enabled_origin = m.path;
    r.experimental = m.experimental;
    r.options = m.options;
    r.diagnostics = m.diagnostics;
    // The first manifest of a name wins, even a broken one: a fix belongs in that file, and
    // silently falling back to another one would hide the problem.
    auto winner = std::find_if(backends_.begin(), backends_.end(), [&](const BackendRecord& b) {
      return b.name == r.name && b.status != BackendStatus::shadowed;
    });
    if (winner != backends_.end()) {
      r.status = BackendStatus::shadowed;
      r.shadowed_by = winner->manifest;
      r.reason = "shadowed by " + winner->manifest;
    } else if (!m.ok()) {
      r.status = BackendStatus::config_error;
      r.reason = m.first_error();
    } else {
      if (const UserConfig::Backend* b = config_.backend(r.name)) {
        if (b->enabled) {
          r.enabled = *b->enabled;
          r.enabled_origin = b->enabled_origin;
        }
        r.options = merge_options(std::move(r.options), b->options);
      }
      if (!r.enabled) {
        r.status = BackendStatus::disabled;
        r.reason = "disabled by enabled = false in " + r.enabled_origin;
      } else {
        // Loaded on first use (load()): a program that names cpu:0 never dlopens the others.
        r.status = BackendStatus::not_loaded;
        r.library_path = resolve_library(r.manifest, r.library);
        r.pending = settings_.load;
      }
    }
    backends_.push_back(std::move(r));
  }

  for (const UserConfig::Alias& a : config_.aliases)
    if (find_backend(a.name))
      diagnostics_.push_back({config_.path, a.line, a.column, Diagnostic::Severity::warning,
                              "devices.aliases." + a.name + " = \"" + a.target + "\" has the name of the " + a.name +
                                  " backend: '" + a.name + "' keeps meaning the backend and the alias is ignored; rename it"});

  // Configuration for backends that no manifest provides is almost always a typo or a stale entry.
  for (const UserConfig::Backend& b : config_.backends) {
    if (find_backend(b.name)) continue;
    std::string known;
    for (const BackendRecord& r : backends_)
      if (r.status != BackendStatus::shadowed) known += (known.empty() ? "" : ", ") + r.name;
    diagnostics_.push_back({config_.path, b.line, b.column, Diagnostic::Severity::warning,
                            "backends." + b.name + ": no backend named '" + b.name + "' was found (known backends: " +
                                (known.empty() ? "none" : known) + ")"});
  }

  if (report_debug() >= 0)
    for (const Diagnostic& d : diagnostics_)
      if (d.is_error() || report_debug() >= 1) log_line("kiln: " + d.str());
  if (report_debug() >= 1)
    for (const BackendRecord& r : backends_)
      if (!r.pending) report(r);
}

// -1: report nothing (the CLI prints diagnostics itself); else the KILN_DEBUG level.
int64_t Registry::report_debug() const {
  if (!settings_.report_problems) return -1;
  try {
    return debug_level();
  } catch (...) {
    return 0;
  }
}

void Registry::report(const BackendRecord& r) const {
  for (const Diagnostic& d : r.diagnostics) log_line("kiln: " + d.str());
  if (!r.ok()) log_line("kiln: backend " + r.name + ": " + status_name(r.status) + ": " + r.reason);
}

void Registry::check_in_children(const std::vector<BackendRecord*>& records) {
  if (settings_.isolate_timeout_s <= 0) return;
  std::lock_guard<std::mutex> lock(load_mu_);
  for (BackendRecord* r : records) check_in_child(*r);
}

// Everything the CLI will do with the plugin in process, first in a child: load, probe,
// initialize, count, open every device (props and target are read at open). A backend that does
// not survive it is `crashed` and no longer pending. Called with load_mu_ held.
void Registry::check_in_child(BackendRecord& r) {
  if (!r.pending || r.checked) return;
  r.checked = true;
  std::string options = options_to_toml(r.options);
  ChildOutcome child = run_in_child(
      [&] {
        LoadResult l = load_plugin(r.name, r.manifest, r.library, options);
        for (uint32_t i = 0; l.status == BackendStatus::ok && i < l.device_count; ++i) {
          try {
            Device::open(r.name, l.api, i);
          } catch (...) {  // a clean error: the in-process open reports it
          }
        }
      },
      settings_.isolate_timeout_s);
  if (child.ok) return;
  r.pending = false;
  r.status = BackendStatus::crashed;
  r.reason = child.failure + " while probing (loading, probing and opening its devices in a child process); "
             "`kiln test " + r.manifest + "` shows where, disable it with [backends." + r.name +
             "] enabled = false in the user config";
  if (report_debug() >= 1) report(r);
}

void Registry::load(BackendRecord& r) {
  std::lock_guard<std::mutex> lock(load_mu_);
  if (settings_.isolate_timeout_s > 0) check_in_child(r);
  if (!r.pending) return;
  r.pending = false;
  std::string options = options_to_toml(r.options);
  LoadResult l = load_plugin(r.name, r.manifest, r.library, options);
  r.status = l.status;
  r.reason = l.reason;
  r.library_path = l.library_path;
  r.plugin_abi = l.plugin_abi;
  if (!l.plugin_version.empty()) r.version = l.plugin_version;
  r.probe_score = l.probe_score;
  r.probe_reason = l.probe_reason;
  r.device_count = l.device_count;
  r.api = l.api;
  // A plugin names a rejected option ("option 'binary' must be ..."); say where it was set.
  if (r.status == BackendStatus::config_error)
    for (const OptionEntry& o : r.options)
      if (r.reason.find("option '" + o.key + "'") != std::string::npos) {
        r.reason += " (set at " + o.origin + ")";
        break;
      }
  if (!r.abi.empty() && !r.plugin_abi.empty() && r.abi != r.plugin_abi)
    r.diagnostics.push_back({r.manifest, 0, 0, Diagnostic::Severity::warning,
                             "the manifest says abi = \"" + r.abi + "\" but the library reports ABI " + r.plugin_abi +
                                 "; regenerate the manifest"});
  if (report_debug() >= 1) report(r);
}

void Registry::load_all() {
  ensure_discovered();
  std::vector<BackendRecord*> all;
  for (BackendRecord& r : backends_) all.push_back(&r);
  check_in_children(all);
  for (BackendRecord& r : backends_) load(r);
}

std::vector<std::string> Registry::devices() {
  load_all();
  std::vector<std::string> out;
  for (const BackendRecord& r : backends_)
    if (r.ok())
      for (uint32_t i = 0; i < r.device_count; ++i) out.push_back(r.name + ":" + std::to_string(i));
  return out;
}

// For error messages: what is known without loading more (a typo in a device name must not be
// the reason a broken plugin gets loaded).
std::string Registry::available_list() {
  std::lock_guard<std::mutex> lock(load_mu_);
  std::string devs, unusable, unloaded;
  for (const BackendRecord& r : backends_) {
    if (r.ok())
      for (uint32_t i = 0; i < r.device_count; ++i) devs += (devs.empty() ? "" : ", ") + r.name + ":" + std::to_string(i);
    else if (r.pending)
      unloaded += (unloaded.empty() ? "" : ", ") + r.name;
    else if (r.status != BackendStatus::shadowed)
      unusable += (unusable.empty() ? "" : ", ") + r.name + " (" + status_name(r.status) + ")";
  }
  std::string s;
  if (!devs.empty() || unloaded.empty()) s = "available devices: " + (devs.empty() ? std::string("none") : devs);
  if (!unloaded.empty())
    s += (s.empty() ? "" : "; ") + std::string("backends not loaded yet: ") + unloaded + " (`kiln devices` lists their devices)";
  if (!unusable.empty()) s += "; not usable: " + unusable + " (run `kiln list` for the reasons)";
  if (!config_.aliases.empty()) {
    s += "; aliases:";
    for (const UserConfig::Alias& a : config_.aliases) s += " " + a.name + " -> " + a.target;
  }
  return s;
}

std::string Registry::resolve(const std::string& device) {
  resolves_.fetch_add(1, std::memory_order_relaxed);
  ensure_discovered();
  if (device.empty()) return default_device();
  // Aliases chain (loops are config errors, and an invalid config has no aliases); a backend's
  // own name always means the backend (an alias of that name is warned about in discover()).
  std::string spec = device;
  for (size_t hops = 0; hops < config_.aliases.size() && !find_backend(spec); ++hops) {
    const UserConfig::Alias* a = config_.alias(spec);
    if (!a) break;
    spec = a->target;
  }
  std::string name = spec, index_text = "0";
  if (size_t colon = spec.find(':'); colon != std::string::npos) {
    name = spec.substr(0, colon);
    index_text = spec.substr(colon + 1);
  }
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  bool digits = !index_text.empty() && index_text.size() < 10 &&
                std::all_of(index_text.begin(), index_text.end(), [](unsigned char c) { return std::isdigit(c); });
  std::string shown = spec == device ? "'" + device + "'" : "'" + device + "' (alias of '" + spec + "')";
  if (!digits || name.empty())
    fail(ErrorCode::invalid_argument, "bad device ", shown, ": expected backend[:index] (e.g. cpu:0) or an alias; ",
         available_list());
  uint32_t index = static_cast<uint32_t>(std::stoul(index_text));
  const BackendRecord* r = backend(name);
  if (!r) fail(ErrorCode::not_found, "unknown device ", shown, ": no backend named '", name, "'; ", available_list());
  if (!r->ok())
    fail(ErrorCode::unavailable, "device ", shown, " is not usable: backend ", name, " is ", status_name(r->status),
         r->reason.empty() ? "" : ": " + r->reason, "; ", available_list());
  if (index >= r->device_count)
    fail(ErrorCode::not_found, "unknown device ", shown, ": backend ", name, " has ", r->device_count,
         r->device_count == 1 ? " device" : " devices", "; ", available_list());
  return name + ":" + std::to_string(index);
}

DeviceChoice Registry::default_choice() {
  ensure_discovered();
  try {
    if (!settings_.device.empty()) return {resolve(settings_.device), "KILN_DEVICE"};
    if (!config_.default_device.empty()) return {resolve(config_.default_device), "config " + config_.default_device_origin};
  } catch (const Error& e) {
    return {"", e.what()};
  }
  return best_device();
}

// docs/devices.md: GPU/accelerator devices first (by backend priority, ties in discovery
// order), then the native cpu backend, then CPU-type devices of other backends (PoCL's OpenCL
// device), which only emulate a device on the same cores with a slower compiler. Backends are
// loaded in that order and only until the answer is known: the cpu backend is loaded only when no
// other backend has a GPU, and nothing after the first GPU found.
DeviceChoice Registry::best_device() {
  std::vector<BackendRecord*> others;
  for (BackendRecord& r : backends_)
    if (!r.is_shadowed() && r.name != kNativeCpu) others.push_back(&r);
  std::stable_sort(others.begin(), others.end(),
                   [](const BackendRecord* a, const BackendRecord* b) { return a->priority > b->priority; });
  std::vector<BackendRecord*> candidates = others;
  if (BackendRecord* cpu = find_backend(kNativeCpu)) candidates.push_back(cpu);
  check_in_children(candidates);
  std::string cpu_type;  // the first CPU-type device of another backend
  for (BackendRecord* r : others) {
    load(*r);
    for (uint32_t i = 0; r->ok() && i < r->device_count; ++i) {
      std::string id = r->name + ":" + std::to_string(i);
      uint32_t kind = KILN_DEVICE_KIND_CPU;
      try {
        kind = open(id)->props().kind;
      } catch (const Error&) {
        continue;  // a device that does not open is no default
      }
      if (kind != KILN_DEVICE_KIND_CPU)
        return {id, std::string("the first ") + (kind == KILN_DEVICE_KIND_GPU ? "GPU" : "accelerator") +
                        " device; GPU and accelerator devices come first, by backend priority, and " + r->name +
                        " has priority " + std::to_string(r->priority)};
      if (cpu_type.empty()) cpu_type = id;
    }
  }
  if (const BackendRecord* cpu = backend(kNativeCpu); cpu && cpu->ok())
    return {std::string(kNativeCpu) + ":0",
            "no GPU or accelerator device; the native cpu backend comes before CPU-type devices of other backends"};
  if (!cpu_type.empty())
    return {cpu_type, "a CPU-type device: no GPU or accelerator device, and the native cpu backend is not usable"};
  return {"", "no usable device"};
}

std::string Registry::default_device() {
  ensure_discovered();
  if (!settings_.device.empty()) {
    try {
      return resolve(settings_.device);
    } catch (const Error& e) {
      throw Error(e.code(), std::string("KILN_DEVICE=") + settings_.device + ": " + e.what());
    }
  }
  if (!config_.default_device.empty()) {
    try {
      return resolve(config_.default_device);
    } catch (const Error& e) {
      throw Error(e.code(), "devices.default = \"" + config_.default_device + "\" (" + config_.default_device_origin +
                                "): " + e.what());
    }
  }
  DeviceChoice c = default_choice();
  if (c.device.empty()) fail(ErrorCode::not_found, "no usable device; ", available_list());
  // A configuration error must not silently move a program to another device: the backends the
  // choice passed over for one are named on stderr, once per process (the CLI reports them itself).
  std::string broken;
  for (const BackendRecord& r : backends_)
    if (r.status == BackendStatus::config_error && c.device.rfind(r.name + ":", 0) != 0)
      broken += cat(broken.empty() ? "" : "; ", "backend ", r.name, " has a configuration error: ", r.reason);
  static std::once_flag warned;
  if (!broken.empty() && report_debug() >= 0)
    std::call_once(warned, [&] {
      log_line(cat("kiln: ", broken, ". The default device is ", c.device, " without it; fix the configuration (kiln info NAME "
                   "says more) or choose a device with KILN_DEVICE"));
    });
  return c.device;
}

std::shared_ptr<Device> Registry::open(const std::string& device) {
  std::string name = resolve(device);
  std::lock_guard<std::mutex> lock(open_mu_);
  for (auto& [n, d] : open_devices_)
    if (n == name) return d;
  size_t colon = name.find(':');
  const BackendRecord* r = backend(name.substr(0, colon));
  std::shared_ptr<Device> d =
      Device::open(r->name, r->api, static_cast<uint32_t>(std::stoul(name.substr(colon + 1))));
  open_devices_.emplace_back(name, d);
  return d;
}

}  // namespace kiln
