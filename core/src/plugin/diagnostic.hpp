// plugin/diagnostic.hpp - problems found in manifests and config files, with positions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// One problem, printed as "file:line:col: error|warning: message" (line/col left out when 0).
struct Diagnostic {
  enum class Severity { warning, error };
  std::string file;
  uint32_t line = 0, column = 0;
  Severity severity = Severity::error;
  std::string message;

  bool is_error() const { return severity == Severity::error; }
  std::string str() const;
};

bool has_errors(const std::vector<Diagnostic>& diagnostics);

// Why `path` cannot be read as a file, in words for a message ("is a symbolic link loop", "is a
// dangling symbolic link to /x", "is a directory", "cannot be read: Permission denied",
// "does not exist"); empty when it is a readable regular file (or a link to one).
std::string file_problem(const std::string& path);

// A value of a backend option with where it came from ("file:line:col"). Keys are dotted paths of
// the [backend.options] table ("compiler.flags"); values are TOML text ("\"-O2\"", "4", "[1, 2]").
struct OptionEntry {
  std::string key;     // display form: segments joined with '.'
  std::string key_toml;  // TOML form: segments quoted where needed
  std::string value;   // TOML text of the value
  std::string origin;  // "path:line:col"
};

// The options as a TOML document ("key = value" lines), as plugins receive them in initialize().
std::string options_to_toml(const std::vector<OptionEntry>& options);

// Merges `overrides` over `base` by key: an override replaces an equal key and any key that is a
// table prefix of it or has it as a prefix (so `a.b = 1` over `a = 2` stays valid TOML).
std::vector<OptionEntry> merge_options(std::vector<OptionEntry> base, const std::vector<OptionEntry>& overrides);

}  // namespace kiln
