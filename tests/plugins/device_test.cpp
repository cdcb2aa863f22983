// tests/plugins/device_test.cpp - the host Device over the fixture plugins: every slot, error
// conversion, and plugin slots that throw (through the SDK trampolines) becoming kiln::Errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "error_check.hpp"
#include "plugin/registry.hpp"

namespace kiln {
namespace {

using testing::expect_error;

Registry& fixtures() {
  static Registry* r = [] {
    Settings s;
    std::string dir = KILN_FIXTURE_MANIFESTS;
    s.backends = dir + "/good.toml:" + dir + "/throwing.toml";
    s.prefix_dirs = std::vector<std::string>{};
    s.report_problems = false;
    return new Registry(s);
  }();
  return *r;
}

TEST(Device, PropsAndTargetAreCopiedAtOpen) {
  auto d = fixtures().open("good:1");
  EXPECT_EQ(d->name(), "good:1");
  EXPECT_EQ(d->props().name, "fixture device 1");
  EXPECT_EQ(d->props().kind, KILN_DEVICE_KIND_ACCELERATOR);
  EXPECT_EQ(d->props().memory_total, uint64_t{1} << 30);
  EXPECT_FALSE(d->threadsafe());
  EXPECT_EQ(d->target().source_format, "toy");
  EXPECT_TRUE(d->target().supports_dtype(KILN_LIR_DTYPE_INT32));
  EXPECT_FALSE(d->target().supports_dtype(KILN_LIR_DTYPE_FLOAT32));
  EXPECT_TRUE(d->target().supports_op(KILN_LIR_OP_ADD));
  EXPECT_FALSE(d->target().supports_op(KILN_LIR_OP_MUL));
  EXPECT_FALSE(d->target().has(KILN_TARGET_HAS_LOCAL));
}

TEST(Device, AllocatorRoundTripAndRangeErrors) {
  auto d = fixtures().open("good:0");
  kiln_buffer* b = d->alloc(16);
  const char in[] = "0123456789abcdef";
  d->copy_in(b, 0, in, 16);
  char out[8] = {};
  d->copy_out(out, b, 4, 8);
  EXPECT_EQ(std::string(out, 8), "456789ab");
  expect_error([&] { d->copy_out(out, b, 12, 8); }, ErrorCode::out_of_range, "good:0: copy_out: range outside the buffer");
  EXPECT_FALSE(d->has_device_copy());
  expect_error([&] { d->copy(b, 0, b, 8, 8); }, ErrorCode::unimplemented, "has no device-to-device copy");
  d->free(b);
}

TEST(Device, CompileLoadLaunch) {
  auto d = fixtures().open("good:0");
  EXPECT_EQ(d->compiler_cache_key(), "toy-compiler-1");
  expect_error([&] { d->compile("kernel: spin", "k"); }, ErrorCode::invalid_argument,
               "toy.c:1:1: error: expected 'kernel: fill <int>'\n1 error generated.");
  std::string binary = d->compile("kernel: fill 7", "k");
  EXPECT_EQ(binary, "bin:fill 7");
  std::shared_ptr<Program> p = d->load(binary, "k");
  EXPECT_EQ(p->entry(), "k");
  kiln_buffer* b = d->alloc(16);
  uint32_t global[3] = {4, 1, 1}, local[3] = {1, 1, 1};
  kiln_buffer* bufs[] = {b};
  double t = d->launch(*p, bufs, {}, {}, global, local, true);
  EXPECT_DOUBLE_EQ(t, 1e-6);
  EXPECT_EQ(d->launch(*p, bufs, {}, {}, global, local, false), 0.0);
  int32_t out[4];
  d->copy_out(out, b, 0, 16);
  EXPECT_EQ(std::vector<int32_t>(out, out + 4), (std::vector<int32_t>{7, 8, 9, 10}));
  kiln_buffer* two[] = {b, b};
  expect_error([&] { d->launch(*p, two, {}, {}, global, local, true); }, ErrorCode::invalid_argument,
               "good:0: launching k: toy kernels take exactly 1 buffer");
  uint64_t offsets[] = {0, 0};
  expect_error([&] { d->launch(*p, bufs, offsets, {}, global, local, true); }, ErrorCode::invalid_argument,
               "with 1 buffers but 2 offsets");
  expect_error([&] { d->load("garbage", "k"); }, ErrorCode::invalid_argument, "not a toy binary");
  d->free(b);
}

TEST(Device, ProgramFromAnotherDeviceIsRejected) {
  auto d0 = fixtures().open("good:0");
  auto d1 = fixtures().open("good:1");
  std::shared_ptr<Program> p = d0->load("bin:fill 1", "k");
  uint32_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  expect_error([&] { d1->launch(*p, {}, {}, {}, global, local, false); }, ErrorCode::invalid_argument,
               "program loaded on good:0");
}

TEST(Device, RendererSlot) {
  auto d = fixtures().open("good:0");
  ASSERT_TRUE(d->has_renderer());
  kiln_lir lir{};
  lir.struct_size = sizeof lir;
  lir.version = KILN_LIR_VERSION;
  lir.name = "add";
  EXPECT_EQ(d->render(lir), "toy kernel add with 0 instructions");
}

TEST(Device, ThrowingSlotsBecomeErrors) {
  auto d = fixtures().open("throwing:0");
  expect_error([&] { d->alloc(64); }, ErrorCode::resource_exhausted, "throwing:0: alloc(64 bytes): out of memory");
  expect_error([&] { d->compiler_cache_key(); }, ErrorCode::unavailable, "no compiler today");
  expect_error([&] { d->compile("kernel: fill 1", "k"); }, ErrorCode::internal, "the compiler exploded");
  expect_error([&] { d->load("bin:fill 1", "k"); }, ErrorCode::internal, "non-standard exception");
  expect_error([&] { fixtures().open("throwing:1"); }, ErrorCode::unavailable, "device 1 is busy");
  // ...and the process and the other backend carry on.
  auto good = fixtures().open("good:0");
  kiln_buffer* b = good->alloc(4);
  good->free(b);
}

}  // namespace
}  // namespace kiln
