// tests/codegen/stride_test.cpp - stride_of, the heuristic's and the expander's question "how does
// this index move along that range", against the index's own values; and its memo (StrideMemo) and
// simplify's (SimplifyMemo), which must not change an answer.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "codegen/opt/opt.hpp"
#include "index_const.hpp"
#include "ir/print.hpp"
#include "symbolic/interpret.hpp"
#include "symbolic/symbolic.hpp"

using namespace kiln;
using kiln::testing::ci;

namespace {

struct Axes {
  UOp r = UOp::range(8, 0), q = UOp::range(5, 1), v = UOp::variable("v", 0, 9);
};

// The step of idx along r, measured: idx(r + 1) - idx(r) for every r and a few values of the
// other axes; nullopt when it is not one constant.
std::optional<int64_t> measured_stride(const UOp& idx, const Axes& a) {
  std::optional<int64_t> step;
  for (int64_t q : {0, 2, 4})
    for (int64_t v : {0, 3, 9})
      for (int64_t r = 0; r + 1 < 8; ++r) {
        auto at = [&](int64_t rv) {
          auto x = interpret(idx, {{a.r, Value{rv}}, {a.q, Value{q}}, {a.v, Value{v}}});
          return x ? std::optional<int64_t>(as_int(*x)) : std::nullopt;
        };
        auto x0 = at(r), x1 = at(r + 1);
        if (!x0 || !x1) return std::nullopt;
        if (step && *step != *x1 - *x0) return std::nullopt;
        step = *x1 - *x0;
      }
  return step;
}

// Random index expressions over r, q and v: affine ones (+, -, * by constants) when `affine`,
// else with //, %, products of axes and clamps as well.
class Gen {
 public:
  Gen(uint64_t seed, const Axes& a) : rng_(seed), a_(a) {}
  UOp expr(int depth, bool affine) {
    if (depth == 0 || pick(0, 3) == 0) return leaf();
    switch (pick(0, affine ? 3 : 7)) {
      case 0: return expr(depth - 1, affine) + expr(depth - 1, affine);
      case 1: return expr(depth - 1, affine) - expr(depth - 1, affine);
      case 2: return expr(depth - 1, affine) * pick(-4, 6);
      case 3: return ci(pick(-3, 3)) * expr(depth - 1, affine);
      case 4: return UOp::alu(Ops::IDIV, {expr(depth - 1, affine), ci(pick(1, 8))});
      case 5: return UOp::alu(Ops::MOD, {expr(depth - 1, affine), ci(pick(1, 16))});
      case 6: return expr(depth - 1, affine) * expr(depth - 1, affine);
      default: {
        UOp e = expr(depth - 1, affine);
        int64_t n = pick(2, 12);
        return e.lt(ci(n)).where(e, ci(n - 1));
      }
    }
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  UOp leaf() {
    switch (pick(0, 4)) {
      case 0: return a_.q;
      case 1: return a_.v;
      case 2: return ci(pick(-10, 10));
      default: return a_.r;
    }
  }
  std::mt19937_64 rng_;
  const Axes& a_;
};

}  // namespace

TEST(StrideOf, AgreesWithTheIndexValues) {
  Axes a;
  Gen gen(46, a);
  int linear = 0, claimed = 0;
  for (int i = 0; i < 600; ++i) {
    const bool affine = i % 2 == 0;
    UOp idx = gen.expr(4, affine);
    std::optional<int64_t> want = measured_stride(idx, a);
    int64_t s = 0;
    const bool ok = stride_of(idx, a.r, s);
    SCOPED_TRACE(render_expr(idx));
    if (ok) {  // a claimed stride is the index's step everywhere
      ASSERT_TRUE(want.has_value()) << "claimed stride " << s;
      EXPECT_EQ(s, *want);
      ++claimed;
    }
    if (affine) {  // and an index built from +, - and * by constants always has one
      ASSERT_TRUE(want.has_value());
      ASSERT_TRUE(ok);
      ++linear;
    }
  }
  EXPECT_EQ(linear, 300);
  EXPECT_GT(claimed, 300);  // some of the others too (r % 16 is r)
}

TEST(StrideOf, FoldsWhatTheSimplifierProves) {
  Axes a;
  int64_t s = 0;
  EXPECT_TRUE(stride_of(a.r * 3 + a.q * 5 - a.r, a.r, s));
  EXPECT_EQ(s, 2);
  EXPECT_TRUE(stride_of(UOp::alu(Ops::MOD, {a.r, ci(8)}) + a.q, a.r, s));  // r < 8: r % 8 is r
  EXPECT_EQ(s, 1);
  EXPECT_TRUE(stride_of(a.q * 7 + a.v, a.r, s));  // no r: stride 0
  EXPECT_EQ(s, 0);
  EXPECT_FALSE(stride_of(UOp::alu(Ops::IDIV, {a.r, ci(4)}), a.r, s));  // 0 0 0 0 1 1 1 1
  EXPECT_FALSE(stride_of(a.r * a.q, a.r, s));                          // the step depends on q
}

TEST(StrideOf, MemoKeepsEveryAnswer) {
  Axes a;
  Gen gen(7, a);
  std::vector<UOp> exprs;
  for (int i = 0; i < 200; ++i) exprs.push_back(gen.expr(4, i % 3 == 0));
  std::vector<std::pair<bool, int64_t>> plain;
  for (const UOp& e : exprs) {
    int64_t s = -99;
    bool ok = stride_of(e, a.r, s);
    plain.push_back({ok, ok ? s : -99});
  }
  StrideMemo memo;
  SimplifyMemo simplified;
  for (int round = 0; round < 2; ++round) {  // the first round fills the tables, the second reads them
    for (size_t i = 0; i < exprs.size(); ++i) {
      int64_t s = -99;
      bool ok = stride_of(exprs[i], a.r, s);
      EXPECT_EQ(ok, plain[i].first) << render_expr(exprs[i]);
      EXPECT_EQ(ok ? s : -99, plain[i].second) << render_expr(exprs[i]);
    }
  }
}

TEST(SimplifyMemo, SameResultsInsideAndNestedScopes) {
  Axes a;
  Gen gen(11, a);
  std::vector<UOp> exprs, plain;
  for (int i = 0; i < 100; ++i) {
    exprs.push_back(gen.expr(4, false));
    plain.push_back(simplify(exprs.back()));
  }
  {
    SimplifyMemo outer;
    for (size_t i = 0; i < exprs.size(); ++i) EXPECT_EQ(simplify(exprs[i]), plain[i]);
    {
      SimplifyMemo inner;  // shares the outer table; closing it keeps that table
      for (size_t i = 0; i < exprs.size(); ++i) EXPECT_EQ(simplify(exprs[i]), plain[i]);
    }
    for (size_t i = 0; i < exprs.size(); ++i) EXPECT_EQ(simplify(exprs[i]), plain[i]);
  }
  for (size_t i = 0; i < exprs.size(); ++i) EXPECT_EQ(simplify(exprs[i]), plain[i]);
}

TEST(StrideOf, MemosArePerThread) {
  // build_kernels lowers kernels on several threads, each in its own to_program and so its own
  // tables: a thread's memo neither answers nor outlives another's
  Axes a;
  Gen gen(3, a);
  std::vector<UOp> exprs;
  for (int i = 0; i < 100; ++i) exprs.push_back(gen.expr(4, i % 2 == 0));
  std::vector<std::pair<bool, int64_t>> plain(exprs.size());
  for (size_t i = 0; i < exprs.size(); ++i) plain[i].first = stride_of(exprs[i], a.r, plain[i].second);
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      StrideMemo memo;
      SimplifyMemo simplified;
      for (int round = 0; round < 3; ++round)
        for (size_t i = 0; i < exprs.size(); ++i) {
          size_t j = (i * (t + 1)) % exprs.size();  // each thread in its own order
          int64_t s = 0;
          bool ok = stride_of(exprs[j], a.r, s);
          wrong[t] += ok != plain[j].first || (ok && s != plain[j].second);
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}
