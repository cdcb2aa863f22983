// plugin/manifest.cpp - reading and validating backend manifests.
#include "plugin/manifest.hpp"

#include <filesystem>

#include "plugin/toml_support.hpp"

namespace kiln {

bool valid_backend_name(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

std::string Manifest::first_error() const {
  for (const Diagnostic& d : diagnostics)
    if (d.is_error()) return d.str();
  return {};
}

Manifest read_manifest(const std::string& path) {
  using Severity = Diagnostic::Severity;
  Manifest m;
  m.path = path;
  m.name = std::filesystem::path(path).stem().string();
  std::vector<Diagnostic>& diags = m.diagnostics;
  std::optional<toml::table> doc = parse_toml_file(path, diags);
  if (!doc) return m;
  const toml::table& root = *doc;
  toml::source_region top{};
  top.begin = {1, 1};

  warn_unknown_keys(root, {"schema", "backend"}, "", path, diags);
  if (!root.contains("schema")) {
    diagnose(diags, path, top, Severity::error, "missing required key 'schema' (add `schema = 1` at the top)");
  } else if (std::optional<int64_t> schema = get_field<int64_t>(root, "schema", "schema", path, diags)) {
    if (*schema > kManifestSchema) {
      diagnose(diags, path, root.get("schema")->source(), Severity::error,
               "manifest schema " + std::to_string(*schema) + " is newer than this kiln supports (" +
                   std::to_string(kManifestSchema) + "); upgrade kiln or use a manifest written for schema " +
                   std::to_string(kManifestSchema));
      return m;  // the rest may mean something else in a newer schema
    }
    if (*schema < 1)
      diagnose(diags, path, root.get("schema")->source(), Severity::error,
               "schema must be >= 1, got " + std::to_string(*schema));
  }

  const toml::node* backend_node = root.get("backend");
  if (!backend_node) {
    diagnose(diags, path, top, Severity::error, "missing required table [backend]");
    return m;
  }
  const toml::table* backend = backend_node->as_table();
  if (!backend) {
    diagnose(diags, path, backend_node->source(), Severity::error,
             "backend must be a table, got " + toml_type_name(*backend_node));
    return m;
  }
  warn_unknown_keys(*backend,
                    {"name", "library", "abi", "version", "description", "priority", "enabled", "experimental", "options"},
                    "backend.", path, diags);
  for (const char* required : {"name", "library"})
    if (!backend->contains(required))
      diagnose(diags, path, backend->source(), Severity::error,
               std::string("missing required key backend.") + required);

  if (auto name = get_field<std::string>(*backend, "name", "backend.name", path, diags)) {
    if (valid_backend_name(*name)) m.name = *name;
    else
      diagnose(diags, path, backend->get("name")->source(), Severity::error,
               "backend.name '" + *name + "' is not a valid backend name (lower-case letters, digits, '_', '-'; starting with a letter)");
  }
  if (auto library = get_field<std::string>(*backend, "library", "backend.library", path, diags)) {
    if (library->empty())
      diagnose(diags, path, backend->get("library")->source(), Severity::error, "backend.library is empty");
    m.library = *library;
  }
  if (auto abi = get_field<std::string>(*backend, "abi", "backend.abi", path, diags)) m.abi = *abi;
  if (auto v = get_field<std::string>(*backend, "version", "backend.version", path, diags)) m.version = *v;
  if (auto d = get_field<std::string>(*backend, "description", "backend.description", path, diags)) m.description = *d;
  if (auto p = get_field<int64_t>(*backend, "priority", "backend.priority", path, diags)) m.priority = *p;
  if (auto e = get_field<bool>(*backend, "enabled", "backend.enabled", path, diags)) m.enabled = *e;
  if (auto x = get_field<bool>(*backend, "experimental", "backend.experimental", path, diags)) m.experimental = *x;
  if (const toml::node* options = backend->get("options")) {
    if (const toml::table* t = options->as_table()) flatten_options(*t, path, m.options);
    else
      diagnose(diags, path, options->source(), Severity::error,
               "backend.options must be a table, got " + toml_type_name(*options));
  }
  return m;
}

}  // namespace kiln
