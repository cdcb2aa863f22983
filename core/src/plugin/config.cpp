// plugin/config.cpp - reading and validating the user configuration.
#include "plugin/config.hpp"

#include <filesystem>

#include "plugin/toml_support.hpp"

namespace kiln {

const UserConfig::Backend* UserConfig::backend(const std::string& name) const {
  for (const Backend& b : backends)
    if (b.name == name) return &b;
  return nullptr;
}

const UserConfig::Alias* UserConfig::alias(const std::string& name) const {
  for (const Alias& a : aliases)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {

using Severity = Diagnostic::Severity;

void read_devices(const toml::table& devices, UserConfig& c) {
  const std::string& path = c.path;
  warn_unknown_keys(devices, {"default", "aliases"}, "devices.", path, c.diagnostics);
  if (auto d = get_field<std::string>(devices, "default", "devices.default", path, c.diagnostics)) {
    c.default_device = *d;
    c.default_device_origin = toml_origin(path, devices.get("default")->source());
  }
  const toml::node* aliases = devices.get("aliases");
  if (!aliases) return;
  const toml::table* t = aliases->as_table();
  if (!t) {
    diagnose(c.diagnostics, path, aliases->source(), Severity::error,
             "devices.aliases must be a table of name = \"backend:index\", got " + toml_type_name(*aliases));
    return;
  }
  for (auto&& [key, node] : *t) {
    std::string name(key.str());
    std::string qualified = "devices.aliases." + name;
    if (auto target = get_field<std::string>(*t, name, qualified, path, c.diagnostics))
      c.aliases.push_back({name, *target, toml_origin(path, node.source()), node.source().begin.line,
                           node.source().begin.column});
  }
  // A loop would otherwise surface as "no backend named ..." far from its cause. Each loop is
  // reported once, at its first alias in file order.
  for (size_t i = 0; i < c.aliases.size(); ++i) {
    const UserConfig::Alias& start = c.aliases[i];
    std::string chain = start.name;
    const UserConfig::Alias* a = &start;
    for (size_t hops = 0; hops <= c.aliases.size(); ++hops) {
      a = c.alias(a->target);
      if (!a) break;
      chain += " -> " + a->name;
      if (a == &start) {
        c.diagnostics.push_back({path, start.line, start.column, Severity::error,
                                 start.target == start.name
                                     ? "devices.aliases." + start.name + " names itself; an alias names a device (backend[:index])"
                                     : "alias loop: " + chain + "; the chain of aliases must end at a device (backend[:index])"});
        break;
      }
      if (a < &start) break;  // a loop through an earlier alias was reported there
    }
  }
}

void read_backends(const toml::table& backends, UserConfig& c) {
  const std::string& path = c.path;
  for (auto&& [key, node] : backends) {
    std::string name(key.str());
    std::string qualified = "backends." + name;
    const toml::table* t = node.as_table();
    if (!t) {
      diagnose(c.diagnostics, path, node.source(), Severity::error,
               qualified + " must be a table, got " + toml_type_name(node));
      continue;
    }
    UserConfig::Backend b;
    b.name = name;
    b.origin = toml_origin(path, key.source());
    b.line = key.source().begin.line;
    b.column = key.source().begin.column;
    warn_unknown_keys(*t, {"enabled", "options"}, qualified + ".", path, c.diagnostics);
    if (auto e = get_field<bool>(*t, "enabled", qualified + ".enabled", path, c.diagnostics)) {
      b.enabled = *e;
      b.enabled_origin = toml_origin(path, t->get("enabled")->source());
    }
    if (const toml::node* options = t->get("options")) {
      if (const toml::table* o = options->as_table()) flatten_options(*o, path, b.options);
      else
        diagnose(c.diagnostics, path, options->source(), Severity::error,
                 qualified + ".options must be a table, got " + toml_type_name(*options));
    }
    c.backends.push_back(std::move(b));
  }
}

}  // namespace

UserConfig read_user_config(const std::string& path, const std::string& path_origin, bool explicit_path) {
  UserConfig c;
  c.path = path;
  c.path_origin = path_origin;
  if (path.empty()) return c;
  std::string problem = file_problem(path);
  if (problem == "does not exist") {
    if (explicit_path)
      c.diagnostics.push_back({path, 0, 0, Severity::error,
                               "the configuration file named by " + path_origin + " does not exist"});
    return c;
  }
  c.exists = true;
  std::optional<toml::table> doc = parse_toml_file(path, c.diagnostics);
  if (!doc) return c;
  warn_unknown_keys(*doc, {"devices", "backends"}, "", path, c.diagnostics);
  if (const toml::node* devices = doc->get("devices")) {
    if (const toml::table* t = devices->as_table()) read_devices(*t, c);
    else
      diagnose(c.diagnostics, path, devices->source(), Severity::error,
               "devices must be a table, got " + toml_type_name(*devices));
  }
  if (const toml::node* backends = doc->get("backends")) {
    if (const toml::table* t = backends->as_table()) read_backends(*t, c);
    else
      diagnose(c.diagnostics, path, backends->source(), Severity::error,
               "backends must be a table, got " + toml_type_name(*backends));
  }
  if (!c.ok()) {  // an invalid file is ignored as a whole, so no half-applied settings
    c.default_device.clear();
    c.aliases.clear();
    c.backends.clear();
  }
  return c;
}

}  // namespace kiln
