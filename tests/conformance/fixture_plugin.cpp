// tests/conformance/fixture_plugin.cpp - misbehaving plugins for the conformance kit's own tests.
// FIXTURE_KIND selects the misbehaviour:
//   CRASH  alloc() dies with SIGSEGV (the runner must report it and live on)
//   HANG   device_open() never returns (the runner's timeout must kill it)
//   NOISY  probe() prints to stdout, and the library exports a second symbol (level 0 failures)
//   CAPS   target() claims a vector width of 10^6 (L1.target must reject implausible caps)
//   CACHES target() gives its cache sizes in KiB, not bytes (L1.target must say so)
//   VECTOR target() claims 4096 vector registers (L1.target must reject it)
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "kiln/sdk.hpp"

#define CRASH 1
#define HANG 2
#define NOISY 3
#define CAPS 4
#define CACHES 5
#define VECTOR 6

namespace {

using namespace kiln;

struct HostBuffer final : sdk::Buffer {
  std::vector<std::byte> bytes;
};

class FixtureDevice final : public sdk::Device {
 public:
  sdk::DeviceProps props() override {
    sdk::DeviceProps p;
    p.name = "fixture";
    p.description = "a conformance-kit fixture";
    return p;
  }
  sdk::Target target() override {
    sdk::Target t;
    t.add_all_ops();
    t.add_dtype(KILN_LIR_DTYPE_FLOAT32);
    t.add_dtype(KILN_LIR_DTYPE_INT32);
    t.source_format = "none";
#if FIXTURE_KIND == CAPS
    t.max_vector_width = 1000000;
#elif FIXTURE_KIND == CACHES
    t.flags = KILN_TARGET_HAS_THREADS;
    t.l1d_bytes = 48, t.l2_bytes = 2048;
#elif FIXTURE_KIND == VECTOR
    t.flags = KILN_TARGET_HAS_THREADS;
    t.vector_registers = 4096, t.fma_pipes = 2;
#endif
    return t;
  }
  std::unique_ptr<sdk::Buffer> alloc(uint64_t size, uint32_t) override {
#if FIXTURE_KIND == CRASH
    (void)size;
    raise(SIGSEGV);
#endif
    auto b = std::make_unique<HostBuffer>();
    b->bytes.resize(size);
    return b;
  }
  void copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) override {
    auto& b = static_cast<HostBuffer&>(dst).bytes;
    if (offset > b.size() || src.size() > b.size() - offset) throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "out of range"};
    std::memcpy(b.data() + offset, src.data(), src.size());
  }
  void copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) override {
    auto& b = static_cast<const HostBuffer&>(src).bytes;
    if (offset > b.size() || dst.size() > b.size() - offset) throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "out of range"};
    std::memcpy(dst.data(), b.data() + offset, dst.size());
  }
  std::string cache_key() override { return "fixture"; }
  std::string compile(const sdk::CompileRequest&, std::string&) override {
    throw sdk::Error{KILN_STATUS_UNIMPLEMENTED, "the fixture compiles nothing"};
  }
  std::unique_ptr<sdk::Program> load(std::string_view, std::string_view) override {
    throw sdk::Error{KILN_STATUS_UNIMPLEMENTED, "the fixture loads nothing"};
  }
  double launch(sdk::Program&, const sdk::Launch&) override {
    throw sdk::Error{KILN_STATUS_UNIMPLEMENTED, "the fixture runs nothing"};
  }
};

class FixturePlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = FIXTURE_NAME;
  static constexpr const char* plugin_version = "1.0.0";
  sdk::Probe probe() override {
#if FIXTURE_KIND == NOISY
    std::printf("hello from a plugin that should log through the host instead\n");
    std::fflush(stdout);
#endif
    return {1, "a conformance-kit fixture"};
  }
  uint32_t device_count() override { return 1; }
  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (index != 0) throw sdk::Error{KILN_STATUS_NOT_FOUND, "one device"};
#if FIXTURE_KIND == HANG
    for (;;) pause();
#endif
    return std::make_unique<FixtureDevice>();
  }
};

}  // namespace

KILN_PLUGIN(FixturePlugin)

#if FIXTURE_KIND == NOISY
// An accidental export: plugins export only kiln_plugin_entry.
extern "C" __attribute__((visibility("default"))) int fixture_helper_that_leaked_out() { return 42; }
#endif
