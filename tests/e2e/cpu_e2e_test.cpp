// tests/e2e/cpu_e2e_test.cpp - the op corpus and size/dtype sweeps on the CPU plugin, each result
// compared with the reference executor; plus the compile cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <sys/stat.h>

#include "kiln/kiln.hpp"
#include "backend_e2e.hpp"
#include "fusion_e2e.hpp"
#include "error_check.hpp"
#include "ir/traverse.hpp"
#include "plugin/device.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/schedule.hpp"
#include "support/env.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

const char* kDevice = "cpu:0";

Target without(const Target& own, uint32_t op) {
  Target t = own;
  t.ops[op / 64] &= ~(uint64_t{1} << (op % 64));
  return t;
}

struct Override {
  explicit Override(const Target& t) { runtime::set_target_override(&t); }
  ~Override() { runtime::set_target_override(nullptr); }
};

}  // namespace

KILN_OP_CORPUS_SUITE(CpuCorpus, kDevice);

TEST(CpuSweep, OddSizes) { check_odd_sizes(kDevice); }

TEST(CpuBeam, SearchedKernelsMatchTheReference) { check_beam_matches_reference(kDevice, 5); }
TEST(CpuJit, ReplayEqualsEagerBitForBit) { check_jit_matches_eager(kDevice, 2); }

TEST(CpuFusion, MultiOutputAndFusedReduceKernels) { check_fused_kernels(kDevice); }

TEST(CpuSweep, LongReductions) { check_long_reductions(kDevice); }

TEST(CpuSweep, EveryDtypeAndAxis) {
  // every dtype the cpu target lists (the half types, emulated, are covered inside)
  check_every_dtype_and_axis(kDevice, {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8,
                                       dtypes::uint16, dtypes::uint32, dtypes::uint64, dtypes::float32, dtypes::float64});
}

TEST(CpuSweep, EmptyTensorsAreReadable) { check_empty_tensors(kDevice); }

TEST(CpuSweep, UserGuardedDivisorsAreStillGuarded) { check_user_guarded_division(kDevice); }

TEST(CpuSweep, ConcurrentReads) { check_concurrent_reads(kDevice, 100); }

// An op missing from the device's allow-list (simulated: its own target less one op) is not
// rendered: kiln decomposes it where it can (MAX: the result is still right), else it refuses the
// kernel with an error naming the device and the op, before anything reaches the renderer.
TEST(CpuTarget, AnOpMissingFromTheAllowListIsDecomposedOrRefusedNamingTheDevice) {
  const Target own = runtime::open_device(kDevice)->target();
  ASSERT_TRUE(own.supports_op(KILN_LIR_OP_MAX) && own.supports_op(KILN_LIR_OP_IDIV));
  EXPECT_FALSE(own.supports_op(KILN_LIR_OP_LOG2));  // not on the cpu's list: decomposed in every log2 test
  Tensor a = Tensor::from_vector<float>({1, -2, 3, -4, 5, -6, 7, -8}, {8}, kDevice) * 3.0f;
  const Target no_max = without(own, KILN_LIR_OP_MAX);
  {
    Override o(no_max);
    EXPECT_EQ(a.relu().to_vector<float>(), (std::vector<float>{3, 0, 9, 0, 15, 0, 21, 0}));
  }
  const Target no_idiv = without(own, KILN_LIR_OP_IDIV);
  Tensor i = Tensor::from_vector<int32_t>({7, 9, 11, 13}, {4}, kDevice) + 1;
  Override o(no_idiv);
  ErrorCode code{};
  std::string msg = error_of([&] { i.idiv(i - 5).to_vector<int32_t>(); }, &code);
  EXPECT_EQ(code, ErrorCode::unimplemented) << msg;
  EXPECT_NE(msg.find("cpu:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs IDIV (int32"), std::string::npos) << msg;
}

// exp2 on the cpu is rendered with vscalef where the target has AVX-512 (EXP2 on its list) and
// decomposed by the core elsewhere: both agree with std::exp2 over the whole range, at its edges
// (overflow to inf, subnormal results, underflow to 0) and on inf and NaN, in float32 and float64.
TEST(CpuTarget, Exp2NativeAndDecomposedMatchTheReference) {
  const Target own = runtime::open_device(kDevice)->target();
  std::vector<double> xs{INFINITY, -INFINITY, NAN, 0.0, -0.0, 0.5, -0.5, 3.0, 1e-30, -126.2, -149.0, -149.5, -160.0, 127.9, 128.0};
  for (double x = -160; x < 130; x += 0.37) xs.push_back(x);
  for (double x = -1080; x < 1030; x += 3.71) xs.push_back(x);
  auto check = [&](const std::vector<double>& got, bool f32) {
    ASSERT_EQ(got.size(), xs.size());
    for (size_t k = 0; k < xs.size(); ++k) {
      double x = f32 ? static_cast<double>(static_cast<float>(xs[k])) : xs[k];
      double want = f32 ? static_cast<double>(std::exp2(static_cast<float>(x))) : std::exp2(x);
      double tiny = f32 ? std::ldexp(1.0, -149) : std::ldexp(1.0, -1074);  // a subnormal's ulp
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[k])) << x;
      else if (std::isinf(want) || want == 0) EXPECT_EQ(got[k], want) << x;
      else EXPECT_LE(std::fabs(got[k] - want), std::max(tiny, std::fabs(want) * (f32 ? 3e-7 : 1e-15))) << x;
    }
  };
  auto run = [&](bool f32) {
    if (!f32) return Tensor::from_vector<double>(xs, {static_cast<int64_t>(xs.size())}, kDevice).exp2().to_vector<double>();
    std::vector<float> xf(xs.begin(), xs.end());
    std::vector<float> r = Tensor::from_vector<float>(xf, {static_cast<int64_t>(xf.size())}, kDevice).exp2().to_vector<float>();
    return std::vector<double>(r.begin(), r.end());
  };
  for (bool f32 : {true, false}) {
    check(run(f32), f32);
    const Target decomposed = without(own, KILN_LIR_OP_EXP2);
    Override o(decomposed);
    check(run(f32), f32);
  }
}

// Each test gets an empty disk cache of its own and starts as a new process would (nothing in
// memory).
class CompileCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "kiln_cc_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    setenv("KILN_CACHE_DIR", dir_.c_str(), 1);
    new_process();
  }
  void TearDown() override {
    unsetenv("KILN_CACHE_DIR");
    std::filesystem::remove_all(dir_);
  }
  static void new_process() {
    runtime::clear_program_cache();
    runtime::clear_compile_memory_cache();
  }
  static std::vector<float> program() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7}, kDevice);
    return ((x * 3.25) - 1.0).to_vector<float>();
  }
  // Runs the program again as a new process and expects `want`: the stats before and after.
  static std::pair<runtime::CompileStats, runtime::CompileStats> rerun(const std::vector<float>& want) {
    new_process();
    auto before = runtime::compile_stats();
    EXPECT_EQ(program(), want);
    return {before, runtime::compile_stats()};
  }
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> out;
    for (const auto& f : std::filesystem::directory_iterator(dir_)) out.push_back(f.path());
    return out;
  }
  std::string dir_;
};

TEST_F(CompileCache, HitSkipsCompilationAndCorruptEntriesAreRebuilt) {
  auto s0 = runtime::compile_stats();
  auto r1 = program();
  auto s1 = runtime::compile_stats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  auto r2 = program();  // same kernel: program cache
  EXPECT_EQ(runtime::compile_stats().compiles, s1.compiles);
  new_process();
  program();  // from disk
  auto s2 = runtime::compile_stats();
  EXPECT_EQ(s2.compiles, s1.compiles);
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);
  // truncate every entry: detected, rebuilt, same result
  for (const auto& f : entries()) std::filesystem::resize_file(f, 20);
  new_process();
  auto r3 = program();
  auto s3 = runtime::compile_stats();
  EXPECT_EQ(s3.compiles, s2.compiles + 1);
  EXPECT_EQ(s3.corrupt_rebuilt, s2.corrupt_rebuilt + 1);
  EXPECT_EQ(r1, r3);
  EXPECT_EQ(r1, r2);
}

// An entry replaced by a FIFO blocked open() forever; now it is skipped as corrupt and replaced.
TEST_F(CompileCache, EntriesThatAreNotRegularFilesAreRebuiltWithoutBlocking) {
  auto r1 = program();
  ASSERT_FALSE(entries().empty());
  for (const auto& f : entries()) {
    std::filesystem::remove(f);
    ASSERT_EQ(::mkfifo(f.c_str(), 0600), 0);
  }
  auto [s0, s1] = rerun(r1);
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  EXPECT_EQ(s1.corrupt_rebuilt, s0.corrupt_rebuilt + 1);
  for (const auto& f : entries()) EXPECT_TRUE(std::filesystem::is_regular_file(f)) << f;
}

// An intact entry (valid checksum) whose binary does not load was a permanent error; now it is
// rebuilt and overwritten, so the next process loads it from disk.
TEST_F(CompileCache, ValidEntriesThatDoNotLoadAreRebuiltAndOverwritten) {
  auto r1 = program();
  ASSERT_FALSE(entries().empty());
  for (const auto& f : entries()) ASSERT_TRUE(runtime::write_compile_cache_entry(f.string(), "not a binary"));
  auto [s0, s1] = rerun(r1);
  EXPECT_EQ(s1.disk_hits, s0.disk_hits + 1);
  EXPECT_EQ(s1.unloadable_rebuilt, s0.unloadable_rebuilt + 1);
  auto [s1b, s2] = rerun(r1);
  EXPECT_EQ(s2.disk_hits, s1b.disk_hits + 1);
  EXPECT_EQ(s2.compiles, s1b.compiles) << "the overwritten entry loads";
}

// A loop that bakes a new scalar into every kernel compiled a kernel per iteration and grew every
// cache without bound; the in-memory caches now keep KILN_CACHE_ENTRIES entries each and the disk
// cache KILN_CACHE_MAX bytes (the least recently used entries are evicted).
TEST_F(CompileCache, AScalarPerIterationStaysWithinTheBounds) {
  // (an integer scalar is baked into its kernel, so each i is a new kernel; a float one would be a
  // kernel argument and compile once)
  Tensor x = Tensor::from_vector<int32_t>({1, 2, 3}, {3}, kDevice);
  x.realize();
  auto step = [&](int i) {
    Tensor y = x * Tensor::full({3}, i, dtypes::int32, kDevice) + Tensor::full({3}, 1, dtypes::int32, kDevice);
    EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{i + 1, 2 * i + 1, 3 * i + 1})) << i;
  };
  step(0);
  uint64_t entry = 0;
  for (const auto& f : entries()) entry = std::max<uint64_t>(entry, std::filesystem::file_size(f));
  ASSERT_GT(entry, 0u);
  set_knob(Knob::cache_entries, 8);
  set_knob(Knob::cache_max, static_cast<int64_t>(5 * entry));
  auto s0 = runtime::compile_stats();
  for (int i = 1; i <= 40; ++i) step(i);
  runtime::settle_disk_budget();  // the directory's first count runs in the background
  EXPECT_LE(runtime::program_cache_size(), 8u);
  EXPECT_LE(schedule_cache_size(), 8u);
  EXPECT_LE(runtime::compile_memory_cache_size(), 8u);
  uint64_t on_disk = 0;
  for (const auto& f : entries()) on_disk += std::filesystem::file_size(f);
  EXPECT_LE(on_disk, 5 * entry);
  EXPECT_GT(runtime::compile_stats().disk_evictions, s0.disk_evictions);
  step(40);  // the most recent kernel is still cached
  set_knob(Knob::cache_entries, 4096);
  set_knob(Knob::cache_max, int64_t{1} << 30);
}

// Backends whose compilers report the same key (or one backend across versions) never share an
// entry: a backend that compiled garbage poisoned the kernel for cpu:0.
TEST(CompileCacheKey, NamesTheBackendAndItsVersion) {
  runtime::CompileJob job{"source", "entry", Key128{1, 2}};
  Key128 cpu = runtime::compile_cache_key("cpu", "0.1.0", "llvm 15", job);
  EXPECT_FALSE(cpu == runtime::compile_cache_key("other", "0.1.0", "llvm 15", job));
  EXPECT_FALSE(cpu == runtime::compile_cache_key("cpu", "0.2.0", "llvm 15", job));
  EXPECT_FALSE(cpu == runtime::compile_cache_key("cpu", "0.1.0", "llvm 16", job));
  EXPECT_TRUE(cpu == runtime::compile_cache_key("cpu", "0.1.0", "llvm 15", job));
}

TEST(Profile, RecordsEveryLaunchWhileAlive) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, kDevice);
  x.realize();
  Profile outer;
  {
    Profile inner;
    EXPECT_EQ((x + 1).to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
    ASSERT_EQ(inner.runs().size(), 1u);
    const KernelRun& r = inner.runs()[0];
    EXPECT_EQ(r.device, kDevice);
    EXPECT_EQ(r.name.rfind("E_", 0), 0u) << r.name;
    EXPECT_GT(r.seconds, 0);
    EXPECT_EQ(r.global[0] * r.global[1] * r.global[2] >= 1, true);
    EXPECT_NE(inner.table().find(r.name), std::string::npos);
    EXPECT_NE(inner.table().find("1 kernel,"), std::string::npos) << inner.table();
  }
  x.sum().realize();
  EXPECT_EQ(outer.runs().size(), 2u);  // the inner launch and the sum
}

// runtime::set_build_observer (kiln run's progress line): one report per kernel built, none for
// a kernel already in the program cache, nothing once removed.
TEST(BuildObserver, ReportsEachKernelBuilt) {
  runtime::clear_program_cache();
  std::mutex mu;
  std::vector<runtime::BuildProgress> seen;
  runtime::set_build_observer([&](const runtime::BuildProgress& p) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(p);
  });
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, kDevice).realize();
  seen.clear();
  EXPECT_EQ(((x * 3).sum({1}) + 1).to_vector<float>(), (std::vector<float>{19, 46}));
  ASSERT_GE(seen.size(), 1u);
  for (const auto& p : seen) {
    EXPECT_EQ(p.device, kDevice);
    EXPECT_FALSE(p.kernel.empty());
    EXPECT_GE(p.done, 1u);
    EXPECT_LE(p.done, p.total);
  }
  const size_t built = seen.size();
  EXPECT_EQ(((x * 3).sum({1}) + 1).to_vector<float>(), (std::vector<float>{19, 46}));
  EXPECT_EQ(seen.size(), built);  // cached: nothing built, nothing reported
  runtime::set_build_observer(nullptr);
  (x - 7).realize();
  EXPECT_EQ(seen.size(), built);
}

// Regression: a vectorized kernel with a masked tail that loads bools (bool -> float64 over 7
// elements) failed to render ("a masked load of bools"); bools are bytes in memory, so the masked
// load and store go through byte vectors.
// A vector times a matrix larger than the L2, with a bias and relu: the heuristic walks the
// matrix in blocks of its rows (BLOCK; 8 where its rows alias in the L1, issue 50), the last block
// running the epilogue on the whole sum.
TEST(CpuE2E, AVectorTimesALargeMatrixMatchesTheReference) {
  HostArray x = make_array({1, 2048}, dtypes::float32, 21), w = make_array({2048, 1024}, dtypes::float32, 22),
            b = make_array({1024}, dtypes::float32, 23);
  expect_matches_reference(
      {"gemv", {x, w, b}, [](const std::vector<Tensor>& t) { return (t[0].matmul(t[1]) + t[2]).relu(); }, nullptr, 1e-4, 1e-3}, kDevice);
}

TEST(CpuE2E, MaskedTailsLoadAndStoreBools) {
  for (int64_t n : {int64_t{7}, int64_t{13}, int64_t{1003}}) {
    std::vector<bool> b(static_cast<size_t>(n));
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) b[static_cast<size_t>(i)] = (i * 5) % 3 == 0, x[static_cast<size_t>(i)] = static_cast<float>(i % 4) - 1.5f;
    Tensor bt = Tensor::from_vector<bool>(b, {n}, "cpu:0");
    std::vector<double> as_f64 = bt.cast(dtypes::float64).to_vector<double>();
    std::vector<bool> both = (bt | bt.logical_not()).to_vector<bool>(), lt = Tensor::from_vector<float>(x, {n}, "cpu:0").lt(Tensor::zeros({n}, dtypes::float32, "cpu:0")).to_vector<bool>();
    for (int64_t i = 0; i < n; ++i) {
      size_t k = static_cast<size_t>(i);
      EXPECT_EQ(as_f64[k], b[k] ? 1.0 : 0.0) << n << " at " << i;
      EXPECT_TRUE(both[k]) << n << " at " << i;
      EXPECT_EQ(lt[k], x[k] < 0) << n << " at " << i;
    }
  }
}

// Regression: a kernel over part of a concatenation never reads the pieces outside its rows (the
// simplifier drops those loads), but its call still passed their buffers, so the kernel took
// fewer buffers than its launch passed ("takes 4 buffers, the launch passed 5"). Found sharding a
// concatenation over two devices; the unread buffers are now dropped from the call.
TEST(CpuE2E, AKernelTakesOnlyTheBuffersItReads) {
  auto ramp = [](int64_t rows, float scale) {
    std::vector<float> v(static_cast<size_t>(rows * 3));
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>((i * 7) % 23) - 2;
    return Tensor::from_vector<float>(v, {rows, 3}, "cpu:0").realize();
  };
  Tensor a = ramp(4, 0.25f), b = ramp(6, 0.5f);
  Tensor a1 = a.shrink({{2, 4}, {0, 3}}).contiguous().realize(), b1 = b.shrink({{3, 6}, {0, 3}}).contiguous().realize();
  Tensor c = Tensor::cat({a.shrink({{0, 2}, {0, 3}}), a1, b.shrink({{0, 3}, {0, 3}}), b1}, 0);
  std::vector<Tensor> halves{c.shrink({{0, 5}, {0, 3}}).contiguous(), c.shrink({{5, 10}, {0, 3}}).contiguous()};
  for (const ExecItem& e : Tensor::schedule_all(halves)) {
    if (e.is_copy) continue;
    size_t params = 0;
    for (const UOp& u : toposort(e.ast)) params += u.op() == Ops::PARAM && u.dtype().is_ptr();
    EXPECT_EQ(params, e.buffers.size()) << e.ast.arg_string();
  }
  Tensor::realize_all(halves);
  std::vector<float> want = Tensor::cat({a, b}, 0).to_vector<float>(), top = halves[0].to_vector<float>(), bottom = halves[1].to_vector<float>();
  top.insert(top.end(), bottom.begin(), bottom.end());
  EXPECT_EQ(top, want);
}

// Every rand call draws new numbers from one kernel: the counter's offset and the key reach it in a
// buffer, not as constants that made every call's kernel a new one (regression: a 1024 x 1024 rand
// took 49 ms a call, nearly all of it compiling). The numbers are the reference device's.
TEST(Random, EveryCallDrawsNewNumbersFromTheSameKernel) {
  manual_seed(3);
  const std::vector<float> first = Tensor::rand({4, 16}, dtypes::float32, kDevice).to_vector<float>();
  const runtime::CompileStats before = runtime::compile_stats();
  const std::vector<float> second = Tensor::rand({4, 16}, dtypes::float32, kDevice).to_vector<float>();
  const std::vector<float> third = Tensor::rand({4, 16}, dtypes::float32, kDevice).to_vector<float>();
  const runtime::CompileStats after = runtime::compile_stats();
  EXPECT_NE(first, second);
  EXPECT_NE(second, third);
  EXPECT_EQ(after.compiles + after.disk_hits + after.memory_hits, before.compiles + before.disk_hits + before.memory_hits)
      << "the second and third calls ran the first call's kernel";
  manual_seed(3);
  EXPECT_EQ(Tensor::rand({4, 16}, dtypes::float32, "ref").to_vector<float>(), first);
  EXPECT_EQ(Tensor::rand({4, 16}, dtypes::float32, "ref").to_vector<float>(), second);
}
