// plugin/discovery.hpp - where manifests and the user config are looked for (docs/architecture.md §5).
//
// Order (first backend name wins; later manifests of the same name are `shadowed`):
//   KILN_BACKENDS                 colon-separated manifest files; if set, replaces everything below
//   KILN_BACKEND_PATH             colon-separated directories, searched first
//   $XDG_CONFIG_HOME/kiln/backends.d   (default ~/.config)
//   $XDG_CONFIG_DIRS/kiln/backends.d   (default /etc/xdg)
//   /etc/kiln/backends.d
//   $XDG_DATA_HOME/kiln/backends.d     (default ~/.local/share)
//   $XDG_DATA_DIRS/kiln/backends.d     (default /usr/local/share:/usr/share)
//   <prefix>/share/kiln/backends.d     where <prefix> is found from libkiln.so's own location, so
//                                      installs are relocatable and the build tree (build/lib,
//                                      build/share) works uninstalled
// Within a directory *.toml files are read in sorted order. The current directory is never
// searched: empty list entries and relative XDG entries are ignored. Under setuid/setgid
// (AT_SECURE) the environment and home directories are ignored.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plugin/diagnostic.hpp"

namespace kiln {

// Everything discovery reads from the environment, captured once (tests build their own).
struct Settings {
  std::optional<std::string> backends;  // KILN_BACKENDS
  std::string backend_path;             // KILN_BACKEND_PATH
  std::optional<std::string> config;    // KILN_CONFIG
  std::string device;                   // KILN_DEVICE
  std::string home, xdg_config_home, xdg_config_dirs, xdg_data_home, xdg_data_dirs;
  std::string sysconfdir = "/etc";
  // The install's own backends.d directories; nullopt = derive from libkiln.so's location.
  std::optional<std::vector<std::string>> prefix_dirs;
  bool load = true;  // false: read manifests only, never dlopen (kiln list --no-load)
  // Log config errors (always) and every problem (at KILN_DEBUG>=1) to stderr during discovery.
  // The CLI turns this off and prints diagnostics itself.
  bool report_problems = true;
  // > 0: before a backend is loaded in this process, load it, probe it and open its devices in a
  // forked child (plugin/isolate.hpp) that must finish within this many seconds; a backend whose
  // child crashes, exits or hangs is marked `crashed` and never loaded here. The CLI sets it;
  // libraries leave it 0 (forking a user's multithreaded program is not ours to do).
  double isolate_timeout_s = 0;

  static Settings from_environment();
};

struct SearchDir {
  std::string path;
  std::string origin;  // "KILN_BACKEND_PATH", "$XDG_CONFIG_HOME", ..., "install prefix"
  bool exists = false;
};

struct ManifestFile {
  std::string path;
  std::string origin;  // the SearchDir origin, or "KILN_BACKENDS"
};

struct ManifestSearch {
  bool replaced = false;         // KILN_BACKENDS was set
  std::vector<SearchDir> dirs;   // in search order (empty when replaced)
  std::vector<ManifestFile> files;
  // *.toml entries of searched directories that are skipped (dangling or looping links,
  // directories, unreadable files) and directories that cannot be listed: warnings.
  std::vector<Diagnostic> diagnostics;
};

ManifestSearch find_manifests(const Settings& settings);

// The backends.d directories of the install (or build tree) containing libkiln.so.
std::vector<std::string> install_prefix_dirs();

// The user config location and how it was chosen: KILN_CONFIG, else $XDG_CONFIG_HOME/kiln/config.toml.
struct ConfigLocation {
  std::string path, origin;
  bool explicit_path = false;
};
ConfigLocation user_config_location(const Settings& settings);

}  // namespace kiln
