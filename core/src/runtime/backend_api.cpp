// runtime/backend_api.cpp - kiln/backend.hpp: the public host interface over the plugin layer
// (registry, devices, host services), codegen (lowering and rendering a kernel) and the program
// cache. It lives in the runtime because that is the lowest layer that sees all three; it adds no
// behaviour of its own. Props and caps are the core's own records (kiln/device_caps.hpp), so they
// are handed out as they are, not copied.
#include "kiln/backend.hpp"

#include <algorithm>

#include "codegen/lir.hpp"
#include "codegen/pipeline.hpp"
#include "kiln/plugin.h"
#include "plugin/device.hpp"
#include "plugin/diagnostic.hpp"
#include "plugin/host.hpp"
#include "plugin/isolate.hpp"
#include "plugin/manifest.hpp"
#include "plugin/registry.hpp"
#include "runtime/program_cache.hpp"
#include "support/check.hpp"
#include "support/text.hpp"

namespace kiln::backend {

ManifestInfo read_manifest(const std::string& path) {
  Manifest m = kiln::read_manifest(path);
  return {path, m.name, m.library, m.first_error()};
}

std::optional<BackendState> backend_state(std::string_view name) {
  const BackendRecord* r = Registry::get().backend(name);
  if (!r) return std::nullopt;
  return BackendState{r->name,         status_name(r->status), r->reason, r->manifest, r->library_path,
                      r->device_count, r->api,                 options_to_toml(r->options)};
}

std::optional<std::string> registry_backends() { return Registry::get().settings().backends; }

const kiln_host_api* host_api() { return kiln::host_api(); }
std::string take_error_message(kiln_error* error) { return kiln::take_error_message(error); }
void throw_if_error(kiln_error* error, std::string_view context) { kiln::throw_if_error(error, context); }
struct StringSink::Impl {
  kiln::StringSink sink;
};
StringSink::StringSink() : impl_(std::make_unique<Impl>()) {}
StringSink::~StringSink() = default;
kiln_sink* StringSink::sink() { return impl_->sink.sink(); }
const std::string& StringSink::str() const { return impl_->sink.str(); }

std::string toml_quote(std::string_view s) { return quote(s); }

uint32_t lir_dtype(DType dtype) { return kiln::lir_dtype(dtype.scalar()); }

// ---- Program

struct Program::Impl {
  std::shared_ptr<kiln::Program> program;
};

const Program::Impl& Program::impl() const {
  if (!impl_) fail(ErrorCode::failed_precondition, "kiln::backend::Program: empty (no kernel was loaded into it)");
  return *impl_;
}

const std::string& Program::entry() const { return impl().program->entry(); }
kiln_program* Program::handle() const { return impl().program->handle(); }

// ---- Device

struct Device::Impl {
  std::shared_ptr<kiln::Device> device;  // the registry's: it keeps the device open anyway
};

Device Device::open(const std::string& name) {
  auto impl = std::make_shared<Impl>();
  impl->device = Registry::get().open(name);
  Device d;
  d.impl_ = std::move(impl);
  return d;
}

const std::string& Device::name() const { return impl_->device->name(); }
const std::string& Device::backend() const { return impl_->device->backend(); }
const DeviceProps& Device::props() const { return impl_->device->props(); }
const TargetCaps& Device::target() const { return impl_->device->target(); }
bool Device::threadsafe() const { return impl_->device->threadsafe(); }

kiln_buffer* Device::alloc(uint64_t bytes, uint32_t flags) { return impl_->device->alloc(bytes, flags); }
void Device::free(kiln_buffer* buffer) noexcept { impl_->device->free(buffer); }
void Device::copy_in(kiln_buffer* dst, uint64_t offset, const void* src, uint64_t n) {
  impl_->device->copy_in(dst, offset, src, n);
}
void Device::copy_out(void* dst, const kiln_buffer* src, uint64_t offset, uint64_t n) {
  impl_->device->copy_out(dst, src, offset, n);
}
bool Device::has_device_copy() const { return impl_->device->has_device_copy(); }
void Device::copy(kiln_buffer* dst, uint64_t dst_off, const kiln_buffer* src, uint64_t src_off, uint64_t n) {
  impl_->device->copy(dst, dst_off, src, src_off, n);
}
bool Device::has_peer_copy() const { return impl_->device->has_peer_copy(); }
void Device::copy_from_peer(kiln_buffer* dst, uint64_t dst_off, Device& src_device, const kiln_buffer* src,
                            uint64_t src_off, uint64_t n) {
  impl_->device->copy_from_peer(dst, dst_off, *src_device.impl_->device, src, src_off, n);
}
bool Device::has_host_memory() const { return impl_->device->has_host_memory(); }
void* Device::host_address(const kiln_buffer* buffer) { return impl_->device->host_address(buffer); }
kiln_buffer* Device::wrap_host(void* address, uint64_t bytes) { return impl_->device->wrap_host(address, bytes); }

const std::string& Device::compiler_cache_key() { return impl_->device->compiler_cache_key(); }
std::string Device::compile(const std::string& source, const std::string& entry) {
  return impl_->device->compile(source, entry);
}
bool Device::has_compile_many() const { return impl_->device->has_compile_many(); }
std::string Device::compile_many(const std::vector<std::pair<std::string, std::string>>& kernels) {
  return impl_->device->compile_many(kernels);
}
Program Device::load(const std::string& binary, const std::string& entry) {
  Program p;
  p.impl_ = std::make_shared<Program::Impl>(Program::Impl{impl_->device->load(binary, entry)});
  return p;
}
double Device::launch(const Program& program, std::span<kiln_buffer* const> buffers, std::span<const uint64_t> offsets,
                      std::span<const int64_t> values, const uint32_t global[3], const uint32_t local[3], bool wait) {
  return impl_->device->launch(*program.impl().program, buffers, offsets, values, global, local, wait);
}
bool Device::has_launch_many() const { return impl_->device->has_launch_many(); }
void Device::launch_many(std::span<kiln_program* const> programs, std::span<const kiln_launch_params* const> params) {
  impl_->device->launch_many(programs, params);
}
void Device::synchronize() { impl_->device->synchronize(); }

bool Device::has_renderer() const { return impl_->device->has_renderer(); }

namespace {
void fill_source(KernelSource& out, const ProgramSpec& spec, std::string source) {
  out.name = spec.name;
  out.source = std::move(source);
  out.n_buffers = spec.lir.n_buffers;
  std::copy(spec.lir.global, spec.lir.global + 3, out.global);
  std::copy(spec.lir.local, spec.lir.local + 3, out.local);
  out.var_names = spec.var_names;
}
}  // namespace

KernelSource Device::generate(const UOp& ast) {
  kiln::Device& d = *impl_->device;
  ProgramSpec spec = to_program(ast, d.target());
  KernelSource out;
  fill_source(out, spec, d.render(spec.lir.view()));
  return out;
}

Kernel Device::kernel(const UOp& ast) {
  std::shared_ptr<runtime::Kernel> k = runtime::get_kernel(impl_->device, ast);
  Kernel out;
  fill_source(out, k->spec, k->source);
  out.program.impl_ = std::make_shared<Program::Impl>(Program::Impl{k->program});
  return out;
}

// ---- child processes

std::chrono::steady_clock::time_point deadline_after(double seconds) { return kiln::deadline_after(seconds); }
bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline) { return kiln::wait_readable(fd, deadline); }
std::string signal_name(int sig) { return kiln::signal_name(sig); }

}  // namespace kiln::backend
