// tools/kiln/cmd_list.cpp - `kiln list`: every backend manifest found, its status, its devices.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"

namespace kiln::cli {
namespace {

struct DeviceLine {
  std::string id;
  std::shared_ptr<Device> device;  // null when opening failed
  std::string error;
};

std::vector<DeviceLine> open_devices(Registry& registry, const BackendRecord& r) {
  std::vector<DeviceLine> out;
  if (!r.ok()) return out;
  for (uint32_t i = 0; i < r.device_count; ++i) {
    DeviceLine line{r.name + ":" + std::to_string(i), nullptr, ""};
    try {
      line.device = registry.open(line.id);
    } catch (const std::exception& e) {
      line.error = e.what();
    }
    out.push_back(std::move(line));
  }
  return out;
}

std::string options_text(const std::vector<OptionEntry>& options) {
  std::string s;
  for (const OptionEntry& o : options) s += (s.empty() ? "" : ", ") + o.key_toml + " = " + o.value;
  return s.empty() ? "(none)" : s;
}

Json backend_json(const BackendRecord& r, const std::vector<DeviceLine>& devices) {
  Json j = Json::object();
  j.set("name", r.name);
  j.set("status", status_name(r.status));
  j.set("version", Json::string_or_null(r.version));
  j.set("abi", Json::string_or_null(r.plugin_abi.empty() ? r.abi : r.plugin_abi));
  j.set("manifest", r.manifest);
  j.set("found_via", r.manifest_origin);
  j.set("library", Json::string_or_null(r.library_path.empty() ? r.library : r.library_path));
  j.set("description", r.description);
  j.set("priority", r.priority);
  j.set("enabled", r.enabled);
  j.set("experimental", r.experimental);
  j.set("error", r.ok() ? Json() : Json::string_or_null(r.reason));
  j.set("probe", r.probe_reason.empty() && !r.probe_score ? Json()
                                                           : Json(Json::Object{{"score", r.probe_score},
                                                                               {"reason", r.probe_reason}}));
  Json options = Json::object();
  for (const OptionEntry& o : r.options) options.set(o.key, o.value);
  j.set("options", options);
  j.set("diagnostics", diagnostics_json(r.diagnostics));
  Json devs = Json::array();
  for (const DeviceLine& d : devices) {
    if (d.device) devs.push(device_json(*d.device));
    else devs.push(Json(Json::Object{{"id", d.id}, {"error", d.error}}));
  }
  j.set("devices", devs);
  return j;
}

void print_human(Registry& registry, const std::vector<std::vector<DeviceLine>>& devices, bool verbose) {
  const std::vector<BackendRecord>& backends = registry.backends();
  if (verbose) {
    const ManifestSearch& s = registry.search();
    if (s.replaced) {
      std::printf("manifests: KILN_BACKENDS (discovery replaced)\n");
    } else {
      std::printf("search path:\n");
      for (const SearchDir& d : s.dirs)
        std::printf("  %s  (%s%s)\n", d.path.c_str(), d.origin.c_str(), d.exists ? "" : ", missing");
    }
    const UserConfig& c = registry.config();
    std::printf("config: %s%s\n\n", c.path.empty() ? "(no location)" : c.path.c_str(),
                c.path.empty() ? "" : c.exists ? "" : " (not present)");
  }
  int width = 4;
  for (const BackendRecord& r : backends) width = std::max(width, static_cast<int>(r.name.size()));
  const int id_width = std::max(8, width + 3);  // "name:index"
  for (size_t i = 0; i < backends.size(); ++i) {
    const BackendRecord& r = backends[i];
    const char* status = status_name(r.status);
    if (r.ok()) {
      std::printf("%-*s  %-12s  %-7s  abi %-4s  %s\n", width, r.name.c_str(), status,
                  r.version.empty() ? "-" : terminal_safe(r.version).c_str(), r.plugin_abi.c_str(), r.library_path.c_str());
    } else if (r.status == BackendStatus::not_loaded) {
      std::printf("%-*s  %-12s  %-7s  abi %-4s  %s\n", width, r.name.c_str(), status,
                  r.version.empty() ? "-" : terminal_safe(r.version).c_str(), r.abi.empty() ? "-" : r.abi.c_str(),
                  r.library_path.c_str());
    } else {
      std::printf("%-*s  %-12s  %s\n", width, r.name.c_str(), status, terminal_safe(r.reason).c_str());
    }
    for (const DeviceLine& d : devices[i]) {
      if (!d.device) {
        std::printf("  %-*s  error: %s\n", id_width, d.id.c_str(), terminal_safe(d.error).c_str());
        continue;
      }
      const DeviceProps& p = d.device->props();
      std::string memory = p.memory_total ? human_bytes(p.memory_total) : "";
      std::printf("  %-*s  %-52s  %s\n", id_width, d.id.c_str(), terminal_safe(p.description).c_str(), memory.c_str());
    }
    if (verbose) {
      std::printf("      manifest: %s (via %s)\n", r.manifest.c_str(), r.manifest_origin.c_str());
      if (!r.library.empty()) std::printf("      library:  %s\n", r.library.c_str());
      if (r.probe_score || !r.probe_reason.empty())
        std::printf("      probe:    score %d: %s\n", r.probe_score, terminal_safe(r.probe_reason).c_str());
      std::printf("      priority: %lld%s\n", static_cast<long long>(r.priority), r.experimental ? " (experimental)" : "");
      std::printf("      options:  %s\n", options_text(r.options).c_str());
    }
  }
}

}  // namespace

int run_list(const std::vector<std::string>& args) {
  po::options_description options("kiln list options");
  options.add_options()("json", "machine-readable output (schema_version 1)")(
      "verbose,v", "also show the search path, manifests, probe results and options")(
      "no-load", "read manifests only; never load a library (safe on broken systems)");
  po::variables_map vm;
  if (!parse_args(args, options, {}, vm, "kiln list [--json] [-v] [--no-load]", "  kiln list                      # one line per backend, devices indented\n"
                  "  kiln list -v --no-load         # where manifests were found, without loading them\n"
                  "  KILN_BACKENDS=build/share/kiln/backends.d/cpu.toml kiln list --json\n"))
    return kOk;
  Registry registry(cli_settings(!vm.count("no-load")));
  std::vector<std::vector<DeviceLine>> devices;
  {
    StdoutToStderr quiet;
    for (const BackendRecord& r : registry.backends()) devices.push_back(open_devices(registry, r));
  }
  const std::vector<BackendRecord>& backends = registry.backends();
  print_diagnostics(registry);

  if (vm.count("json")) {
    Json doc = Json::object();
    doc.set("schema_version", 1);
    doc.set("core_abi", abi_version());
    Json list = Json::array();
    for (size_t i = 0; i < backends.size(); ++i) list.push(backend_json(backends[i], devices[i]));
    doc.set("backends", list);
    const UserConfig& c = registry.config();
    doc.set("config", Json(Json::Object{{"path", Json::string_or_null(c.path)}, {"exists", c.exists},
                                        {"diagnostics", diagnostics_json(c.diagnostics)}}));
    doc.set("diagnostics", diagnostics_json(registry.diagnostics()));
    std::printf("%s\n", doc.dump().c_str());
  } else {
    print_human(registry, devices, vm.count("verbose") > 0);
    if (backends.empty())
      std::fprintf(stderr, "kiln: no backend manifests found (`kiln list -v` shows where kiln looked)\n");
  }
  int exit = config_exit(registry);
  return exit ? exit : backends_exit(registry);
}

}  // namespace kiln::cli
