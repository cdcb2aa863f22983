// plugin/toml_support.cpp - toml++ parsing with positioned diagnostics, and TOML text output.
#include "plugin/toml_support.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "support/text.hpp"

namespace kiln {

void diagnose(std::vector<Diagnostic>& diags, const std::string& file, const toml::source_region& where,
              Diagnostic::Severity severity, std::string message) {
  diags.push_back({file, where.begin.line, where.begin.column, severity, std::move(message)});
}

std::optional<toml::table> parse_toml_file(const std::string& path, std::vector<Diagnostic>& diags) {
  if (std::string problem = file_problem(path); !problem.empty()) {
    diags.push_back({path, 0, 0, Diagnostic::Severity::error, "the file " + problem});
    return std::nullopt;
  }
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    diagnose(diags, path, e.source(), Diagnostic::Severity::error, std::string(e.description()));
    return std::nullopt;
  }
}

std::string toml_type_name(const toml::node& node) {
  std::ostringstream os;
  os << node.type();
  return os.str();
}

std::string toml_origin(const std::string& file, const toml::source_region& where) {
  if (!where.begin.line) return file;
  return file + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column);
}

void warn_unknown_keys(const toml::table& table, std::initializer_list<std::string_view> known,
                       std::string_view prefix, const std::string& file, std::vector<Diagnostic>& diags) {
  for (auto&& [key, node] : table) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key.str() == k;
    if (ok) continue;
    std::string expected;
    for (std::string_view k : known) expected += (expected.empty() ? "" : ", ") + std::string(k);
    diagnose(diags, file, key.source(), Diagnostic::Severity::warning,
             "unknown key '" + std::string(prefix) + std::string(key.str()) + "' (ignored; known keys: " + expected + ")");
  }
}

namespace {

std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it a float in TOML
  return s;
}

}  // namespace

std::string toml_key_text(std::string_view key) {
  bool bare = !key.empty();
  for (char c : key)
    bare = bare && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  return bare ? std::string(key) : quote(key);
}

std::string toml_value_text(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return quote(node.as_string()->get());
    case toml::node_type::integer: return std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point: return float_text(node.as_floating_point()->get());
    case toml::node_type::boolean: return node.as_boolean()->get() ? "true" : "false";
    case toml::node_type::array: {
      std::string out = "[";
      for (const toml::node& item : *node.as_array()) out += (out.size() > 1 ? ", " : "") + toml_value_text(item);
      return out + "]";
    }
    case toml::node_type::table: {
      std::string out = "{";
      for (auto&& [k, v] : *node.as_table())
        out += (out.size() > 1 ? ", " : "") + toml_key_text(k.str()) + " = " + toml_value_text(v);
      return out + "}";
    }
    default: {  // dates and times: toml++ prints them as valid TOML
      std::ostringstream os;
      node.visit([&](auto&& v) {
        if constexpr (toml::is_date<decltype(v)> || toml::is_time<decltype(v)> || toml::is_date_time<decltype(v)>)
          os << v;
      });
      return os.str();
    }
  }
}

void flatten_options(const toml::table& table, const std::string& file, std::vector<OptionEntry>& out,
                     const std::string& prefix, const std::string& prefix_toml) {
  for (auto&& [key, node] : table) {
    std::string k = prefix + std::string(key.str());
    std::string kt = prefix_toml + toml_key_text(key.str());
    if (const toml::table* sub = node.as_table()) {
      flatten_options(*sub, file, out, k + ".", kt + ".");
      continue;
    }
    out.push_back({k, kt, toml_value_text(node), toml_origin(file, node.source())});
  }
}

}  // namespace kiln
