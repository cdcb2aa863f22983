// plugin/loader.hpp - loading one plugin library: dlopen, entry, ABI negotiation, probe, initialize.
//
// Libraries are opened with RTLD_NOW | RTLD_LOCAL (an unresolved symbol fails here, with dlerror's
// text, instead of crashing at first call) and are never unloaded. Loading is process-wide and
// happens once per library: later calls (e.g. a second Registry in a test) get the first result,
// including the options the first initialize() received.
#pragma once
#include <cstdint>
#include <string>

#include "kiln/plugin.h"

namespace kiln {

enum class BackendStatus {
  ok,            // loaded, probed, initialized, has devices
  unavailable,   // loaded, but probe/initialize/device_count says it cannot work here (reason)
  abi_mismatch,  // the library was built for another ABI
  load_error,    // the library is missing, fails to dlopen, or is not a kiln plugin
  config_error,  // the manifest is invalid, or initialize() rejected the options
  disabled,      // enabled = false in the manifest or the user config
  shadowed,      // an earlier manifest has the same backend name
  not_loaded,    // valid manifest, library not loaded (kiln list --no-load, or not needed yet)
  crashed,       // crashed, exited or hung while being probed in a child (Settings::isolate_timeout_s)
};

// "ok", "unavailable", "abi-mismatch", "load-error", "config-error", "disabled", "shadowed", "not-loaded",
// "crashed".
const char* status_name(BackendStatus status);

// A plugin reporting more devices than this has a bug (2^32-1 from an unset variable); the registry
// and the CLI allocate per device, so such a count is an error, not a loop.
inline constexpr uint32_t kMaxDevices = 4096;

struct LoadResult {
  BackendStatus status = BackendStatus::load_error;
  std::string reason;        // why it is not ok: dlerror text, probe reason, plugin error message
  std::string library_path;  // the resolved path (or the bare soname)
  std::string plugin_name, plugin_version, plugin_abi;  // from the plugin table, when it was read
  int32_t probe_score = 0;
  std::string probe_reason;
  uint32_t device_count = 0;
  const kiln_plugin_api* api = nullptr;  // set when status == ok
};

// The library a manifest names: absolute paths stay, paths with a '/' are relative to the
// manifest's directory, anything else is a bare soname for the system search (returned as is).
std::string resolve_library(const std::string& manifest_path, const std::string& library);

// Loads, negotiates, probes, initializes (with `options_toml`) and counts devices. Never throws.
LoadResult load_plugin(const std::string& backend, const std::string& manifest_path, const std::string& library,
                       const std::string& options_toml);

}  // namespace kiln
