// plugin/diagnostic.cpp - diagnostic text, file problems in words, option merging.
#include "plugin/diagnostic.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
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

std::string file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status link = fs::symlink_status(path, ec);
  if (ec || !fs::exists(link)) return "does not exist";
  fs::file_status target = fs::status(path, ec);
  if (fs::is_symlink(link) && ec) {
    if (ec == std::errc::too_many_symbolic_link_levels) return "is a symbolic link loop";
    std::error_code rec;
    fs::path to = fs::read_symlink(path, rec);
    return "is a dangling symbolic link" + (rec ? std::string() : " to " + to.string());
  }
  if (ec) return "cannot be examined: " + ec.message();
  if (fs::is_directory(target)) return "is a directory";
  if (!fs::is_regular_file(target)) return "is not a regular file";
  if (access(path.c_str(), R_OK) != 0) return std::string("cannot be read: ") + std::strerror(errno);
  return "";
}

}  // namespace kiln
