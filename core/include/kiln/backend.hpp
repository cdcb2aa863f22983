// kiln/backend.hpp - the host side of backend plugins, for programs that check or drive a plugin
// directly instead of through Tensor: the conformance kit (sdk/conformance, `kiln test`) and a
// backend author's own harness.
//
// Everything here goes through the process-wide registry that Tensor programs use (kiln/device.hpp
// for the device strings and how backends are found), so a device opened here is the very device
// Tensor programs run on. The types are handles and plain values: they name no internal type of
// the core, and the plugin's objects (kiln_buffer, kiln_program, kiln_plugin_api, ...) are the C
// ABI's, from the SDK's kiln/plugin.h, which a caller includes to use them. Failures are
// kiln::Error: a plugin's error keeps the plugin's code, with a message prefixed by the device name
// ("cpu:0: ..."); a compile error's message carries the compiler's log.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/device_caps.hpp"
#include "kiln/dtype.hpp"
#include "kiln/error.hpp"

// The C ABI's objects (sdk/include/kiln/plugin.h), opaque here.
struct kiln_buffer;
struct kiln_error;
struct kiln_host_api;
struct kiln_launch_params;
struct kiln_plugin_api;
struct kiln_program;
struct kiln_sink;

namespace kiln {
class UOp;
}

namespace kiln::backend {

// ---- manifests and the registry

// A backend manifest as kiln reads it (docs/devices.md has the format).
struct ManifestInfo {
  std::string path;     // as given
  std::string name;     // backend.name, else the file's stem
  std::string library;  // backend.library as written
  std::string error;    // the first error, "file:line:col: error: message"; "" when the manifest is valid
  bool ok() const { return error.empty(); }
};
// Reads and validates the manifest at `path`. Never throws: every problem is in `error`.
ManifestInfo read_manifest(const std::string& path);

// What the process-wide registry made of one backend (what `kiln list` shows).
struct BackendState {
  std::string name;
  std::string status;        // "ok", "unavailable", "load-error", "abi-mismatch", ... (as `kiln list` prints)
  std::string reason;        // why it is not ok ("" when ok)
  std::string manifest;      // the manifest's path
  std::string library_path;  // the library as resolved (a path, or a bare soname)
  uint32_t device_count = 0;
  const kiln_plugin_api* api = nullptr;  // the plugin's table, when ok
  std::string options_toml;  // the effective options (manifest and user config) as the plugin gets them
  bool ok() const { return status == "ok"; }
  bool unavailable() const { return status == "unavailable"; }
};
// The backend called `name`, loading it (library, probe, initialize) if nothing has yet; nullopt
// when no manifest names it. Never throws for what the plugin does: that is the status.
std::optional<BackendState> backend_state(std::string_view name);

// KILN_BACKENDS as the process-wide registry read it when it set itself up (the first kiln call
// that needed a device; this call sets it up too); nullopt when it was unset.
std::optional<std::string> registry_backends();

// ---- the host services a plugin's entry point receives

// The host's table (valid for the life of the process): what kiln_plugin_entry gets in
// kiln_entry_args.host.
const kiln_host_api* host_api();
// The message of a kiln_error a plugin returned ("" for NULL); frees the error.
std::string take_error_message(kiln_error* error);
// When `error` is not NULL: frees it and throws kiln::Error with the plugin's code and
// "<context>: <message>".
void throw_if_error(kiln_error* error, std::string_view context);
// A host sink (the kiln_sink a plugin's slot writes its text into: a probe reason, a compile log)
// that collects into a string. Not copyable: the sink points at this object.
class StringSink {
 public:
  StringSink();
  ~StringSink();
  StringSink(const StringSink&) = delete;
  StringSink& operator=(const StringSink&) = delete;
  kiln_sink* sink();
  const std::string& str() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `s` as a TOML basic string (double quotes, escapes; no tab or newline left in it): how the host
// writes the option values it hands plugins. kiln::sdk::Options reads it back.
std::string toml_quote(std::string_view s);

// ---- devices (DeviceProps and TargetCaps: kiln/device_caps.hpp)

// The LIR dtype (KILN_LIR_DTYPE_*) kiln's kernels hold `dtype` in; KILN_LIR_DTYPE_COUNT when it
// has none (index). float16 and bfloat16 have theirs, though the core emulates them on a target
// that lacks them.
uint32_t lir_dtype(DType dtype);

class Device;

// A kernel loaded on a device (Device::load, Device::kernel). A handle: copies share it; the
// kernel unloads when the last one goes, and it keeps its device open until then. A
// default-constructed one is empty: using it throws kiln::Error (failed_precondition).
class Program {
 public:
  const std::string& entry() const;
  kiln_program* handle() const;  // the plugin's, for kiln_launch_params and launch_many

 private:
  friend class Device;
  struct Impl;
  const Impl& impl() const;  // throws when empty
  std::shared_ptr<Impl> impl_;
};

// A kernel kiln's code generator made for a device: its source, launch geometry and value slots.
struct KernelSource {
  std::string name;    // the entry point
  std::string source;  // as the plugin's renderer wrote it
  uint32_t n_buffers = 0;
  uint32_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  std::vector<std::string> var_names;  // the kernel's variables, in value-slot order
};
// KernelSource compiled and loaded.
struct Kernel : KernelSource {
  Program program;
};

// An open device of a backend plugin. A handle: copies share the one device the registry keeps
// open per name. Calls are serialised unless the plugin says the device is thread-safe.
class Device {
 public:
  // "backend[:index]" or an alias; "" is the default device. Throws kiln::Error: not_found
  // (unknown backend or index; the message lists the devices), unavailable (the backend is not
  // usable here; says why), or the plugin's error from device_open.
  static Device open(const std::string& device);

  const std::string& name() const;  // canonical: "cpu:0"
  const std::string& backend() const;
  const DeviceProps& props() const;
  const TargetCaps& target() const;
  bool threadsafe() const;  // KILN_DEVICE_THREADSAFE

  // -- memory. Free each buffer exactly once. alloc: flags are KILN_ALLOC_*; out of memory is
  // resource_exhausted, a device without memory (an offline compiler) unavailable.
  kiln_buffer* alloc(uint64_t bytes, uint32_t flags = 0);
  void free(kiln_buffer* buffer) noexcept;
  void copy_in(kiln_buffer* dst, uint64_t offset, const void* src, uint64_t n);
  void copy_out(void* dst, const kiln_buffer* src, uint64_t offset, uint64_t n);
  bool has_device_copy() const;  // the optional allocator slot copy
  void copy(kiln_buffer* dst, uint64_t dst_off, const kiln_buffer* src, uint64_t src_off, uint64_t n);
  bool has_peer_copy() const;  // the optional allocator slot copy_peer
  // Into `dst` on this device from `src` on `src_device`, another device of the same backend
  // (else invalid_argument).
  void copy_from_peer(kiln_buffer* dst, uint64_t dst_off, Device& src_device, const kiln_buffer* src, uint64_t src_off,
                      uint64_t n);
  // The optional allocator slots host_address and wrap_host (both or neither), for devices whose
  // buffers are host memory: a buffer's address, and a buffer over host memory the caller owns
  // and keeps alive until it frees the buffer (null when the plugin refuses the address as
  // invalid_argument, e.g. its alignment).
  bool has_host_memory() const;
  void* host_address(const kiln_buffer* buffer);
  kiln_buffer* wrap_host(void* address, uint64_t bytes);

  // -- the plugin's compiler and runtime. compile: a compile error is invalid_argument with the log.
  const std::string& compiler_cache_key();  // asked once
  std::string compile(const std::string& source, const std::string& entry);
  bool has_compile_many() const;  // the optional compiler slot compile_many
  // One binary for several (source, entry) pairs with distinct entries; load it once per entry.
  std::string compile_many(const std::vector<std::pair<std::string, std::string>>& kernels);
  Program load(const std::string& binary, const std::string& entry);
  // `offsets` is empty (all 0) or one per buffer; `values` fill the kernel's value slots. Returns
  // the elapsed seconds when `wait`, else 0.
  double launch(const Program& program, std::span<kiln_buffer* const> buffers, std::span<const uint64_t> offsets,
                std::span<const int64_t> values, const uint32_t global[3], const uint32_t local[3], bool wait);
  bool has_launch_many() const;  // the optional runtime slot launch_many
  // programs[i] (loaded on this device) with *params[i], in order, none waiting; the caller fills
  // the parameter packs, struct_size included.
  void launch_many(std::span<kiln_program* const> programs, std::span<const kiln_launch_params* const> params);
  void synchronize();

  // -- kiln's code generator for this device's target. `ast` is a kernel of a schedule
  // (ExecItem::ast of Tensor::schedule(), not a copy). Both throw kiln::Error: unimplemented when
  // the plugin has no renderer, else what lowering, rendering or compiling throws.
  bool has_renderer() const;
  // Lowered and rendered, not compiled.
  KernelSource generate(const UOp& ast);
  // Lowered, rendered, compiled and loaded through the process's program cache, as a Tensor
  // program gets it (a second call with the same kernel compiles nothing).
  Kernel kernel(const UOp& ast);

 private:
  Device() = default;  // only open() makes one: a Device always names an open device
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// ---- child processes (running a plugin where its crash or hang cannot end the caller)

// now + `seconds` on the steady clock.
std::chrono::steady_clock::time_point deadline_after(double seconds);
// Waits until `fd` is readable (data or end of file): true; false once `deadline` has passed.
bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline);
// "SIGSEGV", or "signal N" for one without a name.
std::string signal_name(int sig);

}  // namespace kiln::backend
