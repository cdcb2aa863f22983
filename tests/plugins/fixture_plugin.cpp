// tests/plugins/fixture_plugin.cpp - small SDK plugins the loader tests run against.
//
// One source, several libraries (FIXTURE_KIND):
//   GOOD         "good": 2 devices, host memory, a toy compiler/runtime/renderer (below)
//   UNAVAILABLE  "unavailable": probe says score 0 with a reason, unless the option `hardware = true`
//                names some (probe_with_options: options that make a backend usable)
//   PROBE_ERROR  "probe_error": probe throws std::runtime_error
//   BAD_OPTIONS  "bad_options": initialize rejects a non-integer `threads` option
//   THROWING     "throwing": every device slot throws a different kind of exception
//   KINDS        one device of kind FIXTURE_DEVICE_KIND (built as "cpu", "gpu_dev", "cl_cpu": the
//                default-device rule, without real hardware)
//
// The toy kernel language: source "kernel: fill <int>" compiles to "bin:fill <int>"; a launch of it
// writes <int> + gidx0 as int32 into buffer 0 at index gidx0, for every gidx0 < global[0].
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/sdk.hpp"

#define GOOD 1
#define UNAVAILABLE 2
#define PROBE_ERROR 3
#define BAD_OPTIONS 4
#define THROWING 5
#define KINDS 6

namespace {

using namespace kiln;

std::string g_greeting = "hello";

struct HostBuffer final : sdk::Buffer {
  std::vector<std::byte> bytes;
};

struct ToyProgram final : sdk::Program {
  int32_t fill = 0;
};

void check_range(const HostBuffer& b, uint64_t offset, uint64_t n) {
  if (offset > b.bytes.size() || n > b.bytes.size() - offset)
    throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "range outside the buffer"};
}

class ToyDevice final : public sdk::Device {
 public:
  explicit ToyDevice(uint32_t index) : index_(index) {}

  sdk::DeviceProps props() override {
    sdk::DeviceProps p;
    p.name = "fixture device " + std::to_string(index_);
    p.description = "fixture device " + std::to_string(index_) + ": " + g_greeting;
    p.arch = "toy";
#ifdef FIXTURE_DEVICE_KIND
    p.kind = FIXTURE_DEVICE_KIND;
#else
    p.kind = KILN_DEVICE_KIND_ACCELERATOR;
#endif
    p.memory_total = uint64_t{1} << 30;
    p.memory_free = uint64_t{1} << 29;
    p.compute_units = 1;
    return p;
  }
  sdk::Target target() override {
    sdk::Target t;
    t.add_dtype(KILN_LIR_DTYPE_INT32);
    t.add_op(KILN_LIR_OP_ADD);
    t.source_format = "toy";
    return t;
  }
  std::unique_ptr<sdk::Buffer> alloc(uint64_t size, uint32_t) override {
#if FIXTURE_KIND == THROWING
    (void)size;
    throw std::bad_alloc();
#else
    auto b = std::make_unique<HostBuffer>();
    b->bytes.resize(size);
    return b;
#endif
  }
  void copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) override {
    auto& b = static_cast<HostBuffer&>(dst);
    check_range(b, offset, src.size());
    if (!src.empty()) std::memcpy(b.bytes.data() + offset, src.data(), src.size());
  }
  void copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) override {
    const auto& b = static_cast<const HostBuffer&>(src);
    check_range(b, offset, dst.size());
    if (!dst.empty()) std::memcpy(dst.data(), b.bytes.data() + offset, dst.size());
  }
  std::string cache_key() override {
#if FIXTURE_KIND == THROWING
    throw sdk::Error{KILN_STATUS_UNAVAILABLE, "no compiler today"};
#else
    return "toy-compiler-1";
#endif
  }
  std::string compile(const sdk::CompileRequest& req, std::string& log) override {
#if FIXTURE_KIND == THROWING
    (void)req, (void)log;
    throw std::runtime_error("the compiler exploded");
#else
    std::string_view s = req.source;
    if (s.substr(0, 13) != "kernel: fill ")
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "toy.c:1:1: error: expected 'kernel: fill <int>'\n1 error generated."};
    log = "toy.c: warning: toy compiler";
    return "bin:fill " + std::string(s.substr(13));
#endif
  }
  std::unique_ptr<sdk::Program> load(std::string_view binary, std::string_view) override {
#if FIXTURE_KIND == THROWING
    (void)binary;
    throw 42;  // not even a std::exception
#else
    if (binary.substr(0, 9) != "bin:fill ") throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "not a toy binary"};
    auto p = std::make_unique<ToyProgram>();
    p->fill = std::stoi(std::string(binary.substr(9)));
    return p;
#endif
  }
  double launch(sdk::Program& program, const sdk::Launch& l) override {
    auto& p = static_cast<ToyProgram&>(program);
    if (l.buffers.size() != 1) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "toy kernels take exactly 1 buffer"};
    auto& b = static_cast<HostBuffer&>(*l.buffers[0]);
    check_range(b, l.offset(0), uint64_t{l.global[0]} * 4);
    for (uint32_t i = 0; i < l.global[0]; ++i) {
      int32_t v = p.fill + static_cast<int32_t>(i);
      std::memcpy(b.bytes.data() + l.offset(0) + i * 4, &v, 4);
    }
    return l.wait ? 1e-6 : 0;
  }
  bool has_renderer() const override { return true; }
  std::string render(const kiln_lir& kernel) override {
    return std::string("toy kernel ") + (kernel.name ? kernel.name : "?") + " with " + std::to_string(kernel.n_insts) +
           " instructions";
  }

 private:
  uint32_t index_;
};

class FixturePlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = FIXTURE_NAME;
  static constexpr const char* plugin_version = "9.8.7";

  sdk::Probe probe() override {
#if FIXTURE_KIND == UNAVAILABLE
    return {0, "no fixture hardware here"};
#elif FIXTURE_KIND == PROBE_ERROR
    throw std::runtime_error("the probe exploded");
#else
    return {5, "fixture ready"};
#endif
  }
#if FIXTURE_KIND == UNAVAILABLE
  sdk::Probe probe_with_options(const sdk::Options& options) override {
    if (options.get_bool("hardware", false)) return {5, "fixture hardware named by an option"};
    return probe();
  }
#endif
  void initialize(const sdk::Options& options) override {
    g_greeting = options.get_string("greeting", "hello");
#if FIXTURE_KIND == BAD_OPTIONS
    options.get_int("threads", 1);  // throws when `threads` is not an integer
#endif
  }
  uint32_t device_count() override { return FIXTURE_KIND == THROWING ? 2 : FIXTURE_KIND == GOOD ? 2 : 1; }
  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (FIXTURE_KIND == THROWING && index == 1) throw sdk::Error{KILN_STATUS_UNAVAILABLE, "device 1 is busy"};
    return std::make_unique<ToyDevice>(index);
  }
};

}  // namespace

KILN_PLUGIN(FixturePlugin)
