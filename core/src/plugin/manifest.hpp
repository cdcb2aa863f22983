// plugin/manifest.hpp - one backend manifest (share/kiln/backends.d/NAME.toml), validated.
//
//   schema = 1
//   [backend]
//   name = "cpu"                 # required, [a-z][a-z0-9_-]*; devices are named cpu:0, cpu:1, ...
//   library = "../../../lib/kiln/backends/libkiln_cpu.so"   # required: absolute, relative to this
//                                # file (contains a '/'), or a bare soname for the system search
//   abi = "0.1"                  # the ABI the library was built for (informational; the entry
//                                # point's negotiation is authoritative)
//   version = "0.1.0"  description = "..."  priority = 0  enabled = true  experimental = false
//   [backend.options]            # opaque to the core; merged with the user config and given to
//   threads = 4                  # the plugin's initialize() as TOML text
//
// Unknown keys are warnings; a syntax error, a wrong type, a missing required key or a schema newer
// than kManifestSchema are errors that disable this backend only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plugin/diagnostic.hpp"

namespace kiln {

inline constexpr int64_t kManifestSchema = 1;

struct Manifest {
  std::string path;  // as found
  std::string name;  // from backend.name, else the file's stem (so errors still have a name)
  std::string library, abi, version, description;
  int64_t priority = 100;
  bool enabled = true;
  bool experimental = false;
  std::vector<OptionEntry> options;  // flattened [backend.options]
  std::vector<Diagnostic> diagnostics;

  bool ok() const { return !has_errors(diagnostics); }
  // The first error, as "file:line:col: error: message" ("" when ok).
  std::string first_error() const;
};

// Never throws: every problem is a diagnostic.
Manifest read_manifest(const std::string& path);

// Backend names: [a-z][a-z0-9_-]*.
bool valid_backend_name(const std::string& name);

}  // namespace kiln
