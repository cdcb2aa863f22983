// plugin/discovery.cpp - search paths for manifests and the user config.
#include "plugin/discovery.hpp"

#include <dlfcn.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace kiln {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));  // "a::b" must not mean "."
    start = end + 1;
  }
  return out;
}

std::string env(const char* name, bool secure) {
  const char* v = secure ? nullptr : std::getenv(name);
  return v ? v : "";
}

std::string join(const std::string& a, const char* b) { return (fs::path(a) / b).string(); }

}  // namespace

Settings Settings::from_environment() {
  // setuid/setgid programs must not let the caller's environment pick libraries to dlopen.
  bool secure = getauxval(AT_SECURE) != 0;
  Settings s;
  if (const char* v = secure ? nullptr : std::getenv("KILN_BACKENDS"); v && *v) s.backends = v;
  s.backend_path = env("KILN_BACKEND_PATH", secure);
  if (const char* v = secure ? nullptr : std::getenv("KILN_CONFIG"); v && *v) s.config = v;
  s.device = env("KILN_DEVICE", secure);
  s.home = env("HOME", secure);
  s.xdg_config_home = env("XDG_CONFIG_HOME", secure);
  s.xdg_config_dirs = env("XDG_CONFIG_DIRS", secure);
  s.xdg_data_home = env("XDG_DATA_HOME", secure);
  s.xdg_data_dirs = env("XDG_DATA_DIRS", secure);
  return s;
}

std::vector<std::string> install_prefix_dirs() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&install_prefix_dirs), &info) || !info.dli_fname) return {};
  std::error_code ec;
  fs::path lib = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);
  if (ec) return {};
  fs::path libdir = lib.parent_path();
  std::vector<std::string> out;
  // Strip the configured libdir (e.g. "lib" or "lib/x86_64-linux-gnu") to find the prefix.
  fs::path rel = KILN_INSTALL_LIBDIR;
  fs::path prefix = libdir;
  bool matches = rel.is_relative();
  for (auto it = rel.end(); matches && it != rel.begin();) {
    --it;
    matches = prefix.filename() == *it;
    prefix = prefix.parent_path();
  }
  if (matches) out.push_back((prefix / KILN_INSTALL_DATADIR / "kiln" / "backends.d").string());
  // The build tree: build/lib/libkiln.so next to build/share/kiln/backends.d.
  std::string build = (libdir.parent_path() / "share" / "kiln" / "backends.d").string();
  if (std::find(out.begin(), out.end(), build) == out.end()) out.push_back(build);
  return out;
}

ManifestSearch find_manifests(const Settings& s) {
  ManifestSearch r;
  std::error_code ec;
  if (s.backends) {
    r.replaced = true;
    for (const std::string& f : split_list(*s.backends))
      r.files.push_back({fs::absolute(f, ec).lexically_normal().string(), "KILN_BACKENDS"});
    return r;
  }
  auto add = [&](const std::string& dir, const char* origin) {
    if (dir.empty()) return;
    r.dirs.push_back({fs::absolute(dir, ec).lexically_normal().string(), origin, false});
  };
  auto add_xdg = [&](const std::string& list, const char* sub, const char* origin) {
    for (const std::string& d : split_list(list))
      if (fs::path(d).is_absolute()) add(join(d, sub), origin);  // XDG: relative entries are invalid
  };
  for (const std::string& d : split_list(s.backend_path)) add(d, "KILN_BACKEND_PATH");
  std::string config_home = s.xdg_config_home;
  if (!fs::path(config_home).is_absolute()) config_home = s.home.empty() ? "" : join(s.home, ".config");
  if (!config_home.empty()) add(join(config_home, "kiln/backends.d"), "$XDG_CONFIG_HOME");
  add_xdg(s.xdg_config_dirs.empty() ? "/etc/xdg" : s.xdg_config_dirs, "kiln/backends.d", "$XDG_CONFIG_DIRS");
  add(join(s.sysconfdir, "kiln/backends.d"), "sysconfdir");
  std::string data_home = s.xdg_data_home;
  if (!fs::path(data_home).is_absolute()) data_home = s.home.empty() ? "" : join(s.home, ".local/share");
  if (!data_home.empty()) add(join(data_home, "kiln/backends.d"), "$XDG_DATA_HOME");
  add_xdg(s.xdg_data_dirs.empty() ? "/usr/local/share:/usr/share" : s.xdg_data_dirs, "kiln/backends.d",
          "$XDG_DATA_DIRS");
  for (const std::string& d : s.prefix_dirs ? *s.prefix_dirs : install_prefix_dirs()) add(d, "install prefix");

  // The same directory reached twice (e.g. the prefix is /usr) is searched once, at its first place.
  std::vector<std::string> seen;
  std::vector<SearchDir> unique;
  for (SearchDir& d : r.dirs) {
    d.exists = fs::is_directory(d.path, ec);
    std::string key = d.exists ? fs::canonical(d.path, ec).string() : d.path;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    unique.push_back(d);
  }
  r.dirs = std::move(unique);

  for (const SearchDir& d : r.dirs) {
    if (!d.exists) continue;
    std::vector<std::string> files;
    std::error_code list_ec;
    for (const fs::directory_entry& e : fs::directory_iterator(d.path, list_ec)) {
      if (e.path().extension() != ".toml") continue;
      if (std::string problem = file_problem(e.path().string()); problem.empty())
        files.push_back(e.path().string());
      else
        r.diagnostics.push_back({e.path().string(), 0, 0, Diagnostic::Severity::warning,
                                 "skipped: it " + problem + " (found in " + d.path + ", " + d.origin + ")"});
    }
    if (list_ec)
      r.diagnostics.push_back({d.path, 0, 0, Diagnostic::Severity::warning,
                               "cannot list this manifest directory (" + d.origin + "): " + list_ec.message()});
    std::sort(files.begin(), files.end());  // readdir order is arbitrary
    for (std::string& f : files) r.files.push_back({std::move(f), d.origin});
  }
  return r;
}

ConfigLocation user_config_location(const Settings& s) {
  if (s.config) return {*s.config, "KILN_CONFIG", true};
  if (fs::path(s.xdg_config_home).is_absolute())
    return {join(s.xdg_config_home, "kiln/config.toml"), "$XDG_CONFIG_HOME/kiln/config.toml", false};
  if (!s.home.empty()) return {join(s.home, ".config/kiln/config.toml"), "~/.config/kiln/config.toml", false};
  return {};
}

}  // namespace kiln
