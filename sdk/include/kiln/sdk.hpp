// kiln/sdk.hpp - the C++ layer for backend plugin authors (header-only, compiled into the plugin).
//
// A plugin derives from kiln::sdk::Plugin and kiln::sdk::Device, implements the virtual methods
// with ordinary C++ (std::string, spans, unique_ptr, exceptions) and ends one source file with
//
//     KILN_PLUGIN(MyPlugin)
//
// which defines the only exported symbol, extern "C" kiln_plugin_entry, and the static C tables
// of kiln/plugin.h. Every table slot is a noexcept trampoline that checks the host's struct_size,
// converts sinks and arrays, and catches every exception: kiln::sdk::Error becomes its code,
// std::bad_alloc RESOURCE_EXHAUSTED, anything else INTERNAL with what(). Nothing C++ crosses the
// boundary, so the plugin may use any compiler and standard library.
//
// Requirements on MyPlugin: derived from kiln::sdk::Plugin, default-constructible, with
//     static constexpr const char* plugin_name = "mybackend";   // = the manifest's backend.name
//     static constexpr const char* plugin_version = "1.2.3";
// The plugin object is created on the first probe and never destroyed (plugins are never unloaded,
// and running destructors at process exit would race with device threads).
//
// Handles: the SDK gives the ABI's opaque types their C++ definitions inside the plugin. Every
// plugin device, buffer and program derives from kiln_device / kiln_buffer / kiln_program (the
// latter two are spelled kiln::sdk::Buffer and kiln::sdk::Program), so handles are plain pointers
// to plugin objects and a static_cast recovers the plugin's own type.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/plugin.h"
#include "kiln/sdk/error.hpp"
#include "kiln/sdk/lir.hpp"
#include "kiln/sdk/options.hpp"

// Definitions of the opaque ABI handle types, valid inside a plugin built with this SDK.
struct kiln_device {
  virtual ~kiln_device() = default;
};
struct kiln_buffer {
  virtual ~kiln_buffer() = default;
};
struct kiln_program {
  virtual ~kiln_program() = default;
};

namespace kiln::sdk {

using Buffer = ::kiln_buffer;    // a device allocation; deleted by the SDK when the host frees it
using Program = ::kiln_program;  // a loaded kernel; deleted by the SDK when the host unloads it

namespace detail {
inline const kiln_host_api* g_host = nullptr;  // set once by kiln_plugin_entry
}

// Logs through the host (plugins never write to stdout/stderr). Level: KILN_LOG_*.
inline void log(int32_t level, std::string_view message) noexcept {
  if (detail::g_host && detail::g_host->log) detail::g_host->log(level, message.data(), message.size());
}

// What `kiln devices` shows. Strings are copied by the SDK and kept alive until the device closes.
struct DeviceProps {
  std::string name, description, arch, features;
  uint32_t kind = KILN_DEVICE_KIND_CPU;
  uint32_t flags = 0;  // KILN_DEVICE_*
  uint64_t memory_total = 0, memory_free = 0;
  uint32_t compute_units = 0;
};

// What the core's code generator may emit for the device (see kiln_target in plugin.h).
struct Target {
  uint32_t flags = 0;  // KILN_TARGET_*
  uint32_t threads = 1;
  std::array<uint32_t, 3> global_max{0x7fffffffu, 0xffffu, 0xffffu};
  std::array<uint32_t, 3> local_max{1, 1, 1};
  uint32_t local_prod_max = 1;
  uint32_t max_vector_width = 1;
  uint64_t shared_max = 0;
  uint32_t dtypes = 0;               // bit KILN_LIR_DTYPE_x
  std::array<uint64_t, 2> ops{};     // bit KILN_LIR_OP_x
  std::string source_format;         // what render() produces
  uint64_t l1d_bytes = 0, l2_bytes = 0;  // a worker's core's data caches (CPU-style targets); 0 = unknown
  uint32_t vector_registers = 0, fma_pipes = 0;  // a worker's vector registers and FMA pipes (CPU-style targets); 0 = unknown
  // bit KILN_LIR_DTYPE_x: dtypes loaded, stored and converted to and from float32 natively but not
  // computed in (kiln_target.storage_dtypes); the core computes them in float32
  uint32_t storage_dtypes = 0;

  void add_dtype(uint32_t dtype) { dtypes |= 1u << dtype; }
  // The ops are an allow-list: name what the renderer handles (add_ops with the sets of
  // kiln/sdk/lir.hpp and single ops), so an op it has never heard of is not claimed. The core
  // decomposes what is missing or refuses the kernel with an error naming the op.
  void add_ops(const LirOpSet& set) {
    ops[0] |= set.bits()[0];
    ops[1] |= set.bits()[1];
  }
  void add_op(LirOp op) { add_ops(LirOpSet{op}); }
  void add_op(uint32_t op) { ops[op / 64] |= uint64_t{1} << (op % 64); }
  void remove_op(uint32_t op) { ops[op / 64] &= ~(uint64_t{1} << (op % 64)); }
  // Every op this SDK knows: for test fixtures only (a renderer must list what it supports).
  void add_all_ops() {
    for (uint32_t op = 1; op < KILN_LIR_OP_COUNT; ++op) add_op(op);
  }
};

struct CompileRequest {
  std::string_view source;   // in the target's source format
  std::string_view entry;    // the kernel's function name
  std::string_view options;  // extra compiler options from the host ("" if none)
};

// For compile_many() in a C-family language: the sources one after another (their preludes repeat
// identical macro and type definitions, which C and C++ allow), and the entries as "'a', 'b'" for
// messages. Every request must ask for the same options (else INVALID_ARGUMENT).
struct JoinedSources {
  std::string source, entries;
  std::string_view options;
};
inline JoinedSources join_sources(std::span<const CompileRequest> requests) {
  JoinedSources j;
  if (!requests.empty()) j.options = requests[0].options;
  for (const CompileRequest& r : requests) {
    if (r.options != j.options)
      throw Error{KILN_STATUS_INVALID_ARGUMENT, "compile_many: the kernels ask for different compiler options"};
    j.source.append(r.source).append("\n");
    j.entries += (j.entries.empty() ? "'" : ", '") + std::string(r.entry) + "'";
  }
  return j;
}

// One kernel launch (kiln_launch_params). Spans are borrowed for the call.
struct Launch {
  std::span<Buffer* const> buffers;
  std::span<const uint64_t> offsets;  // empty: every offset is 0
  std::span<const int64_t> values;
  std::array<uint32_t, 3> global{1, 1, 1};
  std::array<uint32_t, 3> local{1, 1, 1};
  bool wait = false;  // KILN_LAUNCH_WAIT: finish before returning and report the elapsed time

  uint64_t offset(size_t i) const { return offsets.empty() ? 0 : offsets[i]; }
};

// An open device. Every method may throw (Error with a precise code, or anything else = INTERNAL).
// The host serialises calls on one device unless props().flags has KILN_DEVICE_THREADSAFE.
class Device : public ::kiln_device {
 public:
  virtual DeviceProps props() = 0;
  virtual Target target() = 0;

  // -- allocator. alloc(0) must return a distinct buffer. Out of memory: RESOURCE_EXHAUSTED.
  virtual std::unique_ptr<Buffer> alloc(uint64_t size, uint32_t flags) = 0;  // flags: KILN_ALLOC_*
  virtual void copy_in(Buffer& dst, uint64_t offset, std::span<const std::byte> src) = 0;
  virtual void copy_out(std::span<std::byte> dst, const Buffer& src, uint64_t offset) = 0;
  // (optional) device-to-device copies; the slot is NULL unless has_device_copy() is true.
  virtual bool has_device_copy() const { return false; }
  virtual void copy(Buffer& /*dst*/, uint64_t /*dst_offset*/, const Buffer& /*src*/, uint64_t /*src_offset*/,
                    uint64_t /*n*/) {
    throw Error{KILN_STATUS_UNIMPLEMENTED, "device-to-device copy is not implemented"};
  }
  // (optional) a copy from a buffer of another device of this plugin (`src_device`) into one of
  // this device's, without the host staging it; the slot is NULL unless has_peer_copy() is true.
  virtual bool has_peer_copy() const { return false; }
  virtual void copy_from_peer(Buffer& /*dst*/, uint64_t /*dst_offset*/, Device& /*src_device*/, const Buffer& /*src*/,
                              uint64_t /*src_offset*/, uint64_t /*n*/) {
    throw Error{KILN_STATUS_UNIMPLEMENTED, "copies between devices are not implemented"};
  }
  // (optional) for devices whose buffers are ordinary host memory: a buffer's address, and a
  // buffer over host memory the host owns (freeing it must not free the memory; an address the
  // kernels cannot use is INVALID_ARGUMENT). The slots are NULL unless has_host_memory() is true.
  virtual bool has_host_memory() const { return false; }
  virtual void* host_address(const Buffer& /*buffer*/) {
    throw Error{KILN_STATUS_UNIMPLEMENTED, "this device's buffers are not host memory"};
  }
  virtual std::unique_ptr<Buffer> wrap_host(void* /*address*/, uint64_t /*size*/) {
    throw Error{KILN_STATUS_UNIMPLEMENTED, "this device's buffers are not host memory"};
  }

  // -- compiler. cache_key() changes whenever the same source could compile differently.
  // compile() returns the binary; warnings may go to `log`. A compile error throws
  // Error{KILN_STATUS_INVALID_ARGUMENT, <the full compiler log>}.
  virtual std::string cache_key() = 0;
  virtual std::string compile(const CompileRequest& request, std::string& log) = 0;
  // (optional) several kernels (distinct entries) into one binary that load() accepts with any of
  // their entries; the slot is NULL unless has_compile_many() is true. Worth it when a build has
  // a large fixed cost: the host then builds a schedule's new kernels in one call.
  virtual bool has_compile_many() const { return false; }
  virtual std::string compile_many(std::span<const CompileRequest> /*requests*/, std::string& /*log*/) {
    throw Error{KILN_STATUS_UNIMPLEMENTED, "compile_many is not implemented"};
  }

  // -- runtime. launch() returns the elapsed seconds when launch.wait (else anything, e.g. 0).
  virtual std::unique_ptr<Program> load(std::string_view binary, std::string_view entry) = 0;
  virtual double launch(Program& program, const Launch& launch) = 0;
  // (optional) launches[i] of programs[i], in order, none waiting (launch.wait is false): the slot
  // is NULL unless has_launch_many() is true. Worth it when a device can submit several kernels
  // at once (one flush) or run them back to back cheaper than one call each. The default runs
  // them one by one, which a plugin may keep and extend (submit, then flush once).
  virtual bool has_launch_many() const { return false; }
  virtual void launch_many(std::span<Program* const> programs, std::span<const Launch> launches) {
    for (size_t i = 0; i < launches.size(); ++i) launch(*programs[i], launches[i]);
  }

  // -- renderer (optional): the slot is NULL unless has_renderer() is true.
  virtual bool has_renderer() const { return false; }
  virtual std::string render(const kiln_lir& /*kernel*/) {
    throw Error{KILN_STATUS_UNIMPLEMENTED, "this device has no renderer"};
  }

  virtual void synchronize() {}

 private:
  friend struct Slots;
  // Props and target handed to the host; kept here so their strings outlive the call.
  DeviceProps props_cache_;
  Target target_cache_;
};

struct Probe {
  int32_t score = 1;   // 0 = unusable here; higher wins when the host picks a default device
  std::string reason;  // one line: "2 cores, clang-15 found", "libamdhip64.so.5 not found"
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  // Cheap: no contexts, no device memory.
  virtual Probe probe() { return {}; }
  // The probe as the host calls it, with the options initialize() will get: override it when
  // the options decide whether the backend can work here (offline targets named by an option).
  // Bad options: throw Error{KILN_STATUS_INVALID_ARGUMENT, ...}, as initialize() would.
  virtual Probe probe_with_options(const Options& /*options*/) { return probe(); }
  // Once, after a successful probe, with the merged [backend.options]. Reject bad values with
  // Error{KILN_STATUS_INVALID_ARGUMENT, ...} (the host shows the backend as config-error).
  virtual void initialize(const Options& /*options*/) {}
  virtual uint32_t device_count() = 0;
  virtual std::unique_ptr<Device> open(uint32_t index) = 0;
  virtual void shutdown() {}
};

// ---------------------------------------------------------------------------------------------
// Everything below implements KILN_PLUGIN; plugin authors need not read it.

// Checks that a host-provided parameter pack is large enough to hold `field`.
#define KILN_SDK_REQUIRE(p, T, field) ::kiln::sdk::Slots::require_size(p, KILN_SIZE_UPTO(T, field), #T)

struct Slots {
  static kiln_error* make_error(kiln_status code, std::string_view message) noexcept {
    return detail::g_host->error_new(code, message.data(), message.size());
  }

  // Runs `body`, turning any exception into a host-made error.
  template <typename F>
  static kiln_error* guard(F&& body) noexcept {
    try {
      body();
      return nullptr;
    } catch (const Error& e) {
      return make_error(e.code, e.message);
    } catch (const std::bad_alloc&) {
      return make_error(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory (std::bad_alloc inside the plugin)");
    } catch (const std::exception& e) {
      return make_error(KILN_STATUS_INTERNAL, e.what());
    } catch (...) {
      return make_error(KILN_STATUS_INTERNAL, "the plugin threw a non-standard exception");
    }
  }

  static void append(kiln_sink* sink, std::string_view data) {
    if (!sink || !sink->append || data.empty()) return;
    kiln_status s = sink->append(sink->ctx, data.data(), data.size());
    if (s != KILN_STATUS_OK) throw Error{s, "the host's output sink refused " + std::to_string(data.size()) + " bytes"};
  }

  template <typename T>
  static void require_size(const T* p, size_t needed, const char* type_name) {
    if (!p) throw Error{KILN_STATUS_INVALID_ARGUMENT, std::string(type_name) + " is NULL"};
    if (p->struct_size < needed)
      throw Error{KILN_STATUS_INVALID_ARGUMENT, std::string(type_name) + ".struct_size is " +
                                                    std::to_string(p->struct_size) + ", need at least " +
                                                    std::to_string(needed)};
  }

  // Copies `full` into a host-allocated out-struct, writing only within its struct_size.
  template <typename T>
  static void write_out(T* out, const T& full) {
    if (!out || out->struct_size < sizeof(size_t))
      throw Error{KILN_STATUS_INVALID_ARGUMENT, "output struct is NULL or has no struct_size"};
    size_t keep = out->struct_size;
    std::memcpy(static_cast<void*>(out), &full, keep < sizeof(T) ? keep : sizeof(T));
    out->struct_size = keep;
  }

  static Device& dev(kiln_device* d) { return *static_cast<Device*>(d); }

  // ---- device ----
  static kiln_error* get_props(kiln_device* d, kiln_device_props* out) noexcept {
    return guard([&] {
      Device& device = dev(d);
      device.props_cache_ = device.props();
      const DeviceProps& p = device.props_cache_;
      kiln_device_props full{};
      full.struct_size = sizeof(full);
      full.name = p.name.c_str();
      full.description = p.description.c_str();
      full.arch = p.arch.c_str();
      full.features = p.features.c_str();
      full.kind = p.kind;
      full.flags = p.flags;
      full.memory_total = p.memory_total;
      full.memory_free = p.memory_free;
      full.compute_units = p.compute_units;
      write_out(out, full);
    });
  }
  static kiln_error* get_target(kiln_device* d, kiln_target* out) noexcept {
    return guard([&] {
      Device& device = dev(d);
      device.target_cache_ = device.target();
      const Target& t = device.target_cache_;
      kiln_target full{};
      full.struct_size = sizeof(full);
      full.flags = t.flags;
      full.threads = t.threads;
      for (int i = 0; i < 3; ++i) full.global_max[i] = t.global_max[i], full.local_max[i] = t.local_max[i];
      full.local_prod_max = t.local_prod_max;
      full.max_vector_width = t.max_vector_width;
      full.shared_max = t.shared_max;
      full.dtypes = t.dtypes;
      full.ops[0] = t.ops[0];
      full.ops[1] = t.ops[1];
      full.source_format = t.source_format.c_str();
      full.l1d_bytes = t.l1d_bytes;
      full.l2_bytes = t.l2_bytes;
      full.vector_registers = t.vector_registers;
      full.fma_pipes = t.fma_pipes;
      full.storage_dtypes = t.storage_dtypes;
      write_out(out, full);
    });
  }
  static kiln_error* synchronize(kiln_device* d) noexcept {
    return guard([&] { dev(d).synchronize(); });
  }
  static void close(kiln_device* d) noexcept { delete static_cast<Device*>(d); }

  // ---- allocator ----
  static kiln_error* alloc(kiln_device* d, uint64_t size, const kiln_alloc_params* params, kiln_buffer** out) noexcept {
    return guard([&] {
      uint32_t flags = 0;
      if (params) {
        KILN_SDK_REQUIRE(params, kiln_alloc_params, flags);
        flags = params->flags;
      }
      if (!out) throw Error{KILN_STATUS_INVALID_ARGUMENT, "alloc: out_buffer is NULL"};
      std::unique_ptr<Buffer> b = dev(d).alloc(size, flags);
      if (!b) throw Error{KILN_STATUS_INTERNAL, "alloc returned no buffer"};
      *out = b.release();
    });
  }
  static void free(kiln_device*, kiln_buffer* b) noexcept { delete b; }
  static kiln_error* copy_in(kiln_device* d, kiln_buffer* dst, uint64_t offset, const void* src, uint64_t n) noexcept {
    return guard([&] {
      if (!dst || (n && !src)) throw Error{KILN_STATUS_INVALID_ARGUMENT, "copy_in: NULL buffer or source"};
      dev(d).copy_in(*dst, offset, {static_cast<const std::byte*>(src), static_cast<size_t>(n)});
    });
  }
  static kiln_error* copy_out(kiln_device* d, void* dst, const kiln_buffer* src, uint64_t offset, uint64_t n) noexcept {
    return guard([&] {
      if (!src || (n && !dst)) throw Error{KILN_STATUS_INVALID_ARGUMENT, "copy_out: NULL buffer or destination"};
      dev(d).copy_out({static_cast<std::byte*>(dst), static_cast<size_t>(n)}, *src, offset);
    });
  }
  static kiln_error* copy(kiln_device* d, kiln_buffer* dst, uint64_t dst_offset, const kiln_buffer* src,
                          uint64_t src_offset, uint64_t n) noexcept {
    return guard([&] {
      if (!dst || !src) throw Error{KILN_STATUS_INVALID_ARGUMENT, "copy: NULL buffer"};
      dev(d).copy(*dst, dst_offset, *src, src_offset, n);
    });
  }
  static kiln_error* copy_peer(kiln_device* d, kiln_buffer* dst, uint64_t dst_offset, kiln_device* src_dev,
                               const kiln_buffer* src, uint64_t src_offset, uint64_t n) noexcept {
    return guard([&] {
      if (!dst || !src || !src_dev) throw Error{KILN_STATUS_INVALID_ARGUMENT, "copy_peer: NULL buffer or source device"};
      dev(d).copy_from_peer(*dst, dst_offset, dev(src_dev), *src, src_offset, n);
    });
  }
  static kiln_error* host_address(kiln_device* d, const kiln_buffer* b, void** out) noexcept {
    return guard([&] {
      if (!b || !out) throw Error{KILN_STATUS_INVALID_ARGUMENT, "host_address: NULL buffer or out_address"};
      *out = dev(d).host_address(*b);
    });
  }
  static kiln_error* wrap_host(kiln_device* d, void* address, uint64_t size, kiln_buffer** out) noexcept {
    return guard([&] {
      if (!out || (size && !address)) throw Error{KILN_STATUS_INVALID_ARGUMENT, "wrap_host: NULL address or out_buffer"};
      std::unique_ptr<Buffer> b = dev(d).wrap_host(address, size);
      if (!b) throw Error{KILN_STATUS_INTERNAL, "wrap_host returned no buffer"};
      *out = b.release();
    });
  }

  // ---- compiler ----
  static kiln_error* cache_key(kiln_device* d, kiln_sink* out) noexcept {
    return guard([&] { append(out, dev(d).cache_key()); });
  }
  static kiln_error* compile(kiln_device* d, const kiln_compile_params* p, kiln_sink* out_binary,
                             kiln_sink* out_log) noexcept {
    std::string log;
    kiln_error* err = guard([&] {
      KILN_SDK_REQUIRE(p, kiln_compile_params, options);
      if (!p->source && p->source_length) throw Error{KILN_STATUS_INVALID_ARGUMENT, "compile: source is NULL"};
      CompileRequest req{{p->source ? p->source : "", p->source_length},
                         p->entry ? std::string_view(p->entry) : std::string_view(),
                         p->options ? std::string_view(p->options) : std::string_view()};
      std::string binary = dev(d).compile(req, log);
      append(out_binary, binary);
    });
    // The log goes to out_log on success (warnings) and on failure (the error message has it too).
    try {
      append(out_log, log);
    } catch (...) {
    }
    return err;
  }

  static kiln_error* compile_many(kiln_device* d, const kiln_compile_params* const* ps, uint32_t n,
                                  kiln_sink* out_binary, kiln_sink* out_log) noexcept {
    std::string log;
    kiln_error* err = guard([&] {
      if (!ps && n) throw Error{KILN_STATUS_INVALID_ARGUMENT, "compile_many: params is NULL"};
      std::vector<CompileRequest> reqs;
      for (uint32_t i = 0; i < n; ++i) {
        const kiln_compile_params* p = ps[i];
        KILN_SDK_REQUIRE(p, kiln_compile_params, options);
        if (!p->source && p->source_length) throw Error{KILN_STATUS_INVALID_ARGUMENT, "compile_many: a source is NULL"};
        reqs.push_back({{p->source ? p->source : "", p->source_length},
                        p->entry ? std::string_view(p->entry) : std::string_view(),
                        p->options ? std::string_view(p->options) : std::string_view()});
      }
      append(out_binary, dev(d).compile_many(reqs, log));
    });
    try {
      append(out_log, log);
    } catch (...) {
    }
    return err;
  }

  // ---- runtime ----
  static kiln_error* load(kiln_device* d, const void* binary, size_t length, const char* entry,
                          kiln_program** out) noexcept {
    return guard([&] {
      if (!out || (!binary && length)) throw Error{KILN_STATUS_INVALID_ARGUMENT, "load: NULL binary or out_program"};
      std::unique_ptr<Program> p = dev(d).load({static_cast<const char*>(binary), length}, entry ? entry : "");
      if (!p) throw Error{KILN_STATUS_INTERNAL, "load returned no program"};
      *out = p.release();
    });
  }
  // A launch's parameters, checked (`slot` names the caller in errors).
  static Launch launch_of(const kiln_program* program, const kiln_launch_params* p, const char* slot) {
    KILN_SDK_REQUIRE(p, kiln_launch_params, out_elapsed_s);
    if (!program) throw Error{KILN_STATUS_INVALID_ARGUMENT, std::string(slot) + ": program is NULL"};
    if ((p->n_buffers && !p->buffers) || (p->n_values && !p->values))
      throw Error{KILN_STATUS_INVALID_ARGUMENT, std::string(slot) + ": NULL buffer or value array with a non-zero count"};
    Launch l;
    l.buffers = {p->buffers, p->n_buffers};
    if (p->offsets) l.offsets = {p->offsets, p->n_buffers};
    l.values = {p->values, p->n_values};
    l.global = {p->global[0], p->global[1], p->global[2]};
    l.local = {p->local[0], p->local[1], p->local[2]};
    l.wait = (p->flags & KILN_LAUNCH_WAIT) != 0;
    return l;
  }
  static kiln_error* launch(kiln_device* d, kiln_program* program, const kiln_launch_params* p) noexcept {
    return guard([&] {
      Launch l = launch_of(program, p, "launch");
      double elapsed = dev(d).launch(*program, l);
      if (l.wait && p->out_elapsed_s) *p->out_elapsed_s = elapsed;
    });
  }
  static kiln_error* launch_many(kiln_device* d, kiln_program* const* programs, const kiln_launch_params* const* ps,
                                 uint32_t n) noexcept {
    return guard([&] {
      if (n && (!programs || !ps)) throw Error{KILN_STATUS_INVALID_ARGUMENT, "launch_many: NULL programs or params"};
      thread_local std::vector<Launch> launches;  // reused: a replay allocates nothing here
      launches.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        launches[i] = launch_of(programs[i], ps[i], "launch_many");
        launches[i].wait = false;
      }
      dev(d).launch_many({programs, n}, {launches.data(), n});
    });
  }
  static void unload(kiln_device*, kiln_program* program) noexcept { delete program; }

  // ---- renderer ----
  static kiln_error* render(kiln_device* d, const kiln_lir* kernel, kiln_sink* out) noexcept {
    return guard([&] {
      KILN_SDK_REQUIRE(kernel, kiln_lir, local);
      append(out, dev(d).render(*kernel));
    });
  }
};

template <bool WithMany>
inline constexpr kiln_compiler_api compiler_table{sizeof(kiln_compiler_api), &Slots::cache_key, &Slots::compile,
                                                  WithMany ? &Slots::compile_many : nullptr};
template <bool WithBatch>
inline constexpr kiln_runtime_api runtime_table{sizeof(kiln_runtime_api), &Slots::load, &Slots::launch, &Slots::unload,
                                                WithBatch ? &Slots::launch_many : nullptr};
inline constexpr kiln_renderer_api renderer_table{sizeof(kiln_renderer_api), &Slots::render};

// One static device table per combination of optional slots, so unimplemented slots are NULL.
template <bool WithRenderer, bool WithCopy, bool WithMany, bool WithBatch, bool WithPeer, bool WithHost>
struct DeviceTables {
  static constexpr kiln_allocator_api allocator{sizeof(kiln_allocator_api),
                                                &Slots::alloc,
                                                &Slots::free,
                                                &Slots::copy_in,
                                                &Slots::copy_out,
                                                WithCopy ? &Slots::copy : nullptr,
                                                WithPeer ? &Slots::copy_peer : nullptr,
                                                WithHost ? &Slots::host_address : nullptr,
                                                WithHost ? &Slots::wrap_host : nullptr};
  static constexpr kiln_device_api device{sizeof(kiln_device_api),
                                          &Slots::get_props,
                                          &Slots::get_target,
                                          &allocator,
                                          &compiler_table<WithMany>,
                                          &runtime_table<WithBatch>,
                                          WithRenderer ? &renderer_table : nullptr,
                                          &Slots::synchronize,
                                          &Slots::close};
};

// The table of DeviceTables<flags...>: each optional slot's flag fixed in turn.
template <bool... Fixed>
const kiln_device_api* device_table_of(const bool* flags) {
  if constexpr (sizeof...(Fixed) == 6) {
    (void)flags;
    return &DeviceTables<Fixed...>::device;
  } else {
    return flags[0] ? device_table_of<Fixed..., true>(flags + 1) : device_table_of<Fixed..., false>(flags + 1);
  }
}
inline const kiln_device_api* device_table(const Device& d) {
  const bool flags[6] = {d.has_renderer(), d.has_device_copy(), d.has_compile_many(), d.has_launch_many(),
                         d.has_peer_copy(), d.has_host_memory()};
  return device_table_of<>(flags);
}

template <typename P>
struct PluginSlots {
  static_assert(std::is_base_of_v<Plugin, P>, "KILN_PLUGIN(Type): Type must derive from kiln::sdk::Plugin");

  static P& instance() {
    static P* p = new P();  // never destroyed: see the file comment
    return *p;
  }
  // Both probe slots: the plugin's answer into the host's outputs.
  template <typename F>
  static kiln_error* run_probe(const char* slot, int32_t* out_score, kiln_sink* out_reason, F&& probe) noexcept {
    return Slots::guard([&] {
      if (!out_score) throw Error{KILN_STATUS_INVALID_ARGUMENT, std::string(slot) + ": out_score is NULL"};
      Probe r = probe();
      *out_score = r.score;
      Slots::append(out_reason, r.reason);
    });
  }
  static Options options_of(const char* text, size_t length) { return Options::parse({text ? text : "", text ? length : 0}); }
  static kiln_error* probe(int32_t* out_score, kiln_sink* out_reason) noexcept {
    return run_probe("probe", out_score, out_reason, [] { return instance().probe(); });
  }
  static kiln_error* probe_with_options(const char* options, size_t length, int32_t* out_score,
                                        kiln_sink* out_reason) noexcept {
    return run_probe("probe_with_options", out_score, out_reason,
                     [&] { return instance().probe_with_options(options_of(options, length)); });
  }
  static kiln_error* initialize(const char* options, size_t length) noexcept {
    return Slots::guard([&] { instance().initialize(options_of(options, length)); });
  }
  static kiln_error* device_count(uint32_t* out_count) noexcept {
    return Slots::guard([&] {
      if (!out_count) throw Error{KILN_STATUS_INVALID_ARGUMENT, "device_count: out_count is NULL"};
      *out_count = instance().device_count();
    });
  }
  static kiln_error* device_open(uint32_t index, kiln_device** out_device, const kiln_device_api** out_api) noexcept {
    return Slots::guard([&] {
      if (!out_device || !out_api) throw Error{KILN_STATUS_INVALID_ARGUMENT, "device_open: NULL output"};
      std::unique_ptr<Device> d = instance().open(index);
      if (!d) throw Error{KILN_STATUS_INTERNAL, "device_open returned no device"};
      *out_api = device_table(*d);
      *out_device = d.release();
    });
  }
  static void shutdown() noexcept {
    try {
      instance().shutdown();
    } catch (const std::exception& e) {
      log(KILN_LOG_ERROR, std::string("shutdown failed: ") + e.what());
    } catch (...) {
      log(KILN_LOG_ERROR, "shutdown failed with a non-standard exception");
    }
  }

  static constexpr kiln_plugin_api table{sizeof(kiln_plugin_api), KILN_ABI_MAJOR,     KILN_ABI_MINOR,
                                         P::plugin_name,          P::plugin_version,  &probe,
                                         &initialize,             &device_count,      &device_open,
                                         &shutdown,               &probe_with_options};

  static kiln_status entry(kiln_entry_args* args) noexcept {
    if (!args || args->struct_size < KILN_SIZE_UPTO(kiln_entry_args, plugin)) return KILN_STATUS_INVALID_ARGUMENT;
    args->plugin = &table;  // always, so a host of another ABI can report ours
    bool compatible = args->host_abi_major == KILN_ABI_MAJOR &&
                      (KILN_ABI_MAJOR != 0 || args->host_abi_minor == KILN_ABI_MINOR);
    if (!compatible) return KILN_STATUS_INCOMPATIBLE_ABI;
    if (!args->host || args->host->struct_size < KILN_SIZE_UPTO(kiln_host_api, log) || !args->host->error_new)
      return KILN_STATUS_INVALID_ARGUMENT;
    detail::g_host = args->host;
    return KILN_STATUS_OK;
  }
};

}  // namespace kiln::sdk

// Defines the plugin's only exported symbol. Use once per plugin, at namespace scope.
#define KILN_PLUGIN(Type)                                                           \
  extern "C" KILN_EXPORT kiln_status kiln_plugin_entry(kiln_entry_args* args) {     \
    return ::kiln::sdk::PluginSlots<Type>::entry(args);                             \
  }
