// plugin/diagnostic.cpp - diagnostic text and option merging.
#include "plugin/diagnostic.hpp"

#include <vector>

namespace kiln {

std::string Diagnostic::str() const {
  std::string s = file;
  if (line) s += ":" + std::to_string(line) + ":" + std::to_string(column ? column : 1);
  s += is_error() ? ": error: " : ": warning: ";
  return s + message;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  for (const Diagnostic& d : diagnostics)
    if (d.is_error()) return true;
  return false;
}

std::string options_to_toml(const std::vector<OptionEntry>& options) {
  std::string out;
  for (const OptionEntry& o : options) out += o.key_toml + " = " + o.value + "\n";
  return out;
}

std::vector<OptionEntry> merge_options(std::vector<OptionEntry> base, const std::vector<OptionEntry>& overrides) {
  auto related = [](const std::string& a, const std::string& b) {  // equal, or one a table prefix of the other
    const std::string& s = a.size() < b.size() ? a : b;
    const std::string& l = a.size() < b.size() ? b : a;
    return l.compare(0, s.size(), s) == 0 && (l.size() == s.size() || l[s.size()] == '.');
  };
  for (const OptionEntry& o : overrides) {
    std::erase_if(base, [&](const OptionEntry& b) { return related(b.key_toml, o.key_toml); });
    base.push_back(o);
  }
  return base;
}

}  // namespace kiln
