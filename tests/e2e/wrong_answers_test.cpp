// tests/e2e/wrong_answers_test.cpp - what a probe of the public API (issue 43) and the fuzzer
// (fuzz_test.cpp) found: each case a program a user could write and what it must give. Before its
// fix each gave another number without a word, or threw on a valid program, hung, or kept silent
// about a problem it should name. The FuzzFindings cases that need several devices run in
// test_e2e_fuzz_findings_3 (three cpu devices); with one device they skip.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "runtime/compile_cache.hpp"
#include "tensor/tensor_state.hpp"

using kiln::testing::expect_error;

using namespace kiln;

namespace {

const char* kDevice = "cpu:0";

Tensor vec(const std::vector<float>& v) { return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}, kDevice); }

}  // namespace

// --- an assign is realized exactly once ------------------------------------------------------

TEST(AssignOnce, AReaderRealizedFirstRunsTheAssignOnlyOnce) {
  Tensor a = Tensor::zeros({4}, dtypes::float32, kDevice).contiguous().realize();
  a.assign(a + 1.0);
  EXPECT_EQ((a * 1.0).to_vector<float>(), (std::vector<float>(4, 1)));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>(4, 1)));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>(4, 1)));  // and reading again changes nothing
}

TEST(AssignOnce, ALazyReaderBuiltBeforeTheRealizeSeesTheAssignOnce) {
  Tensor a = vec({1, 2}).realize();
  a.assign(a * 10.0);
  Tensor r1 = a + 0.0, r2 = a * 2.0;  // both read the pending assign
  EXPECT_EQ(r1.to_vector<float>(), (std::vector<float>{10, 20}));
  EXPECT_EQ(r2.to_vector<float>(), (std::vector<float>{20, 40}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{10, 20}));
}

TEST(AssignOnce, ChainedAssignsEachApplyOnce) {
  Tensor a = vec({1}).realize();
  a.assign(a * 10.0);
  Tensor view = a.reshape({1, 1});
  EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{10}));
  a.assign(a * 10.0);
  EXPECT_EQ((a + 0.0).to_vector<float>(), (std::vector<float>{100}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{100}));
  EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{100}));
}

// (tinygrad's semantics: an assign pending on one handle is not seen through another handle of the
// same buffer until it is realized; then every handle reads the buffer)
TEST(AssignOnce, AnAssignThroughAViewHandleAppliesOnce) {
  Tensor a = vec({1, 2, 3, 4}).realize();
  Tensor m = a.reshape({2, 2});
  m.assign(m + 1.0);
  EXPECT_EQ((a * 1.0).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
}

TEST(AssignOnce, AReaderBuiltBeforeTheAssignAndRealizedAfterReadsTheOldValue) {
  Tensor c = vec({1, 2}).realize();
  Tensor r = c + 0.0;
  c.assign(c * 3.0);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(AssignOnce, AnSgdStepRealizedAfterAReadOfTheParameterAppliesOnce) {
  Tensor p = vec({1, 2}).requires_grad_();
  optim::SGD opt({p}, 0.5);
  (p * p).sum().backward();  // gradient 2p
  std::vector<Tensor> st = opt.step_tensors();
  EXPECT_FLOAT_EQ((p * 1.0).sum().item<float>(), 0.0f);  // p - 0.5 * 2p = 0
  Tensor::realize_all(st);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(AssignOnce, AnInputAJitAssignsInPlaceAdvancesOncePerCall) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    Tensor x = in[0];
    x.assign(x + 1.0);
    return std::vector<Tensor>{x * 1.0};
  });
  Tensor x = Tensor::zeros({1}, dtypes::float32, kDevice).contiguous().realize();
  for (int call = 1; call <= 5; ++call) {
    EXPECT_EQ(f({x})[0].to_vector<float>(), (std::vector<float>{static_cast<float>(call)})) << "call " << call;
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{static_cast<float>(call)})) << "call " << call;
  }
}

// --- clone snapshots ---------------------------------------------------------------------------

TEST(CloneSnapshots, ACloneOfAJitOutputKeepsThatCallsValue) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 2.0}; });
  std::vector<Tensor> kept;
  for (int call = 1; call <= 4; ++call) kept.push_back(f({vec({static_cast<float>(call)}).realize()})[0].clone());
  for (int call = 1; call <= 4; ++call)
    EXPECT_EQ(kept[call - 1].to_vector<float>(), (std::vector<float>{2.0f * call})) << "call " << call;
}

TEST(CloneSnapshots, ACloneKeepsTheValueBeforeALaterAssign) {
  Tensor a = vec({1, 2}).realize();
  Tensor c = a.clone();
  a.assign(a * 3.0).realize();
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{3, 6}));
}

// --- step state lives on the device -------------------------------------------------------------

namespace {

// 50 steps of `make_opt` on a small regression problem with a new batch every step (a constant
// gradient pattern too, which is where baked bias corrections showed first), eager and replayed by
// a Jit; returns every step's loss and the final weights.
template <typename MakeOpt>
std::vector<float> train(MakeOpt make_opt, bool jitted, int steps = 50) {
  auto batch = [](int s) {
    std::vector<float> v(12);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>((i * 5 + static_cast<size_t>(s) * 3) % 7) - 0.3f;
    return Tensor::from_vector<float>(v, {4, 3}, kDevice);
  };
  Tensor target = Tensor::from_vector<float>({1, 0, 0, 1, 1, 0, 0, 1}, {4, 2}, kDevice);
  Tensor w = Tensor::from_vector<float>({0.1f, -0.2f, 0.3f, 0.05f, 0.2f, -0.1f}, {2, 3}, kDevice).requires_grad_();
  Tensor b = Tensor::from_vector<float>({0.4f, -0.3f}, {2}, kDevice).requires_grad_();
  auto opt = make_opt(std::vector<Tensor>{w, b});
  auto step = [&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    opt.zero_grad();
    Tensor loss = (in[0].linear(w, b).log_softmax(1) * target).sum() * -0.25;
    loss.backward();
    std::vector<Tensor> out = opt.step_tensors();
    out.push_back(loss);
    return out;
  };
  Jit jit(step);
  std::vector<float> trace;
  for (int s = 0; s < steps; ++s) {
    std::vector<Tensor> out = jitted ? jit({batch(s)}) : step({batch(s)}, {});
    if (!jitted) Tensor::realize_all(out);
    trace.push_back(out.back().item<float>());
  }
  EXPECT_EQ(jit.captured(), jitted);
  for (const Tensor& p : {w, b})
    for (float v : p.to_vector<float>()) trace.push_back(v);
  return trace;
}

template <typename MakeOpt>
void expect_jit_equals_eager(MakeOpt make_opt, const char* name) {
  SCOPED_TRACE(name);
  std::vector<float> eager = train(make_opt, false), jitted = train(make_opt, true);
  ASSERT_EQ(eager.size(), jitted.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(jitted[i], eager[i]) << (i < 50 ? "loss of step " : "weight ") << i;
  EXPECT_NE(eager[0], eager[49]);  // it trained
}

}  // namespace

TEST(StepState, AJittedStepEqualsTheEagerStepBitForBitOverFiftySteps) {
  expect_jit_equals_eager([](std::vector<Tensor> p) { return optim::SGD(p, 0.1); }, "SGD");
  expect_jit_equals_eager([](std::vector<Tensor> p) { return optim::SGD(p, 0.05, 0.9, 0.01); }, "SGD momentum, weight decay");
  expect_jit_equals_eager([](std::vector<Tensor> p) { return optim::SGD(p, 0.05, 0.9, 0.01, true); }, "SGD Nesterov");
  expect_jit_equals_eager([](std::vector<Tensor> p) { return optim::Adam(p, 0.01); }, "Adam");
  expect_jit_equals_eager([](std::vector<Tensor> p) { return optim::Adam(p, 0.01, 0.9, 0.999, 1e-8, 0.1); }, "AdamW");
}

// Adam's bias corrections changed every step as host constants, so eager Adam compiled new kernels
// at every step (12 ms a step, a cache file each). Now step 3 on runs step 2's kernels.
TEST(StepState, EagerAdamCompilesNothingAfterItsSecondStep) {
  Tensor w = Tensor::from_vector<float>({0.3f, -0.2f, 0.1f, 0.4f}, {4}, kDevice).requires_grad_();
  Tensor x = Tensor::from_vector<float>({0.5f, -1, 2, 0.25f}, {4}, kDevice);
  optim::Adam opt({w}, 0.01);
  std::optional<runtime::CompileStats> before;
  for (int s = 0; s < 6; ++s) {
    if (s == 2) before = runtime::compile_stats();
    opt.zero_grad();
    ((w * x - 1.0) * (w * x - 1.0)).sum().backward();
    opt.step();
  }
  runtime::CompileStats after = runtime::compile_stats();
  EXPECT_EQ(after.compiles + after.disk_hits + after.memory_hits, before->compiles + before->disk_hits + before->memory_hits);
}

TEST(StepState, ALearningRateScheduleIsSeenByAJittedStep) {
  Tensor w = Tensor::from_vector<float>({1, 2}, {2}, kDevice).requires_grad_();
  optim::SGD opt({w}, 0.5);
  Jit step([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    opt.zero_grad();
    (w * in[0]).sum().backward();  // gradient: in
    return opt.step_tensors();
  });
  Tensor ones = Tensor::from_vector<float>({1, 1}, {2}, kDevice);
  float want = 1;
  for (int s = 0; s < 6; ++s) {
    double lr = 0.5 / (s + 1);
    opt.set_lr(lr);
    EXPECT_EQ(opt.lr(), lr);
    step({ones});
    want -= static_cast<float>(lr);
    EXPECT_FLOAT_EQ(w.to_vector<float>()[0], want) << "step " << s;
  }
  EXPECT_TRUE(step.captured());
  const ErrorCode bad = ErrorCode::invalid_argument;
  expect_error([&] { opt.set_lr(std::nan("")); }, bad, "learning rate must be a finite number >= 0 (got nan)");
  expect_error([&] { opt.set_lr(-1); }, bad, "(got -1)");
  expect_error([&] { optim::Adam({w}, std::nan("")); }, bad, "learning rate");
  expect_error([&] { optim::SGD({w}, -0.1); }, bad, "(got -0.1)");
}

// --- gradients follow torch at the kinks ---------------------------------------------------------

namespace {
std::vector<float> grad_of(const Tensor& loss, const Tensor& wrt) { return loss.gradient({wrt})[0].to_vector<float>(); }
}  // namespace

TEST(GradientKinks, ReluAndAbsTakeZeroAtZero) {
  Tensor x = vec({-1, 0, 2, -0.0f});
  EXPECT_EQ(grad_of(x.relu().sum(), x), (std::vector<float>{0, 0, 1, 0}));
  EXPECT_EQ(grad_of(x.abs().sum(), x), (std::vector<float>{-1, 0, 1, 0}));
  Tensor n = vec({std::nanf(""), -3});
  std::vector<float> r = n.relu().to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]));  // relu keeps NaN
  EXPECT_EQ(r[1], 0.0f);
  EXPECT_FALSE(std::signbit(r[1]));  // +0, not -0
}

TEST(GradientKinks, ProdWithZerosIsTheProductOfTheOthers) {
  Tensor x = Tensor::from_vector<float>({2, 0, 3, 1, 2, 3, 0, 0, 1}, {3, 3}, kDevice);
  EXPECT_EQ(grad_of(x.prod({1}).sum(), x), (std::vector<float>{0, 6, 0, 6, 3, 2, 0, 0, 0}));
  Tensor all = vec({0, 4, 5});
  EXPECT_EQ(grad_of(all.prod(), all), (std::vector<float>{20, 0, 0}));
}

TEST(GradientKinks, PowAtZero) {
  Tensor b = vec({0, 0, 2, 0}), e = vec({0, 2, 3, -1});
  Tensor loss = b.pow(e).sum();
  std::vector<Tensor> g = loss.gradient({b, e});
  std::vector<float> db = g[0].to_vector<float>(), de = g[1].to_vector<float>();
  EXPECT_EQ(db[0], 0.0f);  // torch: 0 where the exponent is 0
  EXPECT_EQ(db[1], 0.0f);
  EXPECT_FLOAT_EQ(db[2], 12.0f);
  EXPECT_TRUE(std::isinf(db[3]));  // -1 * 0^-2 = -inf (torch)
  EXPECT_EQ(de[0], 0.0f);          // torch: 0 where the base is 0 and the exponent >= 0
  EXPECT_EQ(de[1], 0.0f);
  EXPECT_FLOAT_EQ(de[2], 8.0f * std::log(2.0f));
}

TEST(GradientKinks, SigmoidAndTanhAtInfinityAreZero) {
  float inf = std::numeric_limits<float>::infinity();
  Tensor x = vec({-inf, inf, 0});
  EXPECT_EQ(grad_of(x.sigmoid().sum(), x), (std::vector<float>{0, 0, 0.25f}));
  EXPECT_EQ(grad_of(x.tanh().sum(), x), (std::vector<float>{0, 0, 1}));
}

TEST(GradientKinks, TiesSplitEvenlyAsTorchsMaximumAndAmax) {
  Tensor a = vec({1, 2, 3}), b = vec({1, 5, 0});
  std::vector<Tensor> g = a.maximum(b).sum().gradient({a, b});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{0.5f, 0, 1}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{0.5f, 1, 0}));
  Tensor m = vec({3, 1, 3, 2});
  EXPECT_EQ(grad_of(m.max(), m), (std::vector<float>{0.5f, 0, 0.5f, 0}));
  EXPECT_EQ(grad_of(m.min(), m), (std::vector<float>{0, 1, 0, 0}));
}

TEST(GradientKinks, ComparisonsAndRoundingPassNoGradientOnPurpose) {
  Tensor x = vec({0.5f, -1.5f, 2});
  Tensor loss = (x.lt(Tensor::zeros({3}, dtypes::float32, kDevice)).cast(dtypes::float32) * x + x.sign()).sum();
  EXPECT_EQ(grad_of(loss, x), (std::vector<float>{0, 1, 0}));
}

// An op with no rule is an error that names it, never a silent zero gradient.
TEST(GradientKinks, AnOpWithoutARuleIsAnErrorNamingIt) {
  Tensor x = vec({1, 2});
  const UOp& u = x.uop();
  Tensor fused = detail::make(UOp::make(Ops::MULACC, u.dtype(), {u, u, u}), x.shape(), x.device());
  expect_error([&] { (void)fused.sum().gradient({x}); }, ErrorCode::unimplemented, "the op MULACC has no gradient rule");
  EXPECT_EQ(grad_of(fused.detach().sum() + x.sum(), x), (std::vector<float>{1, 1}));
}

// --- errors that must be clear -------------------------------------------------------------------

// A Jit whose function called the same Jit waited forever on its own lock.
TEST(ClearErrors, AJitWhoseFunctionCallsItselfThrows) {
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> inner;
  Jit self([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return inner(in); });
  inner = [&](const std::vector<Tensor>& in) { return self(in); };
  expect_error([&] { self({vec({1}).realize()}); }, ErrorCode::failed_precondition, "called the Jit that is running it");
  // and the Jit is usable afterwards with a function that does not recurse
  inner = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1.0}; };
  for (int call = 0; call < 3; ++call) EXPECT_EQ(self({vec({1}).realize()})[0].to_vector<float>(), (std::vector<float>{2}));
}

// --- host scalars are kernel arguments -----------------------------------------------------------

// `for i: (x * i + 1).sum()` compiled a kernel per i (10 ms each; 5000 iterations over 15 s). A
// float scalar is now a kernel argument: one schedule, one kernel, every value right.
TEST(Scalars, ANewScalarRunsTheSameKernel) {
  std::vector<float> host(1024);
  for (size_t i = 0; i < host.size(); ++i) host[i] = 0.001f * static_cast<float>(i % 97);
  Tensor x = Tensor::from_vector<float>(host, {1024}, kDevice).realize();
  auto want = [&](double s) {
    double sum = 0;
    for (float v : host) sum += static_cast<float>(static_cast<float>(v * static_cast<float>(s)) + 1.0f);
    return sum;
  };
  EXPECT_NEAR((x * 2.0 + 1.0).sum().item<float>(), want(2.0), 1e-3);
  const runtime::CompileStats before = runtime::compile_stats();
  for (double s : {3.0, 2.5, -7.25, 1e-3, 123.0, 0.5}) EXPECT_NEAR((x * s + 1.0).sum().item<float>(), want(s), 1e-3 * (1 + std::fabs(want(s)))) << s;
  const runtime::CompileStats after = runtime::compile_stats();
  EXPECT_EQ(after.compiles + after.disk_hits + after.memory_hits, before.compiles + before.disk_hits + before.memory_hits)
      << "a new scalar ran the first kernel";
}

TEST(Scalars, EveryFloatDtypeAndTheBakedValuesGiveTheirNumbers) {
  for (DType d : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64}) {
    SCOPED_TRACE(d.name());
    Tensor x = Tensor::from_vector<float>({1, -2, 0.5f}, {3}, kDevice).cast(d).realize();
    for (double s : {0.0, -0.0, 1.0, -1.0, 0.375, -3.5, 1e10}) {
      std::vector<double> got = (x * s).cast(dtypes::float64).to_vector<double>();
      std::vector<double> ref = (Tensor::from_vector<float>({1, -2, 0.5f}, {3}, "ref").cast(d) * s).cast(dtypes::float64).to_vector<double>();
      EXPECT_EQ(got, ref) << s;
    }
    float inf = std::numeric_limits<float>::infinity();
    std::vector<double> m = (x * inf).cast(dtypes::float64).to_vector<double>();
    EXPECT_EQ(m[0], inf);
    EXPECT_EQ(m[1], -inf);
  }
  // (the name prefix is kiln's)
  expect_error([] { Variable("__scalar0", 0, 4); }, ErrorCode::invalid_argument, "kiln's own");
}

// An unwritable KILN_CACHE_DIR was ignored without a word: every process compiled everything again.
TEST(ClearErrors, AnUnwritableCacheDirectoryIsNamedOnce) {
  const std::string file = ::testing::TempDir() + "kiln_cache_is_a_file";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_TRUE(f);
  std::fclose(f);
  const char* old = std::getenv("KILN_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("KILN_CACHE_DIR", (file + "/sub").c_str(), 1);  // a directory under a file: no one can create it, root neither
  ::testing::internal::CaptureStderr();
  EXPECT_EQ((vec({1, 2, 3}).reshape({3, 1}).expand({3, 37}) * 1.0).sum().item<float>(), 222.0f);
  EXPECT_EQ((vec({1, 2, 3}).reshape({3, 1}).expand({3, 41}) * 1.0).sum().item<float>(), 246.0f);
  std::string err = ::testing::internal::GetCapturedStderr();
  if (old) setenv("KILN_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("KILN_CACHE_DIR");
  std::remove(file.c_str());
  size_t at = err.find("kiln: cannot write the cache directory " + file + "/sub");
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.find("set KILN_CACHE_DIR to a writable directory, or to off"), std::string::npos) << err;
  EXPECT_EQ(err.find("kiln: cannot write the cache directory", at + 1), std::string::npos) << "said once:\n" << err;
}

// --- found by the fuzzer (tests/e2e/fuzz_test.cpp) -------------------------------------------------

// A float16 buffer whose every read the passes folded away (a gate the bounds decide, in a peeled
// loop) stayed a parameter typed float16, and the cpu target, which emulates float16, refused the
// kernel: "computes in float16 (PARAM), which the target does not support".
TEST(FuzzFindings, AnUnreadHalfBufferOnATargetThatEmulatesHalf) {
  auto run = [](const std::string& dev) {
    std::vector<double> a{-1.375, -1.375, -0.25, 1.625, 1.75, 1.125, -0.25, -1.5, -1.625, -1, -0.5,
                          0.5, 0.75, -1.75, 0, -0.5, -0.125, 1.875, -0.25, -1.75, 2};
    Tensor t0 = Tensor::from_vector<double>(a, {7, 3}, dev).cast(dtypes::float16).realize();
    Tensor t2 = t0.pad({{1, 0}, {0, 2}}).shrink({{2, 8}, {3, 4}});
    Tensor t3 = Tensor::from_vector<double>({0, 1.875, 1.5, 1.25, 0.5, 0.75}, {6, 1}, dev).cast(dtypes::float16).realize();
    return Tensor::where(t2.gt(t3), t2, t3).pad({{1, 1}, {2, 0}}).cast(dtypes::float32).to_vector<float>();
  };
  EXPECT_EQ(run(kDevice), run("ref"));
}

// Gradients with respect to a replicated tensor that shard() made from one device counted a part
// twice: the parts on other devices are copies of the first, so a part's gradient also flowed into
// the part it was copied from, and the all-reduce of the parts added it again (-2 for -1).
TEST(FuzzFindings, AReplicatedInputsGradientCountsEachPartOnce) {
  std::vector<std::string> cpus;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) cpus.push_back(d);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two cpu devices (ctest: test_fuzz's config)";
  std::vector<float> v(21);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i) - 1;
  Tensor x = Tensor::from_vector<float>(v, {21, 1}, kDevice).shard(cpus, 0);
  Tensor c = Tensor::from_vector<float>({0.5f}, {1, 1}, kDevice).shard(cpus);  // parts 1.. are copies of part 0
  x = x + 30.0 / 21;
  EXPECT_EQ((x - c).shrink({{11, 12}, {0, 1}}).sum().gradient({c})[0].to_vector<float>(), (std::vector<float>{-1}));
  EXPECT_NEAR((x * c).sum().gradient({c})[0].item<float>(), std::accumulate(v.begin(), v.end(), 0.0) + 30, 1e-4);
}

// A max (min) over a softmax's output: its gradient goes to the elements equal to the maximum,
// but the mask compared the forward's maximum with the input recomputed in another kernel, where
// the softmax's sum rounded differently, so no element matched and the gradient was 0 (fuzzer,
// seed 2020 case 463: a min over an axis of 1, the identity, lost its whole gradient).
TEST(FuzzFindings, AMaxOfARecomputedSoftmaxKeepsItsGradient) {
  const std::vector<float> a{0.645154f,  -0.417002f, -0.160744f, 0.71356f,   0.885571f,  -1.216179f, 1.37942f,   -0.754791f,
                             -1.33725f,  -1.300671f, 0.988544f,  -0.856473f, 1.205208f,  -1.059979f, -0.041557f, -0.569259f,
                             -1.455483f, -0.869472f, -0.288478f, 0.759563f,  0.176242f,  1.157689f,  0.192951f,  0.00194f,
                             -0.579296f, -0.11064f,  -0.748752f, 0.759276f,  0.597026f,  -0.242315f, -1.417333f, 1.475354f,
                             -0.375877f, 0.435801f,  -0.185452f, -1.322126f, -0.902287f, 1.302477f,  0.181015f,  0.823555f,
                             -0.741904f, 0.213079f,  0.890508f,  0.297966f,  -1.398496f};
  std::vector<float> w(49);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i) * 1.7f);
  Tensor x = Tensor::from_vector<float>(a, {5, 3, 3}, kDevice).pad({{2, 0}, {2, 2}, {2, 2}}).contiguous().realize();
  Tensor wt = Tensor::from_vector<float>(w, {7, 7}, kDevice);
  Tensor p = x.var({1}, true).softmax(2);  // (7, 1, 7)
  std::vector<float> through_min = grad_of((p.min({1}) * wt).sum(), x);
  std::vector<float> plain = grad_of((p.reshape({7, 7}) * wt).sum(), x);  // a min over one element is the element
  ASSERT_EQ(through_min.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(through_min[i], plain[i], 1e-6 + 1e-5 * std::abs(plain[i])) << "element " << i;
}

// std over a group of equal values: torch's gradient is 0; sqrt's inf times var's 0 gave NaN.
TEST(GradientKinks, StdOfAConstantGroupHasAZeroGradient) {
  Tensor x = vec({0.5f, 0.5f, 0.5f});
  std::vector<float> g = grad_of(x.std(), x);
  EXPECT_EQ(g, (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(x.std().item<float>(), 0.0f);
  Tensor y = vec({1, 2, 4});
  std::vector<float> gy = grad_of(y.std(), y);  // (x - mean) / ((n - 1) std)
  double sd = std::sqrt(((1 - 7 / 3.0) * (1 - 7 / 3.0) + (2 - 7 / 3.0) * (2 - 7 / 3.0) + (4 - 7 / 3.0) * (4 - 7 / 3.0)) / 2);
  EXPECT_NEAR(gy[0], (1 - 7 / 3.0) / (2 * sd), 1e-5);
}

// Empty reductions: the gradient of a sum over no elements is an empty tensor of the input's shape,
// and a max over an empty axis passes nothing (no 0 / 0 from counting no maxima).
TEST(GradientKinks, EmptyReductionsHaveEmptyGradients) {
  Tensor x = Tensor::zeros({0, 3}, dtypes::float32, kDevice).contiguous().realize();
  std::vector<Tensor> g = x.sum({0}).sum().gradient({x});
  EXPECT_EQ(g[0].shape(), (Shape{0, 3}));
  EXPECT_TRUE(g[0].to_vector<float>().empty());
  Tensor y = Tensor::from_vector<float>({1, 2, 3}, {1, 3}, kDevice);
  EXPECT_EQ(grad_of(y.sum({0}).sum() + x.sum(), y), (std::vector<float>{1, 1, 1}));
}

// A loss whose first part sits on another device than the graph's node for it (the parts flipped,
// then an all-reduce that reads them in place) threw 'operands are on different devices' in the
// backward pass: the rule ran on the root's gradient where the node was not (fuzzer, seed 12 case
// 1423, as it shards: inputs of 3 rows or more split on axis 0, the others replicated).
TEST(FuzzFindings, AGradientThroughFlippedPartsAndAnAllReduce) {
  std::vector<std::string> cpus;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) cpus.push_back(d);
  if (cpus.size() < 3) GTEST_SKIP() << "needs three cpu devices (ctest: test_e2e_cpu_devices' config)";
  cpus.resize(3);
  auto in = [&](const std::vector<float>& v, bool split) {
    Tensor t = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}, kDevice).realize();
    return split ? t.shard(cpus, 0) : t.shard(cpus);
  };
  Tensor t0 = in({-0.83f, -0.76f, -0.54f, -1.49f, 0.32f, 0.59f, -1.44f}, true), t1 = in({0.87f}, false);
  Tensor t5 = in({-0.38f, -1.17f, 0.52f}, true);
  Tensor t4 = (t0 + t1).max({0}, true).expand({3});
  Tensor t9 = Tensor::where(t4.gt(t5), t4, t5).pad({{0, 0}}).flip({0}).mean({0});
  Tensor w = Tensor::from_vector<float>({0.5f}, {}, kDevice).shard(cpus);
  std::vector<Tensor> g = (t9 * w).sum().gradient({t0, t1});
  // t4 (the max, row 5: 0.59 + 0.87 = 1.46) wins every where over t5: d/d t0[5] =
  // 3 * (0.5 / 3), d/d t1 = the same
  std::vector<float> want(7, 0.0f);
  want[5] = 0.5f;
  std::vector<float> got = g[0].to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  EXPECT_NEAR(g[1].to_vector<float>()[0], 0.5f, 1e-6);
}

// tanh was 2 sigmoid(2x) - 1, which cancels near 0: tanh(1e-6) came out 5% off in float32 and
// tanh(1e-8) as 0 (found through the fuzzer: a where comparing tanh(x) with x near 0 flipped).
TEST(Accuracy, TanhIsAccurateNearZeroAndEverywhere) {
  std::vector<float> xs{1e-8f, -1e-6f, 3e-5f, -0.0046110921f, 0.1f, -0.29f, 0.3f, 0.31f, -0.7f, 1.5f, -4, 9, 20, 0, -0.0f};
  std::vector<float> got = vec(xs).tanh().to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = std::tanh(static_cast<double>(xs[i]));
    EXPECT_NEAR(got[i], want, 4e-7 * std::fabs(want) + 1e-45) << "tanh(" << xs[i] << ")";
  }
  std::vector<float> edge = vec({std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), std::nanf("")}).tanh().to_vector<float>();
  EXPECT_EQ(edge[0], 1.0f);
  EXPECT_EQ(edge[1], -1.0f);
  EXPECT_TRUE(std::isnan(edge[2]));
  Tensor x = vec({1e-6f, -0.3f, 2});
  std::vector<float> g = x.tanh().sum().gradient({x})[0].to_vector<float>();
  for (size_t i = 0; i < 3; ++i) {
    double th = std::tanh(static_cast<double>(x.to_vector<float>()[i]));
    EXPECT_NEAR(g[i], 1 - th * th, 1e-6) << i;
  }
}

// A graph lifts at most 16 scalars (the rest stay baked), and a kernel may take them beside its own
// variables: 20 distinct scalars and a symbolic size in one kernel give the right numbers.
TEST(Scalars, ManyScalarsAndAVariableInOneKernel) {
  Variable n("n", 1, 8);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {8}, kDevice).realize();
  for (int64_t len : {int64_t(5), int64_t(8)}) {
    Tensor y = x.shrink(0, n.bind(len));
    double want_scale = 1;
    for (int k = 0; k < 20; ++k) {
      double s = 1.0 + 0.01 * (k + 1);
      y = y * s;
      want_scale *= static_cast<float>(s);
    }
    std::vector<float> got = y.contiguous().to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], (i + 1) * want_scale, 1e-4 * (i + 1) * want_scale) << i;
  }
}

namespace {
std::vector<std::string> cpu_devices_or_skip(size_t n) {
  std::vector<std::string> cpus;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) cpus.push_back(d);
  if (cpus.size() > n) cpus.resize(n);
  return cpus;
}
}  // namespace

// The part of shard() on the source's own device was the source itself (a replica) or a view of its
// buffer (a split): an assign to the source changed that replica alone, and an assign to a split
// tensor threw. Found by the fuzzer's second version (B1, B2).
TEST(FuzzFindings, EveryPartOfAShardOwnsItsStorage) {
  std::vector<std::string> cpus = cpu_devices_or_skip(3);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two cpu devices";
  Tensor t = Tensor::from_vector<float>({1, 2, 3}, {3}, cpus[0]).realize();
  Tensor s = t.shard(cpus).realize();
  t.assign(t * 2.0).realize();
  for (const std::string& d : cpus) EXPECT_EQ(s.to(d).to_vector<float>(), (std::vector<float>{1, 2, 3})) << d;
  s.assign(s * 3.0).realize();
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  for (const std::string& d : cpus) EXPECT_EQ(s.to(d).to_vector<float>(), (std::vector<float>{3, 6, 9})) << d;
  Tensor split = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5}, cpus[0]).realize().shard(cpus, 0).realize();
  split.assign(split * 0.5);
  EXPECT_EQ(split.to_vector<float>(), (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f}));
}

// The parts of a sharded tensor's assign read every part as it was before (a sum, a flip): realized
// one part at a time (a second assign, a reader of one part first), a later part read what an
// earlier one had written already. Found by the fuzzer's second version (B3, B4).
TEST(FuzzFindings, ASplitTensorsAssignWritesAllPartsFromTheOldValues) {
  std::vector<std::string> cpus = cpu_devices_or_skip(3);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two cpu devices";
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {6}, cpus[0]).shard(cpus, 0).realize();
  a.assign(a.sum());
  a.assign(a + 1.0);
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(6, 22));
  Tensor b = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {6}, cpus[0]).shard(cpus, 0).realize();
  b.assign(b.flip({0}));
  EXPECT_EQ(b.shrink({{4, 6}}).to_vector<float>(), (std::vector<float>{1, 0}));  // a reader of the last part first
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{5, 4, 3, 2, 1, 0}));
}

// --- a kernel that would read more buffers than a launch binds --------------------------------

// A cat or sum of many tensors fused into one kernel read more than the 64 buffers a launch binds
// and threw an internal error on a valid program (found through ONNX's Concat and RNN unrolling):
// the scheduler now splits such a kernel.
TEST(ManyInputs, CatAndSumOfManyTensorsSplitIntoKernelsThatFit) {
  std::vector<Tensor> parts;
  std::vector<float> want_cat;
  std::vector<float> want_sum(3, 0.f);
  for (int i = 0; i < 150; ++i) {
    std::vector<float> v{float(i), float(i) * 0.5f, float(-i)};
    parts.push_back(Tensor::from_vector<float>(v, {1, 3}, kDevice));
    want_cat.insert(want_cat.end(), v.begin(), v.end());
    for (int j = 0; j < 3; ++j) want_sum[j] += v[j];
  }
  EXPECT_EQ(Tensor::cat(parts, 0).to_vector<float>(), want_cat);
  Tensor sum = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) sum = sum + parts[i];
  EXPECT_EQ(sum.reshape({3}).to_vector<float>(), want_sum);
  // the same under a reduce: one value from all of them
  float total = want_sum[0] + want_sum[1] + want_sum[2];
  EXPECT_EQ(Tensor::cat(parts, 0).sum().item<float>(), total);
}

// Found by the fuzzer (seed 202, case 124): an assign whose value is staged in a temporary (it
// reads its own target across positions: b := b + a @ b) recorded every input of the staging
// kernel as read at its original version, so an input an earlier assign had written (a := a + c)
// was to be read before that write, and after it: "the kernels ... depend on each other in a cycle".
// Both assigns apply, in order, on cpu:0 and on the reference device.
TEST(FuzzFindings, AStagedAssignReadsAnInputAnEarlierAssignWrote) {
  const std::vector<float> av{-0.671875f, 0.65625f, -1.078125f, 1.96875f}, cv{0.328125f, -0.421875f},
      bv{-0.25f, 1.0f, -0.96875f, -1.640625f, -1.578125f, 0.40625f, 1.953125f, -0.8125f, 0.9375f, 0.6875f, -1.15625f, 1.75f, -1.625f, -0.09375f};
  auto run = [&](const std::string& dev) {
    Tensor a = Tensor::from_vector(av, {2, 2}, dev).realize(), c = Tensor::from_vector(cv, {1, 2}, dev).realize();
    Tensor b = Tensor::from_vector(bv, {2, 7}, dev).realize();
    a.assign(a + c);
    b.assign(b + a.matmul(b));
    std::vector<float> b_out = b.to_vector<float>();  // first: b's schedule holds both assigns
    return std::pair{a.to_vector<float>(), b_out};
  };
  std::vector<double> a2(4), want(14);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 2; ++k) a2[size_t(i * 2 + k)] = double(av[size_t(i * 2 + k)]) + cv[size_t(k)];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 7; ++j) {
      double s = bv[size_t(i * 7 + j)];
      for (int k = 0; k < 2; ++k) s += a2[size_t(i * 2 + k)] * bv[size_t(k * 7 + j)];
      want[size_t(i * 7 + j)] = s;
    }
  for (const std::string dev : {kDevice, "ref"}) {
    SCOPED_TRACE(dev);
    auto [a, b] = run(dev);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], static_cast<float>(a2[i])) << "a[" << i << "]";
    for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b[i], want[i], 1e-5) << "b[" << i << "]";
  }
}
