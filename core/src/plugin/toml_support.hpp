// plugin/toml_support.hpp - toml++ helpers shared by the manifest and config readers (internal).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <toml++/toml.h>

#include "plugin/diagnostic.hpp"

namespace kiln {

// Reads one TOML file; a missing file or a syntax error becomes a diagnostic and nullopt.
std::optional<toml::table> parse_toml_file(const std::string& path, std::vector<Diagnostic>& diags);

// Adds a diagnostic positioned at `where` in `file`.
void diagnose(std::vector<Diagnostic>& diags, const std::string& file, const toml::source_region& where,
              Diagnostic::Severity severity, std::string message);

// "string", "integer", "table", ... (TOML's names, as users write them).
std::string toml_type_name(const toml::node& node);

// "path:line:col" for a node.
std::string toml_origin(const std::string& file, const toml::source_region& where);

// Warns about every key of `table` not in `known`; `prefix` qualifies names ("backend.").
void warn_unknown_keys(const toml::table& table, std::initializer_list<std::string_view> known,
                       std::string_view prefix, const std::string& file, std::vector<Diagnostic>& diags);

// The value as TOML text (basic strings, shortest round-trip floats, inline arrays/tables).
std::string toml_value_text(const toml::node& node);

// A key segment as TOML: bare if it can be, else a quoted basic string.
std::string toml_key_text(std::string_view key);

// Flattens a table into dotted OptionEntry leaves (arrays are leaves), recording origins.
void flatten_options(const toml::table& table, const std::string& file, std::vector<OptionEntry>& out,
                     const std::string& prefix = "", const std::string& prefix_toml = "");

// Typed field access: returns the value, or nullopt when absent; a present value of the wrong
// type is an error diagnostic ("backend.priority must be an integer, got string").
// T is std::string, int64_t or bool.
template <typename T>
std::optional<T> get_field(const toml::table& table, std::string_view key, std::string_view qualified,
                           const std::string& file, std::vector<Diagnostic>& diags) {
  const toml::node* node = table.get(key);
  if (!node) return std::nullopt;
  if (std::optional<T> v = node->value_exact<T>()) return v;
  const char* expected = std::is_same_v<T, std::string> ? "a string" : std::is_same_v<T, bool> ? "a boolean" : "an integer";
  diagnose(diags, file, node->source(), Diagnostic::Severity::error,
           std::string(qualified) + " must be " + expected + ", got " + toml_type_name(*node));
  return std::nullopt;
}

}  // namespace kiln
