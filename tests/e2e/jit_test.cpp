// tests/e2e/jit_test.cpp - kiln::Jit on the cpu backend: what tinygrad's test_jit.py asserts,
// written for our API (capture on call 2, replay with new inputs, weights by reference, checks
// that make a wrong replay impossible, variables, several outputs, copies), and replay's promises
// (no allocation, fn not run).
#include <gtest/gtest.h>

#include <cmath>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "runtime/buffer.hpp"
#include "runtime/jit.hpp"
#include "tensor/tensor_state.hpp"

using namespace kiln;
using kiln::testing::expect_error;

namespace {

const char* kDevice = "cpu:0";

Tensor vec(const std::vector<float>& v, const std::string& device = kDevice) {
  return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}, device);
}

std::vector<float> iota(size_t n, float start, float step = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

}  // namespace

TEST(Jit, OutputsAreRightOnEveryCallAndFnRunsOnlyTwice) {
  int runs = 0;
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    ++runs;
    return std::vector<Tensor>{((in[0] + in[1]).relu() * 2).sum({0})};
  });
  for (int call = 1; call <= 6; ++call) {
    std::vector<float> a = iota(64, -10.f + call), b = iota(64, 3.f * call, -0.5f);
    Tensor x = Tensor::from_vector<float>(a, {8, 8}, kDevice), y = Tensor::from_vector<float>(b, {8, 8}, kDevice);
    std::vector<Tensor> out = f({x, y});
    EXPECT_EQ(f.captured(), call >= 2) << "call " << call;
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), (Shape{8}));
    std::vector<float> got = out[0].to_vector<float>();
    for (int j = 0; j < 8; ++j) {
      float want = 0;
      for (int i = 0; i < 8; ++i) want += std::max(0.f, a[i * 8 + j] + b[i * 8 + j]) * 2;
      EXPECT_FLOAT_EQ(got[j], want) << "call " << call << " column " << j;
    }
  }
  EXPECT_EQ(runs, 2) << "calls 3 and later must replay, not run the function";
  EXPECT_EQ(f.kernel_count(), 1u);
}

TEST(Jit, ReplayAllocatesNothing) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    Tensor h = (in[0] * 3 + 1).contiguous();  // an intermediate between two kernels
    return std::vector<Tensor>{(h.exp2() - h).sum()};
  });
  Tensor x = vec(iota(1000, 0, 0.001f)).realize();
  f({x});
  f({x});
  ASSERT_TRUE(f.captured());
  EXPECT_EQ(f.kernel_count(), 2u);
  runtime::MemoryStats before = runtime::memory_stats(kDevice);
  for (int i = 0; i < 5; ++i) f({x});
  runtime::MemoryStats after = runtime::memory_stats(kDevice);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
}

TEST(Jit, WeightsUpdatedByAssignAreSeen) {
  Tensor w = vec({1, 2, 3, 4}).reshape({2, 2}).realize();
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0].matmul(w)}; });
  Tensor x = vec({1, 1}).reshape({1, 2});
  f({x});
  f({x});
  EXPECT_EQ(f({x})[0].to_vector<float>(), (std::vector<float>{4, 6}));
  w.assign(vec({10, 20, 30, 40}).reshape({2, 2})).realize();
  EXPECT_EQ(f({x})[0].to_vector<float>(), (std::vector<float>{40, 60}));
}

TEST(Jit, AChangedSignatureThrowsNamingTheInputAndBothValues) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 2}; });
  Tensor x = vec(iota(6, 0));
  f({x});
  f({x});
  expect_error([&] { f({vec(iota(7, 0))}); }, ErrorCode::invalid_argument, "input 0 has shape (7,), captured with (6,)");
  expect_error([&] { f({vec(iota(6, 0)).cast(dtypes::int32)}); }, ErrorCode::invalid_argument,
               "input 0 has dtype int32, captured with float32");
  expect_error([&] { f({vec(iota(6, 0), "ref")}); }, ErrorCode::invalid_argument, "input 0 is on ref, captured on cpu:0");
  expect_error([&] { f({x, x}); }, ErrorCode::invalid_argument, "called with 2 inputs, captured with 1");
  Variable n("n", 1, 4);
  expect_error([&] { f({x}, {n.bind(2)}); }, ErrorCode::invalid_argument, "called with 1 variables, captured with 0");
  EXPECT_EQ(f({x})[0].to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10})) << "a refused call leaves the plan usable";
}

TEST(Jit, InputsMustAliasAsTheyDidWhenCaptured) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] + in[1]}; });
  Tensor a = vec({1, 2}).realize(), b = vec({10, 20}).realize();
  f({a, b});
  f({a, b});
  expect_error([&] { f({a, a}); }, ErrorCode::invalid_argument, "inputs 0 and 1 are one buffer now but were two buffers");
  EXPECT_EQ(f({b, a})[0].to_vector<float>(), (std::vector<float>{11, 22}));
}

TEST(Jit, ResetCapturesAgain) {
  int runs = 0;
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    ++runs;
    return std::vector<Tensor>{in[0].sum()};
  });
  for (int i = 0; i < 3; ++i) f({vec(iota(5, 1))});
  EXPECT_EQ(runs, 2);
  f.reset();
  EXPECT_FALSE(f.captured());
  EXPECT_EQ(f.kernel_count(), 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f({vec(iota(9, 1))})[0].item<float>(), 45.f);  // another shape after reset
  EXPECT_EQ(runs, 4);
  EXPECT_TRUE(f.captured());
}

TEST(Jit, SeveralJitsDoNotInterfere) {
  Jit add([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] + 1}; });
  Jit mul([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 3}; });
  for (int i = 0; i < 5; ++i) {
    Tensor x = vec({float(i), float(2 * i)});
    std::vector<Tensor> a = add({x}), m = mul({x});
    EXPECT_EQ(a[0].to_vector<float>(), (std::vector<float>{i + 1.f, 2.f * i + 1}));
    EXPECT_EQ(m[0].to_vector<float>(), (std::vector<float>{3.f * i, 6.f * i}));
  }
}

TEST(Jit, OutputsStayValidUntilTheNextCallOfTheSameJit) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 2}; });
  Jit g([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 5}; });
  f({vec({1})});
  f({vec({1})});
  Tensor third = f({vec({3})})[0];
  Tensor kept = third.clone().realize();  // ... unless copied
  g({vec({1})});  // another Jit's calls leave it alone
  EXPECT_EQ(third.item<float>(), 6.f);
  Tensor fourth = f({vec({4})})[0];
  EXPECT_EQ(fourth.item<float>(), 8.f);
  EXPECT_EQ(third.item<float>(), 8.f) << "documented: a replay writes the plan's output buffers again";
  EXPECT_EQ(kept.item<float>(), 6.f);
}

TEST(Jit, SeveralOutputsAndAnInputReturnedUnchanged) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{in[0].max(), in[1], (in[0] - 1).exp2(), in[1].reshape({2, 1})};
  });
  for (int call = 1; call <= 4; ++call) {
    Tensor x = vec({0, float(call), 2}), y = vec({7, float(call) + 7});
    std::vector<Tensor> out = f({x, y});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].item<float>(), std::max(2.f, float(call)));
    EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{7, float(call) + 7}));
    EXPECT_EQ(out[1].state(), y.state()) << "call " << call << ": an input returned unchanged is this call's input";
    EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{0.5f, std::exp2(float(call) - 1), 2}));
    EXPECT_EQ(out[3].shape(), (Shape{2, 1})) << "call " << call << ": a view of an input keeps its shape";
    EXPECT_EQ(out[3].to_vector<float>(), (std::vector<float>{7, float(call) + 7}));
  }
}

TEST(Jit, AFunctionThatRunsNothingCannotBeCaptured) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0].reshape({2, 2})}; });
  Tensor x = vec({1, 2, 3, 4}).realize();
  f({x});
  expect_error([&] { f({x}); }, ErrorCode::invalid_argument, "ran no kernel and no copy");
  EXPECT_FALSE(f.captured());
}

TEST(Jit, ACopyBetweenDevicesIsReplayed) {
  // cpu -> the reference device (a copy), a kernel there, and back (another copy)
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{(in[0].to("ref") * 2 + 1).to(kDevice)};
  });
  for (int call = 1; call <= 4; ++call) {
    std::vector<Tensor> out = f({vec({float(call), 10})});
    EXPECT_EQ(out[0].device(), kDevice);
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2.f * call + 1, 21}));
  }
  EXPECT_EQ(f.kernel_count(), 3u);
}

TEST(Jit, AnInputWrittenInPlaceIsWrittenOnEveryReplay) {
  Jit step([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    Tensor x = in[0];
    x.assign(x * 2 + in[1]);
    return std::vector<Tensor>{x};
  });
  Tensor state = vec({1, 2}).realize(), inc = vec({1, 1}).realize();
  for (int i = 0; i < 5; ++i) step({state, inc});
  // x -> 2x + 1, five times: 1 -> 63, 2 -> 95
  EXPECT_EQ(state.to_vector<float>(), (std::vector<float>{63, 95}));
  Tensor other = vec({0, 0}).realize();
  step({other, inc});
  EXPECT_EQ(other.to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(state.to_vector<float>(), (std::vector<float>{63, 95}));
}

TEST(Jit, RandomNumbersRepeatTheCaptureCallsAsDocumented) {
  manual_seed(7);
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{in[0] + Tensor::rand({4}, dtypes::float32, kDevice)};
  });
  Tensor zero = vec({0, 0, 0, 0}).realize();
  std::vector<float> first = f({zero})[0].to_vector<float>();
  std::vector<float> second = f({zero})[0].to_vector<float>();
  EXPECT_NE(first, second) << "calls 1 and 2 run the function: each draws";
  EXPECT_EQ(f({zero})[0].to_vector<float>(), second);
  EXPECT_EQ(f({zero})[0].to_vector<float>(), second) << "replays repeat the capture call's numbers (kiln/jit.hpp)";
}

TEST(Jit, VariablesAreReboundOnEveryCall) {
  Variable n("n", 1, 8);
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    Tensor part = in[0].shrink(0, vars[0]);  // the first n rows
    return std::vector<Tensor>{part * 10, part.sum({1})};
  });
  Tensor x = Tensor::from_vector<float>(iota(8 * 3, 0), {8, 3}, kDevice).realize();
  for (int64_t v : {3, 5, 2, 8, 1, 6}) {
    std::vector<Tensor> out = f({x}, {n.bind(v)});
    ASSERT_EQ(out[0].shape(), (Shape{v, 3})) << "n = " << v;
    ASSERT_EQ(out[1].shape(), (Shape{v})) << "n = " << v;
    std::vector<float> rows = out[0].to_vector<float>(), sums = out[1].to_vector<float>();
    for (int64_t r = 0; r < v; ++r) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(rows[r * 3 + c], 10.f * (r * 3 + c)) << "n = " << v;
      EXPECT_EQ(sums[r], float(9 * r + 3)) << "n = " << v;
    }
  }
  EXPECT_TRUE(f.captured());
  Variable m("m", 1, 8);
  expect_error([&] { f({x}, {m.bind(2)}); }, ErrorCode::invalid_argument, "variable 0 is 'm' in [1, 8], captured as 'n' in [1, 8]");
}

TEST(Jit, AMovedFromJitSaysSo) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] + 1}; });
  Jit g = std::move(f);
  EXPECT_EQ(g({vec({1})})[0].item<float>(), 2.f);
  expect_error([&] { f({vec({1})}); }, ErrorCode::invalid_argument, "moved from");  // NOLINT(bugprone-use-after-move)
  expect_error([] { Jit empty(nullptr); }, ErrorCode::invalid_argument, "the function is empty");
}

TEST(Jit, IntermediatesArePlannedOverTheWholePlan) {
  // six realizes inside the function, each a 1 MiB intermediate the next one reads: captured as
  // they ran they hold 6 MiB; planned over the plan, two buffers take turns
  constexpr int64_t n = 1 << 18;
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    Tensor h = in[0];
    for (int i = 0; i < 6; ++i) h = (h * 2 + 1).contiguous().realize();
    return std::vector<Tensor>{h.sum()};
  });
  Tensor x = Tensor::zeros({n}, dtypes::float32, kDevice).realize();
  EXPECT_EQ(f({x})[0].item<float>(), 63.f * n);
  runtime::clear_allocation_cache();
  const uint64_t before = runtime::memory_stats(kDevice).live_bytes;
  EXPECT_EQ(f({x})[0].item<float>(), 63.f * n);
  runtime::clear_allocation_cache();
  const uint64_t held = runtime::memory_stats(kDevice).live_bytes - before;
  EXPECT_GE(held, uint64_t{2} * n * 4);
  EXPECT_LT(held, uint64_t{3} * n * 4) << "the plan keeps " << held << " bytes of intermediates";
  Tensor y = Tensor::ones({n}, dtypes::float32, kDevice).realize();
  EXPECT_EQ(f({y})[0].item<float>(), 127.f * n);
  EXPECT_GE(f.kernel_count(), 7u);  // six, and the sum (split in two on some targets)
}

// The plan under kiln::Jit: a run of consecutive kernels on a device with launch_many goes to the
// plugin in one call, and gives what the items run one by one give.
TEST(JitPlan, RunsOfKernelsGoToThePluginInOneCall) {
  auto chain = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 8; ++i) y = (y * 1.5 - 0.25).contiguous();
    return y;
  };
  auto expected = [](std::vector<float> v) {
    for (float& f : v)
      for (int i = 0; i < 8; ++i) f = f * 1.5f - 0.25f;
    return v;
  };
  auto storage = [](const Tensor& t) { return runtime::storage_of(detail::view_buffer(t.state()->uop())); };
  Tensor x = vec(iota(16, 0)).realize();
  chain(x).realize();  // compiles
  runtime::Capture capture;
  Tensor y = chain(x).realize();
  capture.stop();
  runtime::Plan plan(std::move(capture), {storage(x)}, {});
  ASSERT_EQ(plan.size(), 8u);
  EXPECT_EQ(plan.input_slots(), 1u);
  EXPECT_EQ(plan.batches(), 1u) << "the cpu plugin has launch_many: the eight kernels are one batch";
  for (bool batched : {true, false}) {
    plan.set_batched(batched);
    Tensor other = vec(iota(16, 5, -0.5f)).realize();
    plan.replay(std::vector<std::shared_ptr<runtime::Storage>>{storage(other)}, {});
    EXPECT_EQ(y.to_vector<float>(), expected(iota(16, 5, -0.5f))) << (batched ? "batched" : "one by one");
  }
}

// Regression (review): constants built inside the function live in host memory, written once when
// built, and are read by the copies the plan replays; they must never lend their memory to another.
TEST(Jit, ConstantsMadeInsideTheFunctionKeepTheirValues) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    Tensor a = (in[0] + vec({1, 2, 3, 4})).contiguous().realize();
    return std::vector<Tensor>{a * vec({10, 20, 30, 40})};
  });
  for (int call = 1; call <= 4; ++call)
    EXPECT_EQ(f({vec({float(call), 0, 0, 0})})[0].to_vector<float>(), (std::vector<float>{10.f * (1 + call), 40, 90, 160}))
        << "call " << call;
}

// Regression (review): the previous call's output passed back as the input (a recurrence). The
// plan writes that buffer, so its kernels must read a copy: a matmul reading and writing one buffer
// would read values it already overwrote.
TEST(Jit, AnOutputPassedBackAsTheInputIsReadAsACopy) {
  const int64_t n = 96;  // several vectors of outputs: one buffer read and written would be seen
  std::vector<float> w(n * n), h0(n);
  for (int64_t i = 0; i < n * n; ++i) w[i] = 0.02f * static_cast<float>((i * 7) % 11) - 0.1f;
  for (int64_t i = 0; i < n; ++i) h0[i] = 0.02f * static_cast<float>(i % 13) - 0.1f;
  Tensor W = Tensor::from_vector<float>(w, {n, n}, kDevice).realize();
  Jit step([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0].matmul(W).tanh()}; });
  Tensor h = Tensor::from_vector<float>(h0, {1, n}, kDevice).realize();
  std::vector<double> want(h0.begin(), h0.end());
  for (int t = 0; t < 6; ++t) {
    h = step({h})[0];
    std::vector<double> next(n, 0);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < n; ++i) next[j] += want[i] * w[i * n + j];
      next[j] = std::tanh(next[j]);
    }
    want = next;
    std::vector<float> got = h.to_vector<float>();
    for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(got[j], want[j], 1e-5) << "step " << t << " element " << j;
  }
  EXPECT_TRUE(step.captured());
}

// Regression (review): a variable of the same name but another range would make the kernels write
// past buffers sized for the captured range.
TEST(Jit, AVariableWithAnotherRangeThrows) {
  Variable n("n", 1, 8);
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    return std::vector<Tensor>{in[0].shrink(0, vars[0]) * 2};
  });
  Tensor x = vec(iota(8, 0)).realize();
  f({x}, {n.bind(3)});
  f({x}, {n.bind(4)});
  Variable wider("n", 1, 100);
  expect_error([&] { f({x}, {wider.bind(5)}); }, ErrorCode::invalid_argument,
               "variable 0 is 'n' in [1, 100], captured as 'n' in [1, 8]");
  EXPECT_EQ(f({x}, {n.bind(5)})[0].to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8}));
}

// Regression (review): a Jit replayed inside another Jit's capture ran no realize, so the outer
// plan missed its kernels and replayed stale values.
TEST(Jit, AJitCalledInsideAnotherJitsCaptureIsRecordedByIt) {
  Jit inner([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 2}; });
  Jit outer([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{inner({in[0] + 1})[0] + 100};
  });
  for (int i = 0; i < 3; ++i) inner({vec({0})});  // the inner one is captured already
  ASSERT_TRUE(inner.captured());
  for (int call = 1; call <= 5; ++call)
    EXPECT_EQ(outer({vec({float(call)})})[0].item<float>(), 2.f * (call + 1) + 100) << "call " << call;
  EXPECT_TRUE(outer.captured());
  EXPECT_EQ(inner({vec({5})})[0].item<float>(), 10.f) << "the inner Jit still replays on its own";
}
