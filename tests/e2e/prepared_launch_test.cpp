// tests/e2e/prepared_launch_test.cpp - schedules run as prepared items (runtime/prepared.hpp) on
// the cpu backend: a cached schedule resolves no device name per launch, and the prepared path
// computes what the schedule items do (variables, symbolic launch sizes, copies, a cleared
// program cache).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend_e2e.hpp"
#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "plugin/registry.hpp"
#include "runtime/buffer.hpp"
#include "runtime/prepared.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/runtime.hpp"
#include "runtime/instantiate.hpp"
#include "schedule/schedule.hpp"
#include "support/env.hpp"

using namespace kiln;

namespace {

const char* kDevice = "cpu:0";

// 32 tiny kernels: each step is its own kernel (contiguous).
Tensor chain(const Tensor& x, int n = 32) {
  Tensor y = x;
  for (int i = 0; i < n; ++i) y = (y * 2 - 1).contiguous();
  return y;
}

std::vector<float> expected_chain(std::vector<float> v, int n = 32) {
  for (float& f : v)
    for (int i = 0; i < n; ++i) f = f * 2 - 1;
  return v;
}

std::vector<float> read(const UOp& buffer, size_t n) {
  std::vector<float> out(n);
  runtime::read_buffer(buffer, out.data(), n * sizeof(float));
  return out;
}

}  // namespace

TEST(PreparedLaunch, ACachedScheduleResolvesNoDeviceNamePerLaunch) {
  Registry& reg = Registry::get();
  Tensor x = Tensor::from_vector<float>({1, 1.5f, 2, 0}, {4}, kDevice).realize();
  std::vector<float> want = expected_chain({1, 1.5f, 2, 0});
  ASSERT_EQ(chain(x).to_vector<float>(), want);  // compiles and prepares the 32 kernels
  uint64_t before = reg.resolve_count();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(chain(x).to_vector<float>(), want);
  EXPECT_EQ(reg.resolve_count(), before) << "5 realizes of a cached schedule of 32 kernels resolved device names";

  // prepared items run again and again on their handles alone
  LinearResult lr = create_linear_with_vars(UOp::sink({chain(x).uop()}));
  ASSERT_TRUE(lr.cache_hit);
  std::vector<runtime::PreparedItem> items = lr.prepared->prepare(lr.linear, lr.var_vals);
  ASSERT_EQ(items.size(), 32u);
  before = reg.resolve_count();
  for (int i = 0; i < 10; ++i) runtime::run_items(items);
  EXPECT_EQ(reg.resolve_count(), before);
  EXPECT_EQ(read(lr.outputs[0], 4), want);
  for (const runtime::PreparedItem& it : items) {
    EXPECT_EQ(it.kernel->kind, runtime::CallKind::kernel);
    EXPECT_EQ(it.kernel->device.get(), reg.open(kDevice).get()) << "the device handle, resolved once";
    EXPECT_EQ(it.handles.size(), 2u);
  }
}

TEST(PreparedLaunch, TheScheduleItemsResolveEachDeviceOncePerRun) {
  // run_schedule (schedule items by device name) prepares as it goes: one resolution per device
  // per call, not two per item as before
  Tensor x = Tensor::from_vector<float>({3, 4}, {2}, kDevice).realize();
  std::vector<ExecItem> items = chain(x, 8).schedule();
  ASSERT_EQ(items.size(), 8u);
  runtime::run_schedule(items);
  uint64_t before = Registry::get().resolve_count();
  runtime::run_schedule(items);
  EXPECT_EQ(Registry::get().resolve_count(), before + 1);
  EXPECT_EQ(read(items.back().buffers[0], 2), expected_chain({3, 4}, 8));
}

TEST(PreparedLaunch, SameResultsAsTheScheduleItems) {
  // the same program through both paths, on the cpu backend and on the reference executor, with a
  // copy between them
  Tensor a = Tensor::arange(0, 64, 1, dtypes::float32, kDevice).reshape({8, 8}).realize();
  auto program = [&] { return ((a.matmul(a) + 1).relu().sum({1}) / 7).to("ref").exp2().to(kDevice) * 0.5; };
  std::vector<ExecItem> items = program().schedule();
  runtime::run_schedule(items);
  std::vector<float> by_items = read(items.back().buffers[0], 8);
  std::vector<float> prepared = program().to_vector<float>();
  ASSERT_EQ(prepared.size(), 8u);
  EXPECT_EQ(prepared, by_items);
  bool copies = false;
  LinearResult lr = create_linear_with_vars(UOp::sink({program().uop()}));
  for (const runtime::PreparedItem& it : lr.prepared->prepare(lr.linear, lr.var_vals)) copies |= it.kernel->kind == runtime::CallKind::copy;
  EXPECT_TRUE(copies);
}

// A kernel with several outputs (schedule/group.cpp) through the prepared path, from the cached
// template on later calls: each output buffer gets its values, for each call's input.
TEST(PreparedLaunch, MultiOutputKernelsFromACachedSchedule) {
  auto program = [](const Tensor& x) {
    Tensor s = x.sum({1});
    return std::vector<Tensor>{s + 1.0, s * 3.0, x.softmax()};
  };
  for (int call = 0; call < 4; ++call) {
    std::vector<float> v(6 * 5);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((static_cast<int>(i) * (call + 3)) % 11) * 0.25f;
    std::vector<Tensor> out = program(Tensor::from_vector(v, {6, 5}, kDevice).realize());
    if (call == 0) {
      EXPECT_EQ(Tensor::schedule_all(out).size(), 2u) << "one kernel for both sums, one for the softmax (row-fused)";
    }
    Tensor::realize_all(out);
    std::vector<float> a = out[0].to_vector<float>(), b = out[1].to_vector<float>(), sm = out[2].to_vector<float>();
    for (int r = 0; r < 6; ++r) {
      float s = 0, mx = v[r * 5], z = 0;
      for (int c = 0; c < 5; ++c) s += v[r * 5 + c], mx = std::max(mx, v[r * 5 + c]);
      for (int c = 0; c < 5; ++c) z += std::exp(v[r * 5 + c] - mx);
      EXPECT_FLOAT_EQ(a[r], s + 1.0f) << "call " << call;
      EXPECT_FLOAT_EQ(b[r], s * 3.0f) << "call " << call;
      for (int c = 0; c < 5; ++c) EXPECT_NEAR(sm[r * 5 + c], std::exp(v[r * 5 + c] - mx) / z, 1e-6) << "call " << call;
    }
  }
}

// one cached schedule, a value per realize (on the cpu target the launch size does not depend on
// it; GPU targets: OpenclPrepared.SymbolicLaunchSizes)
TEST(PreparedLaunch, VariablesAreBoundPerRealize) { kiln::testing::check_variable_launches(kDevice, 64, false); }

TEST(PreparedLaunch, AClearedProgramCacheOrAnotherNooptPreparesAgain) {
  Tensor x = Tensor::from_vector<float>({2, 5}, {2}, kDevice).realize();
  std::vector<float> want = expected_chain({2, 5}, 4);
  ASSERT_EQ(chain(x, 4).to_vector<float>(), want);
  runtime::clear_program_cache();
  EXPECT_EQ(chain(x, 4).to_vector<float>(), want);
  EXPECT_GE(runtime::program_cache_size(), 1u) << "the stale prepared kernels were rebuilt through the cache";
  int64_t noopt = knob(Knob::noopt);
  set_knob(Knob::noopt, !noopt);
  size_t cached = runtime::program_cache_size();
  EXPECT_EQ(chain(x, 4).to_vector<float>(), want);
  EXPECT_GT(runtime::program_cache_size(), cached) << "KILN_NOOPT changed: the kernels are built again";
  set_knob(Knob::noopt, noopt);
}

// Slots index the values by position, so values under other names (same count) prepare again
// instead of feeding one variable's value to another: here the kernel needs 'n' and says so.
TEST(PreparedLaunch, ValuesUnderOtherNamesPrepareAgain) {
  Variable n("n", 1, 16);
  Tensor data = Tensor::arange(0, 16, 1, dtypes::float32, kDevice).realize();
  Tensor y = (data.shrink(0, n.bind(5)) * 3).contiguous() + 1;
  LinearResult lr = create_linear_with_vars(UOp::sink({y.uop()}));
  ASSERT_EQ(lr.var_vals.size(), 2u);  // n, and the host scalar 3 (lifted)
  EXPECT_EQ(lr.prepared->prepare(lr.linear, lr.var_vals).size(), lr.linear.src().size());
  VarVals renamed = lr.var_vals;
  for (auto& [name, value] : renamed)
    if (name == "n") name = "m";
  kiln::testing::expect_error([&] { lr.prepared->prepare(lr.linear, renamed); }, ErrorCode::invalid_argument,
               "needs a value for variable 'n'");
}

TEST(HostMemory, OnePredicate) {
  EXPECT_TRUE(runtime::is_host_memory(runtime::kHostDevice));
  EXPECT_TRUE(runtime::is_host_memory(runtime::kRefDevice));
  EXPECT_FALSE(runtime::is_host_memory(kDevice));
  EXPECT_FALSE(runtime::is_host_memory(""));
  runtime::Storage host(runtime::kRefDevice, 16), dev(kDevice, 16);
  EXPECT_TRUE(host.is_host());
  EXPECT_FALSE(dev.is_host());
}
