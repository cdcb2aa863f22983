// plugin/device.hpp - an open plugin device, as the runtime uses it.
//
// A Device wraps one kiln_device and its tables. Every failure a plugin reports becomes a
// kiln::Error with the plugin's code and a message prefixed by the device name ("cpu:0: ...").
// Calls on one Device are serialised with a mutex unless the plugin reports
// KILN_DEVICE_THREADSAFE. Devices are created by Registry::open and shared; a Program keeps its
// Device alive, and buffers must be freed before the last reference to their Device goes away.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "codegen/target.hpp"
#include "kiln/device_caps.hpp"
#include "kiln/error.hpp"
#include "kiln/plugin.h"

namespace kiln {

// Copied from kiln_device_props when the device is opened (the public record: kiln/backend.hpp
// hands it out as it is).
using DeviceProps = backend::DeviceProps;

class Device;

// A loaded kernel. Unloads itself through its device when destroyed (and keeps the device alive).
class Program {
 public:
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::string& entry() const { return entry_; }
  kiln_program* handle() const { return handle_; }
  Device& device() const { return *device_; }

 private:
  friend class Device;
  Program(std::shared_ptr<Device> device, kiln_program* handle, std::string entry)
      : device_(std::move(device)), handle_(handle), entry_(std::move(entry)) {}
  std::shared_ptr<Device> device_;
  kiln_program* handle_;
  std::string entry_;
};

class Device : public std::enable_shared_from_this<Device> {
 public:
  // Opens device `index` of a loaded plugin (Registry::open is the normal way in). Throws
  // kiln::Error when the plugin fails or its tables lack a required slot.
  static std::shared_ptr<Device> open(const std::string& backend, const kiln_plugin_api* plugin, uint32_t index);
  ~Device();  // closes the plugin device
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }  // "cpu:0"
  const std::string& backend() const { return backend_; }
  const std::string& plugin_version() const { return plugin_version_; }  // kiln_plugin_api.version
  const DeviceProps& props() const { return props_; }
  const Target& target() const { return target_; }
  bool threadsafe() const { return threadsafe_; }

  // -- allocator. Buffers are plugin handles; free each exactly once, before the device dies.
  kiln_buffer* alloc(uint64_t bytes, uint32_t flags = 0);  // flags: KILN_ALLOC_*; OOM: resource_exhausted
  void free(kiln_buffer* buffer) noexcept;
  void copy_in(kiln_buffer* dst, uint64_t offset, const void* src, uint64_t n);
  void copy_out(void* dst, const kiln_buffer* src, uint64_t offset, uint64_t n);
  bool has_device_copy() const;
  void copy(kiln_buffer* dst, uint64_t dst_off, const kiln_buffer* src, uint64_t src_off, uint64_t n);
  // Whether the plugin copies between two of its devices without the host (allocator copy_peer,
  // ABI 0.2), and that copy into `dst` on this device from `src` on `src_device`, which must be
  // another device of the same backend (else invalid_argument).
  bool has_peer_copy() const;
  void copy_from_peer(kiln_buffer* dst, uint64_t dst_off, Device& src_device, const kiln_buffer* src, uint64_t src_off,
                      uint64_t n);
  // Whether this device's buffers are host memory (allocator host_address and wrap_host), a
  // buffer's address (valid until it is freed; use it only while no launch uses the buffer), and
  // a buffer over `bytes` of host memory the caller keeps alive until it frees the buffer; null
  // when the plugin cannot use that address (its alignment), so the caller copies instead.
  bool has_host_memory() const;
  void* host_address(const kiln_buffer* buffer);
  kiln_buffer* wrap_host(void* address, uint64_t bytes);

  // -- compiler. The key is asked once and cached. compile() throws a kiln::Error whose message
  // carries the full compiler log on a compile error (code invalid_argument).
  const std::string& compiler_cache_key();
  std::string compile(const std::string& source, const std::string& entry);
  // Whether the plugin builds several kernels into one binary (kiln_compiler_api.compile_many),
  // and that call: `kernels` are (source, entry) pairs with distinct entries.
  bool has_compile_many() const;
  std::string compile_many(const std::vector<std::pair<std::string, std::string>>& kernels);

  // -- runtime
  std::shared_ptr<Program> load(const std::string& binary, const std::string& entry);
  // `offsets` is empty (all 0) or one per buffer. Returns the elapsed seconds when `wait`, else 0.
  // Allocates nothing; the hot path is a lock (unless threadsafe) and one plugin call.
  double launch(Program& program, std::span<kiln_buffer* const> buffers, std::span<const uint64_t> offsets,
                std::span<const int64_t> values, const uint32_t global[3], const uint32_t local[3], bool wait);
  // Whether the plugin runs several launches in one call (kiln_runtime_api.launch_many, ABI 0.2),
  // and that call: programs[i] (loaded on this device) with *params[i], in order, none waiting.
  // The caller fills the parameter packs (struct_size and all); a replay keeps them between calls.
  bool has_launch_many() const;
  void launch_many(std::span<kiln_program* const> programs, std::span<const kiln_launch_params* const> params);

  // -- renderer (optional)
  bool has_renderer() const { return renderer_ != nullptr; }
  std::string render(const kiln_lir& kernel);

  void synchronize();

 private:
  friend class Program;
  Device() = default;
  void unload(kiln_program* program) noexcept;
  [[noreturn]] void unsupported(const char* what) const;

  // Serialises plugin calls unless the device is thread-safe, and tags host->log lines.
  class Guard;

  std::string backend_, name_, plugin_version_;
  kiln_device* dev_ = nullptr;
  const kiln_device_api* api_ = nullptr;
  const kiln_allocator_api* allocator_ = nullptr;
  const kiln_compiler_api* compiler_ = nullptr;
  const kiln_runtime_api* runtime_ = nullptr;
  const kiln_renderer_api* renderer_ = nullptr;
  DeviceProps props_;
  Target target_;
  bool threadsafe_ = false;
  std::mutex mu_;
  std::once_flag cache_key_once_;
  std::string cache_key_;
};

}  // namespace kiln
