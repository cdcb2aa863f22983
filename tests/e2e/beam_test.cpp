// tests/e2e/beam_test.cpp - the beam search on the cpu device (runtime/beam.hpp): a searched
// kernel is never slower than the heuristic's in the same search, computes what the heuristic's
// does, is stored in the search cache and found there by the next search, a corrupt entry is
// searched again and replaced, and a run past the timeout is dropped without hanging. Small
// kernels and width 1 keep it fast; the search itself is tests/codegen/search_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/beam.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/schedule.hpp"
#include "support/env.hpp"

using namespace kiln;

namespace {

const char* kDevice = "cpu:0";

// KILN_CACHE_DIR pointed at a fresh directory for one test.
struct TempCacheDir {
  std::string path, old;
  TempCacheDir() {
    path = (std::filesystem::temp_directory_path() / ("kiln-beam-test-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(path);
    if (const char* o = std::getenv("KILN_CACHE_DIR")) old = o;
    ::setenv("KILN_CACHE_DIR", path.c_str(), 1);
  }
  ~TempCacheDir() {
    if (old.empty()) ::unsetenv("KILN_CACHE_DIR");
    else ::setenv("KILN_CACHE_DIR", old.c_str(), 1);
    std::filesystem::remove_all(path);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    if (std::filesystem::exists(path + "/beam"))
      for (const auto& e : std::filesystem::directory_iterator(path + "/beam")) out.push_back(e.path().string());
    return out;
  }
};

UOp kernel_of(const Tensor& t) {
  for (const ExecItem& e : t.schedule())
    if (!e.is_copy) return e.ast;
  return {};
}

// A realized n x n input and the kernel of its square.
struct SquareMatmul {
  Tensor a;
  UOp ast;
};
SquareMatmul square_matmul(int64_t n) {
  Tensor a = Tensor::rand({n, n}, dtypes::float32, kDevice);
  a.realize();
  return {a, kernel_of(a.matmul(a))};
}

// Searches of one round of at most 4 candidates while it lives.
struct ShortSearches {
  ShortSearches() {
    SearchLimits limits;
    limits.max_rounds = 1;
    limits.max_per_round = 4;
    runtime::set_beam_limits(limits);
  }
  ~ShortSearches() { runtime::set_beam_limits({}); }
};

std::string text(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts) s += o.str() + " ";
  return s;
}

}  // namespace

TEST(Beam, SearchesStoresAndReusesAndComputesTheSame) {
  TempCacheDir dir;
  manual_seed(5);
  Tensor a = Tensor::rand({48, 40}, dtypes::float32, kDevice), b = Tensor::rand({40, 56}, dtypes::float32, kDevice);
  a.realize();
  b.realize();
  const UOp ast = kernel_of(a.matmul(b));
  auto dev = runtime::open_device(kDevice);
  runtime::BeamReport first;
  std::optional<std::vector<Opt>> opts = runtime::beam_opts(dev, ast, dev->target(), 1, &first);
  ASSERT_TRUE(opts);
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.result.timed, 2);
  EXPECT_GT(first.result.heuristic, 0);
  EXPECT_LE(first.result.seconds, first.result.heuristic) << "the heuristic's list is a candidate";
  ASSERT_EQ(dir.entries().size(), 1u);
  runtime::BeamReport again;
  EXPECT_EQ(text(*runtime::beam_opts(dev, ast, dev->target(), 1, &again)), text(*opts));
  EXPECT_TRUE(again.from_cache);
  // a corrupt entry is searched again and replaced by a readable one
  { std::ofstream(dir.entries()[0], std::ios::trunc) << "not an entry"; }
  runtime::BeamReport rebuilt;
  runtime::beam_opts(dev, ast, dev->target(), 1, &rebuilt);
  EXPECT_FALSE(rebuilt.from_cache);
  runtime::BeamReport reread;
  runtime::beam_opts(dev, ast, dev->target(), 1, &reread);
  EXPECT_TRUE(reread.from_cache);
  // KILN_BEAM=1 on a whole program: the same values as without
  std::vector<float> plain = a.matmul(b).relu().sum({1}).to_vector<float>();
  set_knob(Knob::beam, 1);
  runtime::clear_program_cache();
  clear_schedule_cache();
  std::vector<float> searched = a.matmul(b).relu().sum({1}).to_vector<float>();
  set_knob(Knob::beam, 0);
  runtime::clear_program_cache();
  ASSERT_EQ(plain.size(), searched.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(plain[i], searched[i], 1e-3 * std::max(1.0f, std::fabs(plain[i]))) << i;
}

// A program's kernels read the search cache without checking the list first (the lowering checks
// it): an entry whose list no longer applies to its kernel (a readable entry, written by another
// kiln) is searched again and replaced, and the program computes what it computes without BEAM.
TEST(Beam, AnEntryThatNoLongerAppliesIsSearchedAgainByTheProgram) {
  TempCacheDir dir;
  ShortSearches short_searches;
  const auto [a, ast] = square_matmul(40);
  auto dev = runtime::open_device(kDevice);
  ASSERT_TRUE(runtime::beam_opts(dev, ast, dev->target(), 1));
  ASSERT_EQ(dir.entries().size(), 1u);
  ASSERT_TRUE(runtime::write_compile_cache_entry(dir.entries()[0], "kiln beam search\nkernel: x\nopts: UPCAST(9, 4)\nseconds: 1\n"));
  ASSERT_TRUE(runtime::beam_cached_opts(dev, ast, dev->target(), 1)) << "read without checking";
  std::vector<runtime::BeamReport> reports;
  runtime::set_beam_observer([&](const runtime::BeamReport& r) { reports.push_back(r); });
  const std::vector<float> plain = a.matmul(a).to_vector<float>();
  set_knob(Knob::beam, 1);
  runtime::clear_program_cache();
  clear_schedule_cache();
  const std::vector<float> searched = a.matmul(a).to_vector<float>();
  set_knob(Knob::beam, 0);
  runtime::clear_program_cache();
  runtime::set_beam_observer({});
  ASSERT_EQ(reports.size(), 2u) << "the stale hit, then a search";
  EXPECT_TRUE(reports[0].from_cache);
  EXPECT_FALSE(reports[1].from_cache);
  std::optional<std::vector<Opt>> now = runtime::beam_cached_opts(dev, ast, dev->target(), 1);
  ASSERT_TRUE(now);
  EXPECT_EQ(text(*now), text(reports[1].result.opts)) << "the entry was replaced";
  ASSERT_EQ(plain.size(), searched.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(plain[i], searched[i], 1e-3 * std::max(1.0f, std::fabs(plain[i]))) << i;
}

// A candidate that runs past the timeout is dropped and the search goes on (here every one is:
// the heuristic's list comes back, and nothing is stored).
TEST(Beam, ARunPastTheTimeoutIsDropped) {
  TempCacheDir dir;
  const auto [a, ast] = square_matmul(256);
  auto dev = runtime::open_device(kDevice);
  runtime::set_beam_timeout(1e-9);
  runtime::BeamReport r;
  std::optional<std::vector<Opt>> opts = runtime::beam_opts(dev, ast, dev->target(), 2, &r);
  runtime::set_beam_timeout(0);
  ASSERT_TRUE(opts);
  EXPECT_EQ(r.result.seconds, 0);
  EXPECT_EQ(text(*opts), text(to_program(ast, dev->target()).opts));
  EXPECT_TRUE(dir.entries().empty()) << "nothing measured, nothing stored";
  dev->synchronize();
}

// Candidates are timed in passes over a round's list (the first pass in list order, the next
// reversed, the third in order again), not three runs of one candidate in a row: a slow phase of
// a shared machine lasts seconds and would land on one candidate's runs only. Each timing call is
// a run of passes; a call ends where a (candidate, run) pair comes again or the run goes down.
TEST(Beam, CandidatesAreTimedInInterleavedPasses) {
  TempCacheDir dir;
  ShortSearches short_searches;
  const auto [a, ast] = square_matmul(64);
  auto dev = runtime::open_device(kDevice);
  std::vector<std::pair<size_t, int>> launches;
  runtime::set_beam_launch_observer([&](size_t candidate, int run) { launches.push_back({candidate, run}); });
  runtime::beam_opts(dev, ast, dev->target(), 2);
  runtime::set_beam_launch_observer({});
  std::vector<std::vector<std::pair<size_t, int>>> calls(1);
  for (const auto& l : launches) {
    auto& c = calls.back();
    if (!c.empty() && (l.second < c.back().second || std::find(c.begin(), c.end(), l) != c.end())) calls.emplace_back();
    calls.back().push_back(l);
  }
  size_t interleaved = 0;
  for (const auto& call : calls) {
    std::vector<size_t> pass[3];
    for (const auto& [candidate, run] : call) {
      ASSERT_LT(run, 3);
      pass[run].push_back(candidate);
    }
    EXPECT_TRUE(std::is_sorted(pass[0].begin(), pass[0].end())) << "the checked pass goes in list order";
    for (int run : {1, 2}) {
      std::vector<size_t> want;  // the first pass's order, reversed on odd passes, of those still timed
      for (size_t c : pass[0])
        if (std::find(pass[run].begin(), pass[run].end(), c) != pass[run].end()) want.push_back(c);
      if (run == 1) std::reverse(want.begin(), want.end());
      EXPECT_EQ(pass[run], want) << "pass " << run;
    }
    if (pass[1].size() >= 2) ++interleaved;
  }
  EXPECT_GE(interleaved, 1u) << "some call timed two or more candidates three times";
}

// A candidate that stores nothing is caught by the output check, whatever earlier candidates left
// in the scratch outputs (they are poisoned before each checked run): the search fails naming its
// actions. Regression: the outputs were not reset, so such a candidate passed on the first
// candidate's values and won with the time of a kernel that did no work.
TEST(Beam, ACandidateThatLeavesItsOutputUnwrittenIsAnError) {
  TempCacheDir dir;
  ShortSearches short_searches;
  const auto [a, ast] = square_matmul(64);
  auto dev = runtime::open_device(kDevice);
  runtime::set_beam_skip_launches(true);
  std::string what;
  try {
    runtime::beam_opts(dev, ast, dev->target(), 2);
  } catch (const Error& e) {
    what = e.what();
  }
  runtime::set_beam_skip_launches(false);
  EXPECT_NE(what.find("compute another result than the first candidate"), std::string::npos) << what;
  EXPECT_NE(what.find("nan, expected"), std::string::npos) << what;
  EXPECT_TRUE(dir.entries().empty()) << "a failed search stores nothing";
}

// Kernels with symbolic sizes are not searched (their buffers have no size before a launch).
TEST(Beam, SymbolicKernelsAreNotSearched) {
  Variable n("n", 1, 64);
  Tensor x = Tensor::rand({64}, dtypes::float32, kDevice);
  x.realize();
  const UOp ast = kernel_of(x.shrink(0, n.bind(10)) * 2.0);
  auto dev = runtime::open_device(kDevice);
  EXPECT_FALSE(runtime::beam_opts(dev, ast, dev->target(), 2));
}

// With KILN_BEAM set, a jitted function's kernels are searched when they are first built (call 1),
// and never again: the capture and the replays build nothing.
TEST(Beam, AJittedFunctionIsSearchedOnceNotOnReplay) {
  TempCacheDir dir;
  ShortSearches short_searches;
  int searches = 0;
  runtime::set_beam_observer([&](const runtime::BeamReport&) { ++searches; });
  set_knob(Knob::beam, 1);
  runtime::clear_program_cache();
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{(in[0].matmul(in[0]) + 1).relu()};
  });
  Tensor a = Tensor::rand({48, 48}, dtypes::float32, kDevice).realize();
  std::vector<float> want = (a.matmul(a) + 1).relu().to_vector<float>();  // searched here
  const int after_eager = searches;
  EXPECT_GE(after_eager, 1);
  for (int call = 0; call < 5; ++call) EXPECT_EQ(f({a})[0].to_vector<float>(), want);
  EXPECT_TRUE(f.captured());
  EXPECT_EQ(searches, after_eager) << "the Jit's calls found every kernel built (and searched) already";
  runtime::clear_program_cache();
  Tensor b = Tensor::rand({48, 48}, dtypes::float32, kDevice).realize();
  Jit g([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{in[0] * 2 - in[0].exp()}; });
  g({b});
  const int after_first = searches;
  EXPECT_GT(after_first, after_eager) << "call 1 builds, so it searches (or reads the search cache)";
  for (int call = 0; call < 4; ++call) g({b});
  EXPECT_EQ(searches, after_first) << "capture and replays search nothing";
  set_knob(Knob::beam, 0);
  runtime::set_beam_observer({});
  runtime::clear_program_cache();
}
