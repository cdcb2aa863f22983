// tests/opencl/opencl_device_test.cpp - the opencl plugin through its device API: build failures
// carry the build log, launches with the wrong arguments are errors (not crashes), buffer offsets,
// event timing, binaries from the compile cache, and the rendered OpenCL C.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "plugin/registry.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/program_cache.hpp"

using namespace kiln;
using kiln::testing::error_of;

namespace {

std::shared_ptr<Device> device() { return Registry::get().open("opencl:0"); }

// a[i] = a[i] * 2 + n for i < n (one work item per element, 4 per workgroup)
const char* kScale = R"(__kernel void scale(__global float* restrict data0, long n_arg) {
  const int n = (int)n_arg;
  int i = (int)get_group_id(0) * 4 + (int)get_local_id(0);
  if (i < n) data0[i] = data0[i] * 2.0f + (float)n;
}
)";

struct Buf {
  std::shared_ptr<Device> dev;
  kiln_buffer* b;
  Buf(std::shared_ptr<Device> d, uint64_t bytes) : dev(std::move(d)), b(dev->alloc(bytes)) {}
  ~Buf() { dev->free(b); }
};

}  // namespace

TEST(OpenclDevice, PropsAndTargetComeFromTheDevice) {
  auto d = device();
  EXPECT_FALSE(d->props().name.empty());
  EXPECT_GT(d->props().compute_units, 0u);
  const Target& t = d->target();
  EXPECT_TRUE(t.has(KILN_TARGET_HAS_LOCAL));
  EXPECT_EQ(t.source_format, "opencl-c");
  EXPECT_GE(t.local_prod_max, 1u);
  EXPECT_GE(t.local_max[0], 1u);
  EXPECT_TRUE(t.supports_dtype(KILN_LIR_DTYPE_FLOAT32));
  EXPECT_FALSE(t.supports_dtype(KILN_LIR_DTYPE_BFLOAT16));  // no OpenCL type: the core emulates it
  EXPECT_TRUE(t.supports_op(KILN_LIR_OP_EXP2));              // OpenCL C built-ins, not polynomials
}

TEST(OpenclDevice, BuildFailureCarriesTheBuildLog) {
  ErrorCode code{};
  std::string msg = error_of(
      [&] { device()->compile("__kernel void broken(__global float* a) { a[0] = undefined_name; }", "broken"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument) << msg;
  EXPECT_CONTAINS(msg, "building kernel 'broken'");
  EXPECT_CONTAINS(msg, "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_CONTAINS(msg, "build log:");
  EXPECT_CONTAINS(msg, "undefined_name");  // the compiler's own diagnostic
}

TEST(OpenclDevice, WrongArgumentsAreErrorsNotCrashes) {
  auto d = device();
  auto program = d->load(d->compile(kScale, "scale"), "scale");
  Buf buf(d, 8 * sizeof(float));
  uint32_t global[3] = {2, 1, 1}, local[3] = {4, 1, 1};
  kiln_buffer* bufs[2] = {buf.b, buf.b};
  int64_t n = 8;
  ErrorCode code{};
  std::string none = error_of([&] { d->launch(*program, {}, {}, {}, global, local, true); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(none, "kernel 'scale' takes 1 buffers and 1 values, the launch passed 0 buffers and 0 values");
  std::string swapped = error_of([&] { d->launch(*program, {bufs, 2}, {}, {}, global, local, true); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(swapped, "the launch passed 2 buffers and 0 values");
  // a local size other than the kernel's is the driver's error, by name
  uint32_t bad_local[3] = {4096 * 4096, 1, 1};
  std::string wg = error_of([&] { d->launch(*program, {bufs, 1}, {}, {&n, 1}, global, bad_local, true); }, &code);
  EXPECT_CONTAINS(wg, "clEnqueueNDRangeKernel(kernel 'scale'");
  EXPECT_CONTAINS(wg, "CL_INVALID_");
  // and the device still works
  std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8}, out(8);
  d->copy_in(buf.b, 0, host.data(), 32);
  double s = d->launch(*program, {bufs, 1}, {}, {&n, 1}, global, local, true);
  EXPECT_GT(s, 0.0);  // event profiling
  d->copy_out(out.data(), buf.b, 0, 32);
  EXPECT_EQ(out, (std::vector<float>{10, 12, 14, 16, 18, 20, 22, 24}));
}

TEST(OpenclDevice, OffsetsUseAlignedSubBuffers) {
  auto d = device();
  auto program = d->load(d->compile(kScale, "scale"), "scale");
  Buf buf(d, 256 * sizeof(float));
  std::vector<float> host(256, 1.0f), out(256);
  d->copy_in(buf.b, 0, host.data(), host.size() * 4);
  kiln_buffer* bufs[1] = {buf.b};
  uint64_t offset[1] = {128};  // 32 floats in: PoCL's base address alignment is 128 bytes
  int64_t n = 4;
  uint32_t global[3] = {1, 1, 1}, local[3] = {4, 1, 1};
  d->launch(*program, {bufs, 1}, {offset, 1}, {&n, 1}, global, local, true);
  d->copy_out(out.data(), buf.b, 0, out.size() * 4);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(out[i], i >= 32 && i < 36 ? 6.0f : 1.0f) << i;
  uint64_t odd[1] = {4};
  ErrorCode code{};
  std::string msg = error_of([&] { d->launch(*program, {bufs, 1}, {odd, 1}, {&n, 1}, global, local, true); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(msg, "CL_DEVICE_MEM_BASE_ADDR_ALIGN");
}

TEST(OpenclDevice, AllocatorEdgeCases) {
  auto d = device();
  Buf empty(d, 0), one(d, 1);
  EXPECT_NE(empty.b, one.b);
  ErrorCode code{};
  std::string msg = error_of([&] { d->alloc(uint64_t{1} << 50); }, &code);
  EXPECT_EQ(code, ErrorCode::resource_exhausted) << msg;
  EXPECT_CONTAINS(msg, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  kiln_buffer* z = d->alloc(1000, KILN_ALLOC_ZERO);
  std::vector<unsigned char> bytes(1000, 0xff);
  d->copy_out(bytes.data(), z, 0, bytes.size());
  d->free(z);
  EXPECT_EQ(bytes, std::vector<unsigned char>(1000, 0));
  std::string range = error_of([&] { d->copy_in(one.b, 1, bytes.data(), 1); }, &code);
  EXPECT_EQ(code, ErrorCode::out_of_range) << range;
}

// The compile cache stores PoCL's program binary; a new process (simulated by dropping the
// in-memory caches) creates the program from that binary instead of building the source.
TEST(OpenclDevice, BinariesFromTheCompileCacheRun) {
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  auto program = [] {
    Tensor x = Tensor::arange(0, 300, 1, dtypes::float32, "opencl:0");
    return ((x * 0.5) + 3.0).exp2().sum().item<float>();
  };
  float first = program();
  auto before = runtime::compile_stats();
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  float again = program();
  auto after = runtime::compile_stats();
  EXPECT_EQ(after.compiles, before.compiles);  // nothing was built from source
  EXPECT_GT(after.disk_hits, before.disk_hits);
  EXPECT_EQ(first, again);
}

// compile_many: two kernels, one program; either entry loads from the shared binary and runs.
// A broken kernel in the set fails the whole build with the build log naming every entry.
TEST(OpenclDevice, CompileManyBuildsOneProgramForSeveralKernels) {
  auto d = device();
  ASSERT_TRUE(d->has_compile_many());
  const char* add = R"(__kernel void add_one(__global float* restrict data0, long n_arg) {
  int i = (int)get_group_id(0) * 4 + (int)get_local_id(0);
  if (i < (int)n_arg) data0[i] = data0[i] + 1.0f;
}
)";
  std::string binary = d->compile_many({{kScale, "scale"}, {add, "add_one"}});
  auto scale = d->load(binary, "scale");
  auto plus = d->load(binary, "add_one");
  Buf buf(d, 8 * sizeof(float));
  std::vector<float> host(8, 1.0f), out(8);
  d->copy_in(buf.b, 0, host.data(), 32);
  kiln_buffer* bufs[1] = {buf.b};
  int64_t n = 8;
  uint32_t global[3] = {2, 1, 1}, local[3] = {4, 1, 1};
  d->launch(*scale, {bufs, 1}, {}, {&n, 1}, global, local, true);  // 1*2+8 = 10
  d->launch(*plus, {bufs, 1}, {}, {&n, 1}, global, local, true);   // 11
  d->copy_out(out.data(), buf.b, 0, 32);
  EXPECT_EQ(out, std::vector<float>(8, 11.0f));
  auto again = d->load(binary, "scale");  // a later load (the built program was handed out) rebuilds from the binary
  EXPECT_NE(again, nullptr);
  ErrorCode code{};
  std::string msg = error_of(
      [&] { d->compile_many({{kScale, "scale"}, {"__kernel void bad(__global float* a) { a[0] = nope; }", "bad"}}); },
      &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument) << msg;
  EXPECT_CONTAINS(msg, "building kernels 'scale', 'bad'");
  EXPECT_CONTAINS(msg, "nope");
}

// A schedule's new kernels are built in one compile_many call (softmax: two kernels, one build),
// and a later process (caches dropped from memory) finds each kernel's binary on disk.
TEST(OpenclDevice, AScheduleIsBuiltInOneCall) {
  // an empty disk cache of its own, so earlier runs' binaries are not found
  std::string saved = getenv("KILN_CACHE_DIR") ? getenv("KILN_CACHE_DIR") : "";
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kiln-batch-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  Tensor x = Tensor::arange(0, 96, 1, dtypes::float32, "opencl:0").reshape({3, 32}) * 0.0731;
  x.realize();
  auto before = runtime::compile_stats();
  std::vector<float> first = (x * 1.5).softmax().to_vector<float>();
  auto after = runtime::compile_stats();
  EXPECT_EQ(after.batches, before.batches + 1);
  EXPECT_EQ(after.compiles, before.compiles + 2);
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  EXPECT_EQ((x * 1.5).softmax().to_vector<float>(), first);
  EXPECT_EQ(runtime::compile_stats().compiles, after.compiles);  // from the disk cache, kernel by kernel
  if (saved.empty()) unsetenv("KILN_CACHE_DIR");
  else setenv("KILN_CACHE_DIR", saved.c_str(), 1);
  std::filesystem::remove_all(dir);
}

// Workgroups and the OpenCL C that uses them: a reduction over rows uses local ids, and the
// rendered kernel requires the workgroup size it was generated for.
TEST(OpenclDevice, KernelsUseWorkgroups) {
  auto d = device();
  Tensor x = Tensor::rand({64, 256}, dtypes::float32, "opencl:0");
  std::vector<ExecItem> items = (x * 2).sum({1}).schedule();
  bool any_local = false;
  for (const ExecItem& e : items) {
    if (e.is_copy) continue;
    auto k = runtime::get_kernel(d, e.ast);
    uint32_t local = k->spec.lir.local[0] * k->spec.lir.local[1] * k->spec.lir.local[2];
    if (local > 1) {
      any_local = true;
      EXPECT_CONTAINS(k->source, "get_local_id(");
      EXPECT_CONTAINS(k->source, "reqd_work_group_size(");
    }
    EXPECT_CONTAINS(k->source, "__kernel ");
  }
  EXPECT_TRUE(any_local);
}

// Outputs larger than the device's cache are written with non-temporal stores (KILN_STREAM):
// the results are the same, and small outputs keep ordinary stores.
TEST(OpenclDevice, LargeOutputsUseStreamingStores) {
  auto d = device();
  // 40 MB of float32: past the 16 MiB that opencl.toml sets (the device's own cache size is the
  // host's: 32 MiB on one machine, 480 MiB on another)
  const int64_t n = int64_t{10} << 20;
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i % 1000) - 500.0f;
  Tensor x = Tensor::from_vector(host, {n}, "opencl:0");
  Tensor y = ((x + 1.0) * 2.0).relu();
  bool streamed = false;
  for (const ExecItem& e : y.schedule())
    if (!e.is_copy) streamed |= runtime::get_kernel(d, e.ast)->source.find("KILN_STREAM(") != std::string::npos;
  EXPECT_TRUE(streamed);
  std::vector<float> got = y.to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) {
    float want = std::max((host[static_cast<size_t>(i)] + 1.0f) * 2.0f, 0.0f);
    ASSERT_EQ(got[static_cast<size_t>(i)], want) << i;
  }
  EXPECT_EQ(got.back(), std::max((host.back() + 1.0f) * 2.0f, 0.0f));
  Tensor small = Tensor::arange(0, 4096, 1, dtypes::float32, "opencl:0") * 2.0;
  for (const ExecItem& e : small.schedule()) {
    if (e.is_copy) continue;
    EXPECT_EQ(runtime::get_kernel(d, e.ast)->source.find("KILN_STREAM("), std::string::npos);
  }
}

// Regression: built from clang's bitcode (the default on PoCL), calls to built-ins reached PoCL's
// SPIR wrappers, which take 512-bit vectors (ulong8) in registers where x86 passes them in memory,
// and crashed PoCL's code generator; with clang's address-space mangling they did not link at all
// (and "auto" fell back to the driver). They must call the CPU versions, as PoCL's front end does.
TEST(OpenclDevice, WideVectorBuiltinsKeepTheirCallingConvention) {
  auto d = device();
  const char* wide = R"(__kernel void wide(__global float* restrict out, __global const uint* restrict in) {
  size_t i = get_global_id(0);
  ulong8 x = convert_ulong8(vload8(i, in)) << (ulong8)(33UL);
  uint8 twice = convert_uint8(x >> (ulong8)(32UL));
  vstore8(convert_float8(twice) + sqrt(convert_float8(vload8(i, in))), i, out);
}
)";
  std::string binary = d->compile(wide, "wide");
  if (d->props().description.find("Portable Computing Language") != std::string::npos) {
    EXPECT_EQ(binary.rfind("BC\xC0\xDE", 0), 0u) << "not built from clang's bitcode";
  }
  auto program = d->load(binary, "wide");
  std::vector<uint32_t> in(16);
  for (uint32_t i = 0; i < 16; ++i) in[i] = i * 1000;
  Buf out(d, 16 * sizeof(float)), src(d, 16 * sizeof(uint32_t));
  d->copy_in(src.b, 0, in.data(), 16 * sizeof(uint32_t));
  kiln_buffer* bufs[2] = {out.b, src.b};
  uint32_t global[3] = {2, 1, 1}, local[3] = {1, 1, 1};
  d->launch(*program, {bufs, 2}, {}, {}, global, local, true);
  std::vector<float> got(16);
  d->copy_out(got.data(), out.b, 0, 16 * sizeof(float));
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(got[i], 2.0f * in[i] + std::sqrt(static_cast<float>(in[i])), 1e-3) << i;
}
