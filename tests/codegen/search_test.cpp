// tests/codegen/search_test.cpp - the beam search (codegen/opt/search.hpp) with injected timing
// functions (deterministic): it finds the known best, never returns something slower than the
// heuristic's choice, times no kernel twice (dropping duplicates), survives candidates that fail, and stops on its
// limits. The device side (scratch buffers, checks, the search cache) is tests/e2e/beam_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "codegen/opt/opt.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/opt/search.hpp"
#include "kiln/kiln.hpp"
#include "simulated_cpu.hpp"

using namespace kiln;
using kiln::testing::simulated_cpu;

namespace {

UOp matmul_kernel(const Target& t) {
  Tensor a = Tensor::empty({64, 96}, dtypes::float32, "ref"), b = Tensor::empty({96, 128}, dtypes::float32, "ref");
  for (const ExecItem& e : (a.matmul(b)).schedule())
    if (!e.is_copy) return kernel_for_opts(e.ast, t);
  return {};
}

bool has(const std::vector<Opt>& l, OptOp op, int64_t axis, int64_t amount) {
  return std::any_of(l.begin(), l.end(), [&](const Opt& o) { return o.op == op && o.axis == axis && o.amount == amount; });
}

// A synthetic machine: every action costs, except two that pay: UPCAST(1, 4) and THREAD(0, 8).
// (each pays once; any other action, or a repeat, costs)
double synthetic(const std::vector<Opt>& l) {
  double t = 10;
  bool up = false, thread = false;
  for (const Opt& o : l) {
    if (o.op == OptOp::UPCAST && o.axis == 1 && o.amount == 4 && !o.vectorize && !up) up = true, t -= 3;
    else if (o.op == OptOp::THREAD && o.axis == 0 && o.amount == 8 && !thread) thread = true, t -= 2;
    else t += 1;
  }
  return t;
}

CandidateTimer timer(double (*f)(const std::vector<Opt>&), std::vector<std::vector<Opt>>* seen = nullptr) {
  return [f, seen](const std::vector<std::vector<Opt>>& lists, double) {
    std::vector<std::optional<double>> out;
    for (const auto& l : lists) {
      out.push_back(f(l));
      if (seen) seen->push_back(l);
    }
    return out;
  };
}

}  // namespace

TEST(Search, FindsTheKnownBestAndTimesNoKernelTwice) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  std::vector<std::vector<Opt>> timed;
  SearchLimits lim;
  lim.width = 2;
  SearchResult r = beam_search(k, t, {}, lim, timer(synthetic, &timed));
  EXPECT_EQ(r.seconds, 5);
  EXPECT_TRUE(has(r.opts, OptOp::UPCAST, 1, 4)) << r.opts.size();
  EXPECT_TRUE(has(r.opts, OptOp::THREAD, 0, 8));
  EXPECT_EQ(r.unoptimised, 10);
  EXPECT_GE(r.rounds, 2);
  // no two timed lists leave the same kernel, and duplicates were met (and skipped)
  // (the final times the beam and the heuristic's list again: the lists after r.timed)
  ASSERT_GT(timed.size(), static_cast<size_t>(r.timed));
  std::set<std::pair<uint64_t, uint64_t>> keys;
  for (size_t i = 0; i < static_cast<size_t>(r.timed); ++i) {
    Key128 key = candidate_key(k, timed[i], t);
    EXPECT_TRUE(keys.insert({key.hi, key.lo}).second);
  }
  // a swap pays: swapping back leaves the kernel as it was, which is not timed again
  auto swaps = [](const std::vector<Opt>& l) {
    double t = 10;
    for (const Opt& o : l) t += o.op == OptOp::SWAP ? -1 : 1;
    return t;
  };
  SearchResult s = beam_search(k, t, {}, lim, timer(swaps));
  EXPECT_GT(s.duplicates, 0);
  EXPECT_EQ(s.seconds, 9);
}

TEST(Search, NeverReturnsSomethingSlowerThanTheHeuristic) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  const std::vector<Opt> heuristic{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  // every list is slower than the heuristic's (1 s) but the heuristic itself
  auto slow = [](const std::vector<Opt>& l) {
    return l.size() == 2 && l[0].op == OptOp::UPCAST && l[0].vectorize && l[1].op == OptOp::THREAD ? 1.0 : 2.0 + static_cast<double>(l.size());
  };
  SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, timer(slow));
  EXPECT_EQ(r.seconds, 1.0);
  EXPECT_EQ(r.heuristic, 1.0);
  ASSERT_EQ(r.opts.size(), 2u);
  EXPECT_TRUE(r.opts[0].vectorize);
  EXPECT_EQ(r.rounds, 1) << "a round with no gain ends the search";
}

// A candidate that won on one lucky measurement meets the heuristic's list again in the final:
// measured anew, it loses, and the heuristic's list is returned.
TEST(Search, ALuckyMeasurementLosesTheFinal) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  const std::vector<Opt> heuristic{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  int lucky_runs = 0;
  CandidateTimer noisy = [&](const std::vector<std::vector<Opt>>& lists, double) {
    std::vector<std::optional<double>> out;
    for (const auto& l : lists) {
      const bool lucky = l.size() == 1 && l[0].op == OptOp::UPCAST && l[0].axis == 1 && l[0].amount == 4 && !l[0].vectorize;
      out.push_back(lucky ? (lucky_runs++ == 0 ? 1.0 : 20.0) : l.size() == 2 && l[0].vectorize ? 5.0 : 10.0);
    }
    return out;
  };
  SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, noisy);
  EXPECT_EQ(lucky_runs, 6) << "timed in its round and in the final's five rounds";
  EXPECT_EQ(r.seconds, 5.0);
  ASSERT_EQ(r.opts.size(), 2u);
  EXPECT_TRUE(r.opts[0].vectorize);
}

// The final's rounds are interleaved and the best finalist must beat the heuristic's list in
// most of them: a candidate lucky in its round and in two of the final's five (quiet moments the
// heuristic's runs missed) still loses; one faster in three of them wins. (With one final round
// the first won too.)
TEST(Search, TheFinalDuelNeedsMostRounds) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  const std::vector<Opt> heuristic{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  for (int lucky_finals : {2, 3}) {
    int runs = 0;
    std::vector<size_t> positions;  // where the heuristic's list sits in each final round's call
    CandidateTimer timer = [&](const std::vector<std::vector<Opt>>& lists, double best) {
      std::vector<std::optional<double>> out;
      for (const auto& l : lists) {
        const bool lucky = l.size() == 1 && l[0].op == OptOp::UPCAST && l[0].axis == 1 && l[0].amount == 4 && !l[0].vectorize;
        if (std::isinf(best) && opts_text(l) == opts_text(heuristic)) positions.push_back(&l - lists.data());
        out.push_back(lucky ? (runs++ <= lucky_finals ? 1.0 : 20.0) : opts_text(l) == opts_text(heuristic) ? 5.0 : 10.0);
      }
      return out;
    };
    SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, timer);
    EXPECT_EQ(runs, 6) << "its round and five final rounds";
    EXPECT_EQ(r.seconds, lucky_finals == 2 ? 5.0 : 1.0) << lucky_finals << " lucky final rounds";
    EXPECT_EQ(r.opts.size(), lucky_finals == 2 ? 2u : 1u);
    EXPECT_EQ(r.duel_rounds, 5);
    // (with two lucky rounds its median is 20: the duel is the 10.0 lists' to lose)
    EXPECT_EQ(r.duel_wins, lucky_finals == 2 ? 0 : 3);
    EXPECT_FALSE(r.too_noisy);
    ASSERT_GE(positions.size(), 5u);
    EXPECT_NE(positions[positions.size() - 1], positions[positions.size() - 2]) << "every other round in reverse order";
  }
}

// Ratios that scatter (the machine changed speed under the duel) decide nothing: a candidate
// that won three of five rounds by a wide median margin is still refused, and the result says why.
TEST(Search, AMachineTooNoisyToDecideKeepsTheHeuristic) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  const std::vector<Opt> heuristic{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  for (bool scatter : {false, true}) {
    int final_round = -1;
    CandidateTimer timer = [&](const std::vector<std::vector<Opt>>& lists, double best) {
      if (std::isinf(best)) ++final_round;
      const double ratio[5] = {0.3, 1.5, 0.5, 1.4, 0.4}, steady[5] = {0.5, 0.52, 0.5, 0.49, 0.5};
      std::vector<std::optional<double>> out;
      for (const auto& l : lists) {
        const bool challenger = l.size() == 1 && l[0].op == OptOp::UPCAST && l[0].axis == 1 && l[0].amount == 4 && !l[0].vectorize;
        const double q = final_round < 0 ? 0.5 : (scatter ? ratio : steady)[final_round % 5];
        out.push_back(challenger ? 10.0 * q : opts_text(l) == opts_text(heuristic) ? 10.0 : 30.0);
      }
      return out;
    };
    SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, timer);
    EXPECT_EQ(r.too_noisy, scatter);
    EXPECT_EQ(r.opts.size(), scatter ? 2u : 1u) << (scatter ? "scattered" : "steady") << " ratios";
    if (scatter) {
      EXPECT_GT(r.noise, 0.15);
    }
  }
}

// Under injected load the search never returns a plan slower than the heuristic's. The load:
// phases that slow a whole call of the timer (another job on the core: 1x, 1.3x, 2x, lasting
// several calls) and sometimes change mid-call; each measurement the minimum of three runs, each
// run slowed 1.5x with probability 0.2 and jittered by 3%. A challenger truly 10% slower is
// never chosen in 300 seeded searches; one truly 20% faster is chosen in nearly all.
TEST(Search, NeverChoosesASlowerPlanUnderInjectedLoad) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  const std::vector<Opt> heuristic{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  for (double truth : {1.10, 0.80}) {
    int chosen = 0;
    for (uint64_t seed = 1; seed <= 300; ++seed) {
      uint64_t state = seed * 0x9E3779B97F4A7C15ull;
      auto uniform = [&] {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return static_cast<double>(state >> 11) / static_cast<double>(1ull << 53);
      };
      const double phases[3] = {1.0, 1.3, 2.0};
      int phase = 0;
      CandidateTimer timer = [&](const std::vector<std::vector<Opt>>& lists, double) {
        if (uniform() < 0.3) phase = static_cast<int>(uniform() * 3) % 3;
        const size_t flip_at = uniform() < 0.1 ? static_cast<size_t>(uniform() * static_cast<double>(lists.size())) : lists.size();
        std::vector<std::optional<double>> out;
        for (size_t i = 0; i < lists.size(); ++i) {
          if (i == flip_at) phase = static_cast<int>(uniform() * 3) % 3;
          const auto& l = lists[i];
          const bool challenger = l.size() == 1 && l[0].op == OptOp::UPCAST && l[0].axis == 1 && l[0].amount == 4 && !l[0].vectorize;
          const double base = challenger ? truth : opts_text(l) == opts_text(heuristic) ? 1.0 : 3.0;
          double best_run = std::numeric_limits<double>::infinity();
          for (int run = 0; run < 3; ++run)
            best_run = std::min(best_run, base * phases[phase] * (uniform() < 0.2 ? 1.5 : 1.0) * (0.97 + 0.06 * uniform()));
          out.push_back(best_run);
        }
        return out;
      };
      SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, timer);
      chosen += r.opts.size() == 1;
    }
    if (truth > 1) {
      EXPECT_EQ(chosen, 0) << "a slower plan was chosen";
    } else {
      EXPECT_GE(chosen, 270) << "a faster plan should win most searches";
    }
  }
}

// A candidate faster than the heuristic's list by less than min_gain in the final is within the
// noise: the heuristic's list is returned (with 2.5% it wins).
TEST(Search, AGainWithinTheNoiseKeepsTheHeuristic) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  const std::vector<Opt> heuristic{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  for (double gain : {0.01, 0.025}) {
    CandidateTimer timer = [&](const std::vector<std::vector<Opt>>& lists, double) {
      std::vector<std::optional<double>> out;
      for (const auto& l : lists) out.push_back(opts_text(l) == opts_text(heuristic) ? 10.0 : l.size() == 3 && l[0].vectorize ? 10.0 * (1 - gain) : 12.0);
      return out;
    };
    SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, timer);
    EXPECT_EQ(r.opts.size(), gain < 0.02 ? 2u : 3u) << "gain " << gain;
    EXPECT_EQ(r.seconds, gain < 0.02 ? 10.0 : 10.0 * (1 - gain));
    EXPECT_EQ(r.heuristic, 10.0);
  }
}

// Candidates that fail to build or run (nullopt) are dropped, not errors; a search where nothing
// runs returns the heuristic's list; the time limit ends it after round 0.
TEST(Search, DropsFailedCandidatesAndStopsOnItsLimits) {
  const Target t = simulated_cpu(8, 8);
  UOp k = matmul_kernel(t);
  CandidateTimer odd_fail = [](const std::vector<std::vector<Opt>>& lists, double) {
    std::vector<std::optional<double>> out;
    for (const auto& l : lists) out.push_back(l.size() % 2 ? std::nullopt : std::optional<double>(synthetic(l)));
    return out;
  };
  SearchLimits lim;
  lim.max_rounds = 2;
  SearchResult r = beam_search(k, t, {}, lim, odd_fail);
  EXPECT_GT(r.failed, 0);
  EXPECT_EQ(r.opts.size() % 2, 0u);
  CandidateTimer none = [](const std::vector<std::vector<Opt>>& lists, double) { return std::vector<std::optional<double>>(lists.size()); };
  const std::vector<Opt> heuristic{{OptOp::THREAD, 0, 8}};
  SearchResult nothing = beam_search(k, t, heuristic, SearchLimits{}, none);
  EXPECT_EQ(nothing.opts.size(), 1u);
  EXPECT_EQ(nothing.seconds, 0);
  lim.seconds = 0;
  lim.max_rounds = 6;
  EXPECT_EQ(beam_search(k, t, {}, lim, timer(synthetic)).rounds, 0);
}

// The actions a search tries all apply, on CPU-like and GPU-like targets, and cover the table.
TEST(Search, NextActionsAllApply) {
  Target gpu = simulated_cpu(4, 1);
  gpu.flags = KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED;
  gpu.shared_max = 65536;
  for (int d = 0; d < 3; ++d) gpu.local_max[d] = 1024;
  gpu.local_prod_max = 1024;
  for (const Target& t : {simulated_cpu(16, 8), gpu}) {
    UOp k = matmul_kernel(t);
    std::vector<Opt> acts = next_actions(k, t);
    std::set<OptOp> ops;
    for (const Opt& o : acts) {
      EXPECT_EQ(opt_problem(k, o, &t), "") << o.str();
      ops.insert(o.op);
    }
    // a tile of 8 x 16 copies grows by at most 2 more: 256 copies of a value in all
    const UOp tiled = apply_opts(k, std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 8}}, t);
    for (const Opt& o : next_actions(tiled, t))
      if (opt_action(o.op).expands) {
        EXPECT_LE(copies_after(tiled, find_axis(tiled, o.axis), o.amount), 256) << o.str();
      }
    EXPECT_TRUE(ops.count(OptOp::UPCAST) && ops.count(OptOp::UNROLL) && ops.count(OptOp::SWAP));
    EXPECT_EQ(ops.count(OptOp::THREAD), t.has(KILN_TARGET_HAS_THREADS) ? 1u : 0u);
    EXPECT_EQ(ops.count(OptOp::LOCAL), t.has(KILN_TARGET_HAS_LOCAL) ? 1u : 0u);
    std::set<int64_t> chunks;  // on axis 0: the thread count, four chunks per thread, and two
    for (const Opt& o : acts)
      if (o.op == OptOp::THREAD && o.axis == 0) chunks.insert(o.amount);
    const std::set<int64_t> want = t.has(KILN_TARGET_HAS_THREADS) ? std::set<int64_t>{2, 8, 32} : std::set<int64_t>{};
    EXPECT_EQ(chunks, want);
    if (!t.has(KILN_TARGET_HAS_THREADS)) continue;
    // at most 16 chunks per thread in all: after 32 on 8 threads, only a THREAD of 2 is left
    const UOp threaded = apply_opts(k, std::vector<Opt>{{OptOp::THREAD, 0, 32}}, t);
    std::set<int64_t> more;
    for (const Opt& o : next_actions(threaded, t))
      if (o.op == OptOp::THREAD) more.insert(o.amount);
    EXPECT_EQ(more, std::set<int64_t>{2});
  }
}

// Whether a padded loop's partial last iteration runs apart (the peel) is the search's to time:
// round 0 has the heuristic's plan with its pads gated, and next_actions offers each pad both
// ways. The two leave the same kernel before the peel, yet are two candidates (candidate_key).
// A machine on which the peel costs: the gated plan wins.
TEST(Search, TimesTheHeuristicsPadsWithAndWithoutThePeel) {
  const Target t = simulated_cpu(8, 8);
  Tensor a = Tensor::empty({63, 96}, dtypes::float32, "ref"), b = Tensor::empty({96, 125}, dtypes::float32, "ref");
  UOp k;
  for (const ExecItem& e : (a.matmul(b)).schedule())
    if (!e.is_copy) k = kernel_for_opts(e.ast, t);
  const std::vector<Opt> heuristic{{OptOp::PADTO, 1, 8}, {OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 8}};
  std::vector<Opt> gated = heuristic;
  gated[0].gated = true;
  EXPECT_FALSE(candidate_key(k, heuristic, t) == candidate_key(k, gated, t));
  EXPECT_EQ(apply_opts(k, heuristic, t).key(), apply_opts(k, gated, t).key()) << "(the same kernel before the peel)";
  auto costs = [](const std::vector<Opt>& l) {
    bool any_gated = std::any_of(l.begin(), l.end(), [](const Opt& o) { return o.gated; });
    return l.size() == 3 ? (any_gated ? 1.0 : 2.0) : 3.0 + static_cast<double>(l.size());
  };
  SearchResult r = beam_search(k, t, heuristic, SearchLimits{}, timer(costs));
  EXPECT_EQ(r.heuristic, 2.0);
  EXPECT_EQ(r.seconds, 1.0);
  EXPECT_EQ(r.opts, gated);
  const std::vector<Opt> next = next_actions(apply_opts(k, {}, t), t);
  EXPECT_TRUE(std::any_of(next.begin(), next.end(), [](const Opt& o) { return o.op == OptOp::PADTO && o.gated; }));
  EXPECT_TRUE(std::any_of(next.begin(), next.end(), [](const Opt& o) { return o.op == OptOp::PADTO && !o.gated; }));
}

// On a GPU an output axis is a launch index, which the peel never takes: a gated pad there is the
// plain pad's kernel, so the search neither offers it nor times the heuristic's pads gated (one
// key for both); a reduce axis, a loop in every work item, is offered both ways.
TEST(Search, OffersGatedPadsOnlyWhereThePeelCanTakeTheLoop) {
  const Target gpu = kiln::testing::simulated_gpu(4);
  Tensor a = Tensor::empty({63, 97}, dtypes::float32, "ref"), b = Tensor::empty({97, 125}, dtypes::float32, "ref");
  UOp k;
  for (const ExecItem& e : (a.matmul(b)).schedule())
    if (!e.is_copy) k = kernel_for_opts(e.ast, gpu);
  const std::vector<Opt> next = next_actions(apply_opts(k, {}, gpu), gpu);
  auto gated_on = [&](int64_t axis) {
    return std::any_of(next.begin(), next.end(), [&](const Opt& o) { return o.op == OptOp::PADTO && o.gated && o.axis == axis; });
  };
  auto padded_on = [&](int64_t axis) {
    return std::any_of(next.begin(), next.end(), [&](const Opt& o) { return o.op == OptOp::PADTO && !o.gated && o.axis == axis; });
  };
  for (int64_t axis : {0, 1}) {
    EXPECT_TRUE(padded_on(axis)) << axis;
    EXPECT_FALSE(gated_on(axis)) << "output axis " << axis;
  }
  EXPECT_TRUE(padded_on(2));
  EXPECT_TRUE(gated_on(2)) << "the reduce axis";
  const std::vector<Opt> plain{{OptOp::PADTO, 1, 8}}, gated{{OptOp::PADTO, 1, 8, false, true}};
  EXPECT_EQ(candidate_key(k, plain, gpu), candidate_key(k, gated, gpu));
  const std::vector<Opt> reduce_plain{{OptOp::PADTO, 2, 8}}, reduce_gated{{OptOp::PADTO, 2, 8, false, true}};
  EXPECT_FALSE(candidate_key(k, reduce_plain, gpu) == candidate_key(k, reduce_gated, gpu));
  // the cpu keeps both for an output axis (its loops stay loops)
  const Target cpu = simulated_cpu(8, 2);
  UOp kc;
  for (const ExecItem& e : (a.matmul(b)).schedule())
    if (!e.is_copy) kc = kernel_for_opts(e.ast, cpu);
  EXPECT_FALSE(candidate_key(kc, plain, cpu) == candidate_key(kc, gated, cpu));
}
