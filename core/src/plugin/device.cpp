// plugin/device.cpp - the host side of a plugin device: error conversion, locking, ownership.
#include "plugin/device.hpp"

#include <algorithm>
#include <functional>

#include "plugin/host.hpp"
#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln {

class Device::Guard {
 public:
  explicit Guard(Device& d) : scope_(d.backend_.c_str()), lock_(d.mu_, std::defer_lock) {
    if (!d.threadsafe_) lock_.lock();
  }

 private:
  PluginScope scope_;
  std::unique_lock<std::mutex> lock_;
};

namespace {

// A slot is usable when the table is present, large enough to contain it, and the slot is set.
template <typename T, typename F>
bool has_slot(const T* table, size_t size_upto, F T::*slot) {
  return table && table->struct_size >= size_upto && table->*slot != nullptr;
}
#define KILN_HAS_SLOT(table, T, slot) has_slot(table, KILN_SIZE_UPTO(T, slot), &T::slot)

// Slots that cannot report (close, free, unload) run in destructors and noexcept paths: an
// exception escaping them is logged, never allowed to reach std::terminate.
template <typename F>
void plugin_call_noexcept(const std::string& device, const char* slot, F&& f) noexcept {
  try {
    plugin_call(slot, f);
  } catch (const std::exception& e) {
    try {
      log_line("kiln: " + device + ": " + e.what());
    } catch (...) {
    }
  }
}

}  // namespace

std::shared_ptr<Device> Device::open(const std::string& backend, const kiln_plugin_api* plugin, uint32_t index) {
  std::string name = backend + ":" + std::to_string(index);
  kiln_device* dev = nullptr;
  const kiln_device_api* api = nullptr;
  {
    PluginScope scope(backend.c_str());
    throw_if_error(plugin_call("device_open", [&] { return plugin->device_open(index, &dev, &api); }), name + ": device_open failed");
  }
  if (!dev || !api) fail(ErrorCode::internal, name, ": the plugin's device_open returned no device");
  std::shared_ptr<Device> d(new Device());
  d->backend_ = backend;
  d->name_ = name;
  d->plugin_version_ = plugin->version ? plugin->version : "";
  d->dev_ = dev;
  d->api_ = api;
  // From here on the destructor closes the device, also when a check below throws.
  if (api->struct_size < KILN_SIZE_UPTO(kiln_device_api, close) || !api->close || !api->get_props || !api->get_target)
    fail(ErrorCode::internal, name, ": the plugin's device table is incomplete (struct_size ", api->struct_size, ")");
  if (api->allocator) {
    if (!KILN_HAS_SLOT(api->allocator, kiln_allocator_api, alloc) ||
        !KILN_HAS_SLOT(api->allocator, kiln_allocator_api, free) ||
        !KILN_HAS_SLOT(api->allocator, kiln_allocator_api, copy_in) ||
        !KILN_HAS_SLOT(api->allocator, kiln_allocator_api, copy_out))
      fail(ErrorCode::internal, name, ": the plugin's allocator table lacks alloc/free/copy_in/copy_out");
    d->allocator_ = api->allocator;
  }
  if (api->compiler) {
    if (!KILN_HAS_SLOT(api->compiler, kiln_compiler_api, cache_key) ||
        !KILN_HAS_SLOT(api->compiler, kiln_compiler_api, compile))
      fail(ErrorCode::internal, name, ": the plugin's compiler table lacks cache_key/compile");
    d->compiler_ = api->compiler;
  }
  if (api->runtime) {
    if (!KILN_HAS_SLOT(api->runtime, kiln_runtime_api, load) || !KILN_HAS_SLOT(api->runtime, kiln_runtime_api, launch) ||
        !KILN_HAS_SLOT(api->runtime, kiln_runtime_api, unload))
      fail(ErrorCode::internal, name, ": the plugin's runtime table lacks load/launch/unload");
    d->runtime_ = api->runtime;
  }
  if (KILN_HAS_SLOT(api->renderer, kiln_renderer_api, render)) d->renderer_ = api->renderer;

  PluginScope scope(backend.c_str());
  kiln_device_props props{};
  props.struct_size = sizeof(props);
  throw_if_error(plugin_call("get_props", [&] { return api->get_props(dev, &props); }), name + ": get_props failed");
  d->props_ = {bounded_copy(props.name), bounded_copy(props.description), bounded_copy(props.arch), bounded_copy(props.features),
               props.kind, props.flags, props.compute_units, props.memory_total, props.memory_free};
  d->threadsafe_ = (props.flags & KILN_DEVICE_THREADSAFE) != 0;
  kiln_target t{};
  t.struct_size = sizeof(t);
  throw_if_error(plugin_call("get_target", [&] { return api->get_target(dev, &t); }), name + ": get_target failed");
  Target& target = d->target_;
  target.flags = t.flags;
  target.threads = t.threads;
  for (int i = 0; i < 3; ++i) target.global_max[i] = t.global_max[i], target.local_max[i] = t.local_max[i];
  target.local_prod_max = t.local_prod_max;
  target.max_vector_width = t.max_vector_width;
  target.shared_max = t.shared_max;
  target.dtypes = t.dtypes;
  target.ops[0] = t.ops[0];
  target.ops[1] = t.ops[1];
  target.source_format = bounded_copy(t.source_format);
  target.l1d_bytes = t.l1d_bytes;  // 0 from a plugin that predates them (t is zeroed)
  target.l2_bytes = t.l2_bytes;
  target.vector_registers = t.vector_registers;  // 0 likewise
  target.fma_pipes = t.fma_pipes;
  target.storage_dtypes = t.storage_dtypes;  // 0 likewise: half types emulated with integers
  return d;
}

Device::~Device() {
  if (api_ && dev_) {
    PluginScope scope(backend_.c_str());
    plugin_call_noexcept(name_, "close", [&] { api_->close(dev_); });
  }
}

void Device::unsupported(const char* what) const {
  fail(ErrorCode::unimplemented, name_, ": the ", backend_, " backend has no ", what);
}

kiln_buffer* Device::alloc(uint64_t bytes, uint32_t flags) {
  if (!allocator_) unsupported("allocator");
  kiln_alloc_params params{sizeof(params), flags, 0};
  kiln_buffer* out = nullptr;
  Guard g(*this);
  throw_if_error(plugin_call("alloc", [&] { return allocator_->alloc(dev_, bytes, &params, &out); }), name_ + ": alloc(" + std::to_string(bytes) + " bytes)");
  if (!out) fail(ErrorCode::internal, name_, ": alloc returned no buffer");
  return out;
}

void Device::free(kiln_buffer* buffer) noexcept {
  if (!buffer || !allocator_) return;
  Guard g(*this);
  plugin_call_noexcept(name_, "free", [&] { allocator_->free(dev_, buffer); });
}

void Device::copy_in(kiln_buffer* dst, uint64_t offset, const void* src, uint64_t n) {
  if (!allocator_) unsupported("allocator");
  Guard g(*this);
  throw_if_error(plugin_call("copy_in", [&] { return allocator_->copy_in(dev_, dst, offset, src, n); }), name_ + ": copy_in");
}

void Device::copy_out(void* dst, const kiln_buffer* src, uint64_t offset, uint64_t n) {
  if (!allocator_) unsupported("allocator");
  Guard g(*this);
  throw_if_error(plugin_call("copy_out", [&] { return allocator_->copy_out(dev_, dst, src, offset, n); }), name_ + ": copy_out");
}

bool Device::has_device_copy() const { return KILN_HAS_SLOT(allocator_, kiln_allocator_api, copy); }
bool Device::has_peer_copy() const { return KILN_HAS_SLOT(allocator_, kiln_allocator_api, copy_peer); }
bool Device::has_host_memory() const {
  return KILN_HAS_SLOT(allocator_, kiln_allocator_api, host_address) && KILN_HAS_SLOT(allocator_, kiln_allocator_api, wrap_host);
}

void* Device::host_address(const kiln_buffer* buffer) {
  if (!has_host_memory()) unsupported("host memory (host_address)");
  Guard g(*this);
  void* address = nullptr;
  throw_if_error(plugin_call("host_address", [&] { return allocator_->host_address(dev_, buffer, &address); }),
                 name_ + ": host_address");
  return address;
}

kiln_buffer* Device::wrap_host(void* address, uint64_t bytes) {
  if (!has_host_memory()) unsupported("host memory (wrap_host)");
  Guard g(*this);
  kiln_buffer* buffer = nullptr;
  try {
    throw_if_error(plugin_call("wrap_host", [&] { return allocator_->wrap_host(dev_, address, bytes, &buffer); }),
                   name_ + ": wrap_host");
  } catch (const Error& e) {
    if (e.code() == ErrorCode::invalid_argument) return nullptr;  // an address the kernels cannot use: copy
    throw;
  }
  return buffer;
}

void Device::copy_from_peer(kiln_buffer* dst, uint64_t dst_off, Device& src_device, const kiln_buffer* src, uint64_t src_off,
                            uint64_t n) {
  if (!has_peer_copy()) unsupported("copies between devices (copy_peer)");
  if (src_device.backend_ != backend_ || &src_device == this)
    fail(ErrorCode::invalid_argument, name_, ": copy_peer from ", src_device.name_,
         ", which is not another device of the same backend; copy through the host instead");
  // both devices are in use: locked in address order, so two copies in opposite directions cannot
  // each hold one and wait for the other
  Device* first = std::min(this, &src_device, std::less<Device*>());
  Device* second = first == this ? &src_device : this;
  Guard g1(*first), g2(*second);
  throw_if_error(plugin_call("copy_peer", [&] { return allocator_->copy_peer(dev_, dst, dst_off, src_device.dev_, src, src_off, n); }),
                 name_ + ": copy from " + src_device.name_);
}

void Device::copy(kiln_buffer* dst, uint64_t dst_off, const kiln_buffer* src, uint64_t src_off, uint64_t n) {
  if (!has_device_copy()) unsupported("device-to-device copy");
  Guard g(*this);
  throw_if_error(plugin_call("copy", [&] { return allocator_->copy(dev_, dst, dst_off, src, src_off, n); }), name_ + ": copy");
}

const std::string& Device::compiler_cache_key() {
  if (!compiler_) unsupported("compiler");
  std::call_once(cache_key_once_, [&] {
    StringSink key;
    Guard g(*this);
    throw_if_error(plugin_call("cache_key", [&] { return compiler_->cache_key(dev_, key.sink()); }), name_ + ": compiler cache_key");
    cache_key_ = std::move(key.str());
  });
  return cache_key_;
}

std::string Device::compile(const std::string& source, const std::string& entry) {
  if (!compiler_) unsupported("compiler");
  kiln_compile_params params{sizeof(params), source.data(), source.size(), entry.c_str(), nullptr};
  StringSink binary, log;
  Guard g(*this);
  throw_if_error(plugin_call("compile", [&] { return compiler_->compile(dev_, &params, binary.sink(), log.sink()); }), name_ + ": compiling " + entry);
  return std::move(binary.str());
}

bool Device::has_compile_many() const { return KILN_HAS_SLOT(compiler_, kiln_compiler_api, compile_many); }

std::string Device::compile_many(const std::vector<std::pair<std::string, std::string>>& kernels) {
  if (!has_compile_many()) unsupported("compile_many");
  std::vector<kiln_compile_params> params;
  params.reserve(kernels.size());
  for (const auto& [source, entry] : kernels)
    params.push_back({sizeof(kiln_compile_params), source.data(), source.size(), entry.c_str(), nullptr});
  std::vector<const kiln_compile_params*> ptrs;
  for (const kiln_compile_params& p : params) ptrs.push_back(&p);
  StringSink binary, log;
  Guard g(*this);
  throw_if_error(plugin_call("compile_many", [&] { return compiler_->compile_many(dev_, ptrs.data(), static_cast<uint32_t>(ptrs.size()), binary.sink(), log.sink()); }),
                 cat(name_, ": compiling ", kernels.size(), " kernels together"));
  return std::move(binary.str());
}

std::shared_ptr<Program> Device::load(const std::string& binary, const std::string& entry) {
  if (!runtime_) unsupported("runtime");
  kiln_program* handle = nullptr;
  {
    Guard g(*this);
    throw_if_error(plugin_call("load", [&] { return runtime_->load(dev_, binary.data(), binary.size(), entry.c_str(), &handle); }),
                   name_ + ": loading " + entry);
  }
  if (!handle) fail(ErrorCode::internal, name_, ": load returned no program");
  return std::shared_ptr<Program>(new Program(shared_from_this(), handle, entry));
}

void Device::unload(kiln_program* program) noexcept {
  Guard g(*this);
  plugin_call_noexcept(name_, "unload", [&] { runtime_->unload(dev_, program); });
}

Program::~Program() { device_->unload(handle_); }

double Device::launch(Program& program, std::span<kiln_buffer* const> buffers, std::span<const uint64_t> offsets,
                      std::span<const int64_t> values, const uint32_t global[3], const uint32_t local[3], bool wait) {
  if (&program.device() != this)
    fail(ErrorCode::invalid_argument, name_, ": launch of a program loaded on ", program.device().name());
  if (!offsets.empty() && offsets.size() != buffers.size())
    fail(ErrorCode::invalid_argument, name_, ": launch of ", program.entry(), " with ", buffers.size(), " buffers but ",
         offsets.size(), " offsets");
  double elapsed = 0;
  kiln_launch_params p{sizeof(kiln_launch_params),
                       buffers.data(),
                       offsets.empty() ? nullptr : offsets.data(),
                       static_cast<uint32_t>(buffers.size()),
                       static_cast<uint32_t>(values.size()),
                       values.data(),
                       {global[0], global[1], global[2]},
                       {local[0], local[1], local[2]},
                       wait ? KILN_LAUNCH_WAIT : 0u,
                       0,
                       &elapsed};
  kiln_error* e;
  {
    Guard g(*this);
    e = plugin_call("launch", [&] { return runtime_->launch(dev_, program.handle(), &p); });
  }
  if (e) throw_if_error(e, name_ + ": launching " + program.entry());
  return wait ? elapsed : 0.0;
}

bool Device::has_launch_many() const { return KILN_HAS_SLOT(runtime_, kiln_runtime_api, launch_many); }

void Device::launch_many(std::span<kiln_program* const> programs, std::span<const kiln_launch_params* const> params) {
  if (!has_launch_many()) unsupported("launch_many");
  if (programs.size() != params.size())
    fail(ErrorCode::invalid_argument, name_, ": launch_many of ", programs.size(), " programs with ", params.size(), " parameter packs");
  if (programs.empty()) return;
  kiln_error* e;
  {
    Guard g(*this);
    e = plugin_call("launch_many", [&] {
      return runtime_->launch_many(dev_, programs.data(), params.data(), static_cast<uint32_t>(programs.size()));
    });
  }
  if (e) throw_if_error(e, name_ + ": launching " + std::to_string(programs.size()) + " kernels");
}

std::string Device::render(const kiln_lir& kernel) {
  if (!renderer_) unsupported("renderer");
  StringSink source;
  Guard g(*this);
  throw_if_error(plugin_call("render", [&] { return renderer_->render(dev_, &kernel, source.sink()); }), name_ + ": rendering " +
                                                                       (kernel.name ? kernel.name : "a kernel"));
  return std::move(source.str());
}

void Device::synchronize() {
  if (!api_->synchronize) return;
  Guard g(*this);
  throw_if_error(plugin_call("synchronize", [&] { return api_->synchronize(dev_); }), name_ + ": synchronize");
}

}  // namespace kiln
