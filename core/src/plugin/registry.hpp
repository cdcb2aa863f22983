// plugin/registry.hpp - the process-wide set of backends and device selection.
//
// Discovery runs once, lazily, on the first call that needs it (thread-safe): read the user
// config, find the manifests (plugin/discovery.hpp), validate them and apply the config. A
// backend's library is loaded, probed and initialized only when something needs it: naming one
// of its devices loads that backend alone; devices(), backends() and choosing the default device
// without KILN_DEVICE or a configured default load more (see best_device()). Nothing in
// discovery or loading throws: each backend ends with a status and a reason, and one bad backend
// never hides the others. Devices are opened lazily by open() and cached (one Device per name).
//
// What a plugin does in process while being loaded (crash, exit, hang) still takes the process
// down, unless Settings::isolate_timeout_s tries it in a child first (the CLI does); a library
// user is exposed only to the backends its device choice loads.
//
// Device strings: "backend[:index]" (index 0 when omitted) or an alias from the user config;
// "" means the default device, chosen by KILN_DEVICE > [devices] default > the best usable device
// (docs/devices.md). Unknown or unusable devices throw kiln::Error that lists the available devices.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/config.hpp"
#include "plugin/device.hpp"
#include "plugin/discovery.hpp"
#include "plugin/loader.hpp"
#include "plugin/manifest.hpp"

namespace kiln {

// One manifest and what became of it (everything `kiln list/info` shows).
struct BackendRecord {
  std::string name;
  BackendStatus status = BackendStatus::not_loaded;
  std::string reason;          // why it is not ok (empty when ok)
  std::string manifest;        // the manifest's path
  std::string manifest_origin; // the search-path entry it was found through
  std::string library;         // as the manifest writes it
  std::string library_path;    // resolved (path or soname)
  std::string abi;             // the manifest's abi
  std::string plugin_abi;      // the library's, from its table ("" when not read)
  std::string version, description;
  int64_t priority = 100;
  bool enabled = true;
  std::string enabled_origin;  // manifest or config position
  bool experimental = false;
  std::vector<OptionEntry> options;  // effective options (manifest merged with user config)
  int32_t probe_score = 0;
  std::string probe_reason;
  uint32_t device_count = 0;
  std::string shadowed_by;     // for `shadowed`: the manifest that won
  std::vector<Diagnostic> diagnostics;  // the manifest's (warnings even when ok)
  const kiln_plugin_api* api = nullptr;  // when ok
  bool pending = false;  // enabled and valid, not loaded yet (status not_loaded until then)
  bool checked = false;  // tried in a child (Settings::isolate_timeout_s) and survived

  bool ok() const { return status == BackendStatus::ok; }
  // Set by discovery and never changed after, so it may be read while another thread loads this
  // record (status itself changes under the registry's load lock)
  bool is_shadowed() const { return !shadowed_by.empty(); }
};

// The default device and the rule that chose it.
struct DeviceChoice {
  std::string device;  // "cpu:0"; empty when there is no usable device
  std::string origin;  // "KILN_DEVICE", "config <file:line:col>", or why the rule chose it
};

class Registry {
 public:
  // The process-wide registry (environment settings). Never destroyed: plugins stay loaded and
  // their devices open until the process exits.
  static Registry& get();

  // A private registry (tests, `kiln list --no-load`). Shares loaded libraries with every other
  // registry in the process (a library is loaded and initialized once).
  explicit Registry(Settings settings);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // "" = the default device. Caches one Device per canonical name. Throws kiln::Error:
  // not_found (unknown backend, index or alias; lists what exists), unavailable (the backend is
  // not ok; says why), or the plugin's error from device_open.
  std::shared_ptr<Device> open(const std::string& device);

  // The canonical name a device string refers to ("fast" -> "hip:0", "cpu" -> "cpu:0"), without
  // opening it. Throws like open().
  std::string resolve(const std::string& device);
  // How many times resolve() ran (open() resolves too): tests check that launching a prepared
  // schedule resolves no device name.
  uint64_t resolve_count() const { return resolves_.load(std::memory_order_relaxed); }

  std::string default_device();   // throws not_found when there is no usable device
  DeviceChoice default_choice();  // never throws; device empty when there is none
  std::vector<std::string> devices();  // every usable device, in discovery order (loads every backend)

  // Sets one of a backend's options for this process, over the manifest's and the user config's
  // (`kiln compile --arch A` gives offline_arch this way); option.origin says where it came from.
  // The plugin receives it when it loads, so set it before anything needs the backend: throws
  // kiln::Error (failed_precondition) once the backend is loaded. False when no backend has
  // that name.
  bool set_option(std::string_view backend, OptionEntry option);

  const std::vector<BackendRecord>& backends();  // discovery order, shadowed entries included (loads every backend)
  const BackendRecord* backend(std::string_view name);  // the winning record for a name (loads that backend)
  // The records as they stand, loading nothing more: backends nothing has needed yet are
  // not_loaded (with `pending` set). For diagnostics and name lists.
  const std::vector<BackendRecord>& known_backends();
  const UserConfig& config();
  const ManifestSearch& search();
  const Settings& settings() const { return settings_; }
  // Config warnings/errors plus problems that belong to no manifest (config naming a backend that
  // does not exist). Per-manifest diagnostics are in BackendRecord::diagnostics.
  const std::vector<Diagnostic>& diagnostics();

 private:
  static constexpr const char* kNativeCpu = "cpu";  // the backend that runs kernels natively on the host

  void discover();
  void ensure_discovered() { std::call_once(discovered_, [this] { discover(); }); }
  void load(BackendRecord& r);  // loads a pending backend (once; thread-safe)
  // With isolation: tries each pending backend of `records` in a child before any of them is
  // loaded in process. A child forked after a backend's runtime started its threads may hang on
  // a lock one of them held (HSA, CUDA and PoCL do not survive fork), and a working backend
  // would be reported as crashed.
  void check_in_children(const std::vector<BackendRecord*>& records);
  void check_in_child(BackendRecord& r);
  void load_all();
  DeviceChoice best_device();
  int64_t report_debug() const;
  void report(const BackendRecord& r) const;
  std::string available_list();
  BackendRecord* find_backend(std::string_view name);  // no discovery, no loading (used during discovery)

  Settings settings_;
  std::once_flag discovered_;
  UserConfig config_;
  ManifestSearch search_;
  std::vector<BackendRecord> backends_;
  std::vector<Diagnostic> diagnostics_;
  std::mutex load_mu_;  // held while a backend loads
  std::atomic<uint64_t> resolves_{0};
  std::mutex open_mu_;
  std::vector<std::pair<std::string, std::shared_ptr<Device>>> open_devices_;
};

}  // namespace kiln
