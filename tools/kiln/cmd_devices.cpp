// tools/kiln/cmd_devices.cpp - `kiln devices`: one line per usable device (llama.cpp style).
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"

namespace kiln::cli {

int run_devices(const std::vector<std::string>& args) {
  po::options_description options("kiln devices options");
  options.add_options()("json", "machine-readable output (schema_version 1)");
  po::variables_map vm;
  if (!parse_args(args, options, {}, vm, "kiln devices [--json]",
                  "  kiln devices\n  KILN_DEVICE=cpu:0 kiln devices --json\n"))
    return kOk;
  Registry registry(cli_settings());
  std::vector<std::shared_ptr<Device>> opened;
  std::vector<std::string> errors;
  DeviceChoice def;
  {
    StdoutToStderr quiet;
    for (const std::string& id : registry.devices()) {
      try {
        opened.push_back(registry.open(id));
      } catch (const std::exception& e) {
        errors.push_back(e.what());
      }
    }
    def = registry.default_choice();
  }
  print_diagnostics(registry);
  int exit = config_exit(registry);
  for (const std::string& e : errors) std::fprintf(stderr, "kiln: %s\n", e.c_str());
  if (!exit && !errors.empty()) exit = kFailure;
  if (!exit) exit = backends_exit(registry);
  // A backend that is broken, rather than absent here (no hardware is `unavailable`, not an
  // error), is said: otherwise its devices silently vanish from this list.
  Json broken = Json::array();
  for (const BackendRecord& r : registry.known_backends()) {
    if (r.status != BackendStatus::config_error && r.status != BackendStatus::crashed) continue;
    std::fprintf(stderr, "kiln: backend %s has no devices here, it is %s: %s\n", r.name.c_str(), status_name(r.status),
                 terminal_safe(r.reason).c_str());
    broken.push(Json(Json::Object{{"backend", r.name}, {"status", status_name(r.status)}, {"error", r.reason}}));
    if (!exit) exit = r.status == BackendStatus::config_error ? kConfigError : kFailure;
  }
  if (vm.count("json")) {
    Json list = Json::array();
    for (const auto& d : opened) list.push(device_json(*d));
    Json doc = Json::object();
    doc.set("schema_version", 1);
    doc.set("default", Json::string_or_null(def.device));
    doc.set("default_origin", def.origin);
    doc.set("devices", list);
    doc.set("broken_backends", broken);
    std::printf("%s\n", doc.dump().c_str());
    return exit;
  }
  // a KILN_DEVICE or devices.default that names nothing usable is said, not only in --json
  if (def.device.empty() && def.origin != "no usable device") {
    std::fprintf(stderr, "kiln: warning: no default device: %s\n", def.origin.c_str());
  }
  std::printf("Available devices:\n");
  if (opened.empty()) std::printf("  (none)\n");
  for (const auto& d : opened) {
    const DeviceProps& p = d->props();
    std::string memory;
    if (p.memory_total)
      memory = " (" + std::to_string(p.memory_total >> 20) + " MiB" +
               (p.memory_free ? ", " + std::to_string(p.memory_free >> 20) + " MiB free)" : ")");  // 0: unknown
    std::printf("  %s: %s%s%s\n", d->name().c_str(), terminal_safe(p.description).c_str(), memory.c_str(),
                d->name() == def.device ? " [default]" : "");
  }
  if (!def.device.empty()) std::printf("Default: %s (%s)\n", def.device.c_str(), def.origin.c_str());
  return exit;
}

}  // namespace kiln::cli
