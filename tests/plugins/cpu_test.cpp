// tests/plugins/cpu_test.cpp - the cpu backend compiling C with clang-15, through the ABI
// (Registry -> Device -> plugin). ctest runs this twice: with binary = "object" and, with
// KILN_TEST_CPU_BINARY=shared, with binary = "shared" (fixture manifests with compiler = clang-15).
// The default in-process LLVM compiler is tested by cpu_llvm_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "error_check.hpp"
#include "plugin/registry.hpp"

namespace kiln {
namespace {

using testing::expect_error;

bool shared_format() {
  const char* f = std::getenv("KILN_TEST_CPU_BINARY");
  return f && std::string(f) == "shared";
}

std::shared_ptr<Device> cpu() {
  static Registry* r = [] {
    Settings s;
    s.backends = shared_format() ? KILN_CPU_MANIFEST_SHARED : KILN_CPU_MANIFEST_OBJECT;
    s.prefix_dirs = std::vector<std::string>{};
    s.report_problems = false;
    return new Registry(s);
  }();
  return r->open("cpu:0");
}

// A buffer that frees itself.
struct Buf {
  std::shared_ptr<Device> d;
  kiln_buffer* b;
  Buf(std::shared_ptr<Device> dev, uint64_t n, uint32_t flags = 0) : d(std::move(dev)), b(d->alloc(n, flags)) {}
  ~Buf() { d->free(b); }
};

const uint32_t kOne[3] = {1, 1, 1};

TEST(CpuPlugin, PropertiesAndTarget) {
  auto d = cpu();
  EXPECT_EQ(d->props().kind, KILN_DEVICE_KIND_CPU);
  EXPECT_TRUE(d->threadsafe());
  EXPECT_GT(d->props().memory_total, 0u);
  EXPECT_GE(d->props().compute_units, 1u);
  EXPECT_NE(d->props().arch.find("x86-64"), std::string::npos);
  const Target& t = d->target();
  EXPECT_TRUE(t.has(KILN_TARGET_HAS_THREADS));
  EXPECT_FALSE(t.has(KILN_TARGET_HAS_LOCAL));
  EXPECT_EQ(t.local_max[0], 1u);
  EXPECT_EQ(t.source_format, "c");
  EXPECT_TRUE(t.supports_dtype(KILN_LIR_DTYPE_FLOAT32));
  EXPECT_FALSE(t.supports_op(KILN_LIR_OP_BARRIER));
  EXPECT_TRUE(t.supports_op(KILN_LIR_OP_MULACC));
  EXPECT_FALSE(t.supports_op(KILN_LIR_OP_EXP2));  // the core decomposes transcendentals for the C dialect
  EXPECT_FALSE(t.supports_dtype(KILN_LIR_DTYPE_BFLOAT16));
  EXPECT_TRUE(d->has_renderer());
  EXPECT_EQ(t.threads, 2u);  // from the fixture manifest's options
}

TEST(CpuPlugin, AllocatorRoundTrips) {
  auto d = cpu();
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{4097}, uint64_t{3} << 20, uint64_t{64} << 20}) {
    Buf b(d, size);
    std::vector<uint8_t> in(size), out(size, 0);
    for (uint64_t i = 0; i < size; ++i) in[i] = static_cast<uint8_t>(i * 131 + 7);
    d->copy_in(b.b, 0, in.data(), size);
    d->copy_out(out.data(), b.b, 0, size);
    EXPECT_EQ(in, out) << "size " << size;
    if (size >= 3) {  // an odd sub-range
      uint8_t mid[2];
      d->copy_out(mid, b.b, 1, 2);
      EXPECT_EQ(mid[0], in[1]);
      EXPECT_EQ(mid[1], in[2]);
    }
  }
  Buf zeroed(d, 1000, KILN_ALLOC_ZERO);
  std::vector<uint8_t> z(1000, 1);
  d->copy_out(z.data(), zeroed.b, 0, 1000);
  EXPECT_EQ(std::accumulate(z.begin(), z.end(), 0), 0);
  Buf small(d, 8);
  uint8_t x[16] = {};
  expect_error([&] { d->copy_in(small.b, 4, x, 8); }, ErrorCode::out_of_range, "outside the 8-byte buffer");
  expect_error([&] { d->copy_out(x, small.b, 9, 0); }, ErrorCode::out_of_range, "copy_out");
  expect_error([&] { d->alloc(uint64_t{1} << 60); }, ErrorCode::resource_exhausted, "cannot allocate");
  ASSERT_TRUE(d->has_device_copy());
  Buf a(d, 16), c(d, 16);
  d->copy_in(a.b, 0, "abcdefghijklmnop", 16);
  d->copy(c.b, 4, a.b, 8, 8);
  char got[8];
  d->copy_out(got, c.b, 4, 8);
  EXPECT_EQ(std::string(got, 8), "ijklmnop");
}

const char* kSaxpy = R"(
#include <stdint.h>
const unsigned int kiln_nargs_saxpy[2] = {3, 1};
extern float sqrtf(float);   /* resolved from the host process (libm) */
void saxpy(void* const* bufs, const int64_t* vals, int32_t g0, int32_t g1, int32_t g2) {
  float* out = (float*)bufs[0];
  const float* x = (const float*)bufs[1];
  const float* y = (const float*)bufs[2];
  int64_t row = g0 + 8 * (g1 + 4 * (int64_t)g2), n = vals[0];
  for (int64_t j = 0; j < n; j++) out[row * n + j] = 2.0f * x[row * n + j] + sqrtf(y[row * n + j]);
}
)";

TEST(CpuPlugin, CompileLoadLaunchAcrossAThreeDimensionalGrid) {
  auto d = cpu();
  std::string binary = d->compile(kSaxpy, "saxpy");
  ASSERT_FALSE(binary.empty());
  EXPECT_EQ(binary.substr(1, 3), "ELF");
  std::shared_ptr<Program> p = d->load(binary, "saxpy");
  const int64_t n = 16, rows = 8 * 4 * 2;
  std::vector<float> x(rows * n), y(rows * n), out(rows * n, -1);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i), y[i] = static_cast<float>(i % 9);
  Buf bo(d, out.size() * 4), bx(d, x.size() * 4), by(d, y.size() * 4);
  d->copy_in(bx.b, 0, x.data(), x.size() * 4);
  d->copy_in(by.b, 0, y.data(), y.size() * 4);
  kiln_buffer* bufs[] = {bo.b, bx.b, by.b};
  int64_t vals[] = {n};
  uint32_t global[3] = {8, 4, 2};
  double t = d->launch(*p, bufs, {}, vals, global, kOne, true);
  EXPECT_GT(t, 0.0);
  d->copy_out(out.data(), bo.b, 0, out.size() * 4);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_FLOAT_EQ(out[i], 2.0f * x[i] + std::sqrt(y[i])) << "at " << i;

  // Wrong argument counts are caught thanks to kiln_nargs_saxpy; local sizes must be 1.
  expect_error([&] { d->launch(*p, std::span(bufs, 2), {}, vals, global, kOne, false); }, ErrorCode::invalid_argument,
               "kernel 'saxpy' takes 3 buffers, the launch passed 2");
  expect_error([&] { d->launch(*p, bufs, {}, {}, global, kOne, false); }, ErrorCode::invalid_argument,
               "takes 1 values, the launch passed 0");
  uint32_t local[3] = {4, 1, 1};
  expect_error([&] { d->launch(*p, bufs, {}, vals, global, local, false); }, ErrorCode::invalid_argument,
               "local sizes must be 1,1,1");
  expect_error([&] { d->load(binary, "nope"); }, ErrorCode::invalid_argument, "does not define the entry function 'nope'");
}

TEST(CpuPlugin, LaunchOffsetsAndTinyGrids) {
  auto d = cpu();
  std::shared_ptr<Program> p = d->load(d->compile(R"(
#include <stdint.h>
void mark(void* const* bufs, const int64_t* vals, int32_t g0, int32_t g1, int32_t g2) {
  ((int32_t*)bufs[0])[g0] = (int32_t)vals[0] + g0 + g1 + g2;
}
)", "mark"), "mark");
  Buf b(d, 64, KILN_ALLOC_ZERO);
  kiln_buffer* bufs[] = {b.b};
  uint64_t offsets[] = {16};  // the kernel sees the buffer from byte 16 on
  int64_t vals[] = {100};
  uint32_t g1[3] = {1, 1, 1}, g4[3] = {4, 1, 1}, g0[3] = {0, 1, 1};
  d->launch(*p, bufs, offsets, vals, g1, kOne, false);  // one item: inline on this thread
  d->launch(*p, bufs, offsets, vals, g4, kOne, false);
  d->launch(*p, bufs, {}, vals, g0, kOne, false);  // no items: nothing runs
  int32_t out[16];
  d->copy_out(out, b.b, 0, 64);
  EXPECT_EQ(std::vector<int32_t>(out, out + 8), (std::vector<int32_t>{0, 0, 0, 0, 100, 101, 102, 103}));
  uint64_t past[] = {65};
  expect_error([&] { d->launch(*p, bufs, past, vals, g1, kOne, false); }, ErrorCode::out_of_range, "is past its 64 bytes");
}

// Two work items wait for each other: this finishes only if they really run on two threads.
TEST(CpuPlugin, WorkItemsRunConcurrentlyOnThePool) {
  auto d = cpu();
  if (d->target().threads < 2) GTEST_SKIP() << "one thread: nothing to run concurrently";
  std::shared_ptr<Program> p = d->load(d->compile(R"(
#include <stdint.h>
void meet(void* const* bufs, const int64_t* vals, int32_t g0, int32_t g1, int32_t g2) {
  int32_t* state = (int32_t*)bufs[0];
  __atomic_fetch_add(&state[0], 1, __ATOMIC_SEQ_CST);
  for (int64_t i = 0; i < vals[0] && __atomic_load_n(&state[0], __ATOMIC_SEQ_CST) < 2; i++) __builtin_ia32_pause();
  state[1 + g0] = __atomic_load_n(&state[0], __ATOMIC_SEQ_CST);
  (void)g1; (void)g2;
}
)", "meet"), "meet");
  for (int round = 0; round < 3; ++round) {
    Buf b(d, 12, KILN_ALLOC_ZERO);
    kiln_buffer* bufs[] = {b.b};
    int64_t vals[] = {int64_t{1} << 28};  // a bound, so a broken pool fails instead of hanging
    uint32_t global[3] = {2, 1, 1};
    d->launch(*p, bufs, {}, vals, global, kOne, true);
    int32_t state[3];
    d->copy_out(state, b.b, 0, 12);
    EXPECT_EQ(state[1], 2) << "work item 0 never saw item 1 running";
    EXPECT_EQ(state[2], 2);
  }
}

TEST(CpuPlugin, AllocationsAre64ByteAligned) {
  auto d = cpu();
  std::shared_ptr<Program> p = d->load(d->compile(R"(
#include <stdint.h>
void align(void* const* bufs, const int64_t* vals, int32_t g0, int32_t g1, int32_t g2) {
  ((uint64_t*)bufs[0])[0] = (uint64_t)(uintptr_t)bufs[1] % 64;
  ((uint64_t*)bufs[0])[1] = (uint64_t)(uintptr_t)bufs[2] % (2u << 20);
  (void)vals; (void)g0; (void)g1; (void)g2;
}
)", "align"), "align");
  Buf out(d, 16), small(d, 100), big(d, 8 << 20);
  kiln_buffer* bufs[] = {out.b, small.b, big.b};
  d->launch(*p, bufs, {}, {}, kOne, kOne, false);
  uint64_t r[2];
  d->copy_out(r, out.b, 0, 16);
  EXPECT_EQ(r[0], 0u);
  EXPECT_EQ(r[1], 0u) << "large buffers start on a huge-page boundary";
}

TEST(CpuPlugin, CompileErrorCarriesTheCompilerLog) {
  auto d = cpu();
  expect_error([&] { d->compile("void broken(void) { int x = ; }\n", "broken"); }, ErrorCode::invalid_argument,
               "error: expected expression");
  try {
    d->compile("void broken(void) { int x = ; }\n", "broken");
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cpu:0: compiling broken"), std::string::npos) << m;
    EXPECT_NE(m.find("1 error generated"), std::string::npos) << m;
    EXPECT_NE(m.find("command: clang-15"), std::string::npos) << m;
  }
}

TEST(CpuPlugin, UnresolvedSymbolIsALoadError) {
  auto d = cpu();
  std::string binary = d->compile(R"(
extern void kiln_no_such_function(void);
void calls_nothing(void* const* b, const long* v, int g0, int g1, int g2) { kiln_no_such_function(); }
)", "calls_nothing");
  expect_error([&] { d->load(binary, "calls_nothing"); }, ErrorCode::invalid_argument, "kiln_no_such_function");
  expect_error([&] { d->load("not a binary", "k"); }, ErrorCode::invalid_argument, "neither a relocatable object");
}

TEST(CpuPlugin, CacheKeyNamesCompilerFlagsFormatAndFeatures) {
  auto d = cpu();
  const std::string& key = d->compiler_cache_key();
  EXPECT_NE(key.find("clang version 15"), std::string::npos) << key;
  EXPECT_NE(key.find("-march=native"), std::string::npos) << key;
  EXPECT_NE(key.find(shared_format() ? "|shared|" : "|object|"), std::string::npos) << key;
  EXPECT_NE(key.find(d->props().features), std::string::npos) << key;
  EXPECT_EQ(&key, &d->compiler_cache_key());
}

// Several programs alive at once each run their own code (in the shared format every library is
// dlopen'ed from its own memfd path, which must not be mistaken for an earlier one).
TEST(CpuPlugin, SeveralLiveProgramsStayDistinct) {
  auto d = cpu();
  std::vector<std::shared_ptr<Program>> programs;
  for (int i = 0; i < 4; ++i) {
    std::string name = "write" + std::to_string(i);
    std::string src = "void " + name + "(void* const* b, const long* v, int x, int y, int z) { ((int*)b[0])[0] = " +
                      std::to_string(100 + i) + "; }\n";
    programs.push_back(d->load(d->compile(src, name), name));
  }
  Buf b(d, 4);
  kiln_buffer* bufs[] = {b.b};
  for (int i = 3; i >= 0; --i) {
    d->launch(*programs[i], bufs, {}, {}, kOne, kOne, false);
    int32_t got = 0;
    d->copy_out(&got, b.b, 0, 4);
    EXPECT_EQ(got, 100 + i);
  }
}

TEST(CpuPlugin, ProgramsUnloadWhenDropped) {
  auto d = cpu();
  std::string binary = d->compile("void k(void* const* b, const long* v, int x, int y, int z) {}\n", "k");
  for (int i = 0; i < 50; ++i) {
    std::shared_ptr<Program> p = d->load(binary, "k");
    d->launch(*p, {}, {}, {}, kOne, kOne, false);
  }
}

}  // namespace
}  // namespace kiln
