// tools/kiln/cmd_config.cpp - `kiln config`: the effective configuration and where each value came from.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"

namespace kiln::cli {

int run_config(const std::vector<std::string>& args) {
  po::options_description options("kiln config options");
  options.add_options()("json", "machine-readable output (schema_version 1)");
  po::variables_map vm;
  if (!parse_args(args, options, {}, vm, "kiln config [--json]",
                  "  kiln config\n  KILN_CONFIG=./my.toml kiln config --json\n"))
    return kOk;
  Registry registry(cli_settings());
  DeviceChoice def;
  {
    StdoutToStderr quiet;
    registry.backends();
    def = registry.default_choice();
  }
  print_diagnostics(registry);
  const UserConfig& c = registry.config();
  const Settings& s = registry.settings();
  const ManifestSearch& search = registry.search();

  if (vm.count("json")) {
    Json doc = Json::object();
    doc.set("schema_version", 1);
    doc.set("config", Json(Json::Object{{"path", Json::string_or_null(c.path)},
                                        {"origin", c.path_origin},
                                        {"exists", c.exists},
                                        {"valid", c.ok()},
                                        {"diagnostics", diagnostics_json(c.diagnostics)}}));
    doc.set("kiln_device", Json::string_or_null(s.device));
    doc.set("default_device", Json(Json::Object{{"device", Json::string_or_null(def.device)}, {"origin", def.origin}}));
    Json aliases = Json::array();
    for (const UserConfig::Alias& a : c.aliases)
      aliases.push(Json(Json::Object{{"name", a.name}, {"target", a.target}, {"origin", a.origin}}));
    doc.set("aliases", aliases);
    Json backends = Json::array();
    for (const BackendRecord& r : registry.backends()) {
      if (r.status == BackendStatus::shadowed) continue;
      Json opts = Json::array();
      for (const OptionEntry& o : r.options)
        opts.push(Json(Json::Object{{"key", o.key}, {"value", o.value}, {"origin", o.origin}}));
      backends.push(Json(Json::Object{{"name", r.name},
                                      {"enabled", r.enabled},
                                      {"enabled_origin", r.enabled_origin},
                                      {"status", status_name(r.status)},
                                      {"options", opts}}));
    }
    doc.set("backends", backends);
    Json dirs = Json::array();
    for (const SearchDir& d : search.dirs)
      dirs.push(Json(Json::Object{{"path", d.path}, {"origin", d.origin}, {"exists", d.exists}}));
    doc.set("manifests_replaced_by_KILN_BACKENDS", search.replaced);
    doc.set("search_path", dirs);
    doc.set("diagnostics", diagnostics_json(registry.diagnostics()));
    std::printf("%s\n", doc.dump().c_str());
    return config_exit(registry);
  }

  std::printf("config file:     %s  (%s%s)\n", c.path.empty() ? "(none)" : c.path.c_str(), c.path_origin.c_str(),
              c.path.empty() ? "" : !c.exists ? ", not present" : c.ok() ? "" : ", INVALID: ignored");
  std::printf("KILN_DEVICE:     %s\n", s.device.empty() ? "(unset)" : s.device.c_str());
  std::printf("default device:  %s  (%s)\n", def.device.empty() ? "(none)" : def.device.c_str(), def.origin.c_str());
  std::printf("aliases:%s\n", c.aliases.empty() ? "         (none)" : "");
  for (const UserConfig::Alias& a : c.aliases)
    std::printf("  %s = \"%s\"    (%s)\n", a.name.c_str(), a.target.c_str(), a.origin.c_str());
  std::printf("backends:\n");
  for (const BackendRecord& r : registry.backends()) {
    if (r.status == BackendStatus::shadowed) continue;
    std::printf("  %-8s %s  (%s)  [%s]\n", r.name.c_str(), r.enabled ? "enabled " : "disabled", r.enabled_origin.c_str(),
                status_name(r.status));
    for (const OptionEntry& o : r.options)
      std::printf("    %s = %s    (%s)\n", o.key_toml.c_str(), o.value.c_str(), o.origin.c_str());
  }
  if (search.replaced) {
    std::printf("manifests:       KILN_BACKENDS (discovery replaced)\n");
  } else {
    std::printf("search path:\n");
    for (const SearchDir& d : search.dirs)
      std::printf("  %s  (%s%s)\n", d.path.c_str(), d.origin.c_str(), d.exists ? "" : ", missing");
  }
  return config_exit(registry);
}

}  // namespace kiln::cli
