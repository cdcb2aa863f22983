// plugin/config.hpp - the user configuration file (KILN_CONFIG or $XDG_CONFIG_HOME/kiln/config.toml).
//
//   [devices]
//   default = "opencl:0"            # the default device (below KILN_DEVICE, above priorities)
//   [devices.aliases]
//   fast = "hip:0"                  # open("fast") opens hip:0
//   [backends.opencl]
//   enabled = false                 # overrides the manifest's backend.enabled
//   [backends.cpu.options]
//   threads = 8                     # merged over the manifest's [backend.options]
//
// Unknown keys are warnings. A syntax error or a wrong type is an error: the file is then ignored
// as a whole (kiln behaves as without it) and the CLI exits 3.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plugin/diagnostic.hpp"

namespace kiln {

struct UserConfig {
  // An alias names a device ("hip:0") or another alias; chains are followed, loops are errors.
  struct Alias {
    std::string name, target, origin;  // origin: "file:line:col"
    uint32_t line = 0, column = 0;     // its position (for warnings found later, e.g. hiding a backend)
  };
  struct Backend {
    std::string name;
    std::string origin;                // where [backends.NAME] is
    uint32_t line = 0, column = 0;     // its position (for "unknown backend" warnings)
    std::optional<bool> enabled;
    std::string enabled_origin;
    std::vector<OptionEntry> options;  // flattened [backends.NAME.options]
  };

  std::string path;         // the file read, or that would be read ("" if no location is known)
  std::string path_origin;  // "KILN_CONFIG" or "$XDG_CONFIG_HOME/kiln/config.toml", ...
  bool exists = false;
  std::string default_device, default_device_origin;
  std::vector<Alias> aliases;
  std::vector<Backend> backends;
  std::vector<Diagnostic> diagnostics;

  bool ok() const { return !has_errors(diagnostics); }
  const Backend* backend(const std::string& name) const;
  const Alias* alias(const std::string& name) const;
};

// Reads `path`. `explicit_path` (KILN_CONFIG) makes a missing file an error; otherwise a missing
// file is simply no configuration. Never throws.
UserConfig read_user_config(const std::string& path, const std::string& path_origin, bool explicit_path);

}  // namespace kiln
