// codegen/opt/search.cpp - BEAM search over the optimisation actions (see search.hpp).
#include "codegen/opt/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "codegen/passes.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "kiln/error.hpp"

namespace kiln {

// The search expands a value into at most this many copies (the validator allows kMaxExpansion):
// past it a kernel compiles for tens of milliseconds more (a 1024-copy sum made kiln bench's
// first call 4x slower) for gains the timing cannot tell from noise. tinygrad's BEAM_UPCAST_MAX
// is 256 too.
constexpr int64_t kSearchMaxCopies = 256;
// And at most this many THREAD chunks per thread: past a few per thread more only add launch
// bookkeeping, and a search kept lists of 512 per thread that won its final by noise.
constexpr int64_t kSearchMaxChunksPerThread = 16;

// The final's rounds: every finalist is timed this many times, the rounds interleaved (each a
// call of the timer over all of them, every other round in reverse order), and its time is the
// median of its rounds. One round (the old final) let a candidate win on one quiet moment of a
// shared machine that the heuristic's run just before or after did not get.
constexpr int kFinalRounds = 5;
// The duel that decides between the best finalist and the heuristic's list: per final round, the
// ratio of their two times (timed in one call of the timer, close together, so a slow phase of a
// shared machine hits both). The finalist replaces the heuristic's list only if it was faster in
// most rounds and its median ratio beats 1 by more than both min_gain and the ratios' own spread
// (their median absolute deviation). A spread above kTooNoisy means the machine changed speed
// under the duel by more than any gain worth having: the search says so and keeps the heuristic.
// (kiln bench with KILN_BEAM=4 on a machine shared with other jobs chose plans 0.70-0.86x as fast
// as the heuristic's under the median-of-three final, and 1.2-1.6x slower under injected load.)
constexpr double kTooNoisy = 0.15;

namespace {

// Every finalist's time in each of kFinalRounds interleaved rounds (nullopt where it failed).
std::vector<std::vector<std::optional<double>>> time_final(const std::vector<std::vector<Opt>>& finalists, const CandidateTimer& time) {
  std::vector<std::vector<std::optional<double>>> runs(finalists.size(), std::vector<std::optional<double>>(kFinalRounds));
  for (int round = 0; round < kFinalRounds; ++round) {
    std::vector<size_t> order(finalists.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = round % 2 ? order.size() - 1 - i : i;
    std::vector<std::vector<Opt>> lists;
    for (size_t i : order) lists.push_back(finalists[i]);
    std::vector<std::optional<double>> t = time(lists, std::numeric_limits<double>::infinity());
    for (size_t j = 0; j < order.size() && j < t.size(); ++j)
      if (t[j] && std::isfinite(*t[j])) runs[order[j]][static_cast<size_t>(round)] = *t[j];
  }
  return runs;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median of a finalist's rounds (nullopt: it failed every round).
std::optional<double> median_of(const std::vector<std::optional<double>>& rounds) {
  std::vector<double> ok;
  for (const auto& t : rounds)
    if (t) ok.push_back(*t);
  if (ok.empty()) return std::nullopt;
  return median(ok);
}

}  // namespace

std::vector<Opt> next_actions(const UOp& kernel, const Target& target) {
  std::vector<Opt> out;
  auto add = [&](const Opt& o) {
    if (opt_action(o.op).expands && copies_after(kernel, find_axis(kernel, o.axis), o.amount) > kSearchMaxCopies) return;
    if (opt_problem(kernel, o, &target).empty()) out.push_back(o);
  };
  const int64_t lanes = std::max<int64_t>(4, target.max_vector_width);  // float lanes
  std::vector<int64_t> inputs;  // PARAM slots the kernel loads (STAGE's amount)
  for (const UOp& u : toposort(kernel))
    if (u.op() == Ops::LOAD && u.src(0).op() == Ops::INDEX && u.src(0).src(0).op() == Ops::PARAM &&
        std::find(inputs.begin(), inputs.end(), u.src(0).src(0).arg_int()) == inputs.end())
      inputs.push_back(u.src(0).src(0).arg_int());
  const std::vector<UOp> ranges = ranges_of(kernel);
  int64_t chunks = 1;  // THREAD chunks so far
  for (const UOp& r : ranges)
    if (range_type(r) == AxisType::THREAD) chunks *= const_size(r);
  for (const UOp& r : ranges) {
    const AxisType type = range_type(r);
    if (type != AxisType::LOOP && type != AxisType::REDUCE) continue;  // (split parts are not split again)
    const int64_t axis = range_axis(r);
    for (const OptAction& a : kOptActions) {
      if (!(a.on & axis_bit(type))) continue;
      switch (a.op) {
        case OptOp::UPCAST: case OptOp::UNROLL:
          for (int64_t n : {2, 3, 4, 8}) add({a.op, axis, n});
          for (int64_t n = 4; n <= lanes; n *= 2) add({a.op, axis, n, true});
          break;
        case OptOp::LOCAL:
          for (int64_t n : {2, 4, 8, 16, 32}) add({a.op, axis, n});
          break;
        case OptOp::GROUP:
          for (int64_t n : {4, 8, 16, 32}) add({a.op, axis, n});
          break;
        case OptOp::THREAD:
        {
          // the thread count, four chunks per thread (chunks a slow core can hand on), and two
          const int64_t threads = target.threads;
          std::vector<int64_t> amounts{std::max<int64_t>(2, threads)};
          if (threads > 1) amounts.push_back(threads * 4);
          if (threads > 2) amounts.push_back(2);
          for (int64_t n : amounts)
            if (chunks * n <= kSearchMaxChunksPerThread * std::max<int64_t>(1, threads)) add({a.op, axis, n});
          break;
        }
        case OptOp::PADTO:
          for (int64_t n : {int64_t{8}, lanes, lanes * 2})
            if (n != 8 || lanes != 8) {
              add({a.op, axis, n});
              if (peel_may_take(type, target)) add({a.op, axis, n, false, true});  // the same pad, its loop not peeled
            }
          break;
        case OptOp::SWAP:
          for (const UOp& o : ranges)
            if (range_type(o) == AxisType::LOOP && range_axis(o) > axis) add({a.op, axis, range_axis(o)});
          break;
        case OptOp::STAGE:
          for (int64_t slot : inputs) add({a.op, axis, slot});
          break;
        case OptOp::BLOCK:
          for (int64_t n : {16, 32, 64}) add({a.op, axis, n});
          break;
        case OptOp::count_: break;
      }
    }
  }
  return out;
}

Key128 candidate_key(const UOp& kernel, const std::vector<Opt>& list, const Target& target) {
  Key128 k = apply_opts(kernel, list, target).key();
  const std::vector<UOp> ranges = ranges_of(kernel);
  for (const Opt& o : list) {
    // (a gate on an axis the peel never takes changes nothing; an axis a split made counts)
    const auto r = std::find_if(ranges.begin(), ranges.end(), [&](const UOp& x) { return range_axis(x) == o.axis; });
    if (o.gated && (r == ranges.end() || peel_may_take(range_type(*r), target)))
      k.lo ^= 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(o.axis + 1), k.hi += 1;
  }
  return k;
}

namespace {

struct Entry {
  std::vector<Opt> opts;
  double seconds;
};

}  // namespace

SearchResult beam_search(const UOp& kernel, const Target& target, const std::vector<Opt>& heuristic, const SearchLimits& limits,
                         const CandidateTimer& time) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  SearchResult res;
  std::unordered_set<Key128, Key128Hash> seen;
  // the kernel a list leaves (candidate_key), or nothing when the list does not apply
  auto key_of = [&](const std::vector<Opt>& list) -> std::optional<Key128> {
    try {
      return candidate_key(kernel, list, target);
    } catch (const Error&) {
      return std::nullopt;
    }
  };
  double best = std::numeric_limits<double>::infinity();
  auto run = [&](const std::vector<std::vector<Opt>>& lists) {
    std::vector<std::optional<double>> times = time(lists, best);
    std::vector<Entry> done;
    for (size_t i = 0; i < lists.size(); ++i) {
      ++res.timed;
      if (i < times.size() && times[i] && std::isfinite(*times[i])) {
        done.push_back({lists[i], *times[i]});
        best = std::min(best, *times[i]);
      } else {
        ++res.failed;
      }
    }
    return done;
  };
  // round 0: the heuristic's choice (first: it sets the pace the others' early exits follow) and
  // the kernel as it is
  std::vector<std::vector<Opt>> first;
  std::optional<Key128> hk = key_of(heuristic);
  if (hk) {
    seen.insert(*hk);
    first.push_back(heuristic);
  }
  std::optional<Key128> plain = key_of({});
  const bool heuristic_differs = hk && plain && !(*hk == *plain);
  if (plain && seen.insert(*plain).second) first.push_back({});
  // the heuristic's plan with its pads gated (a search only appends actions, so it would not
  // otherwise meet the heuristic's plan without the peel),
  std::vector<Opt> gated = heuristic;
  for (Opt& o : gated) o.gated = o.gated || o.op == OptOp::PADTO;
  if (gated != heuristic)
    if (std::optional<Key128> k = key_of(gated); k && seen.insert(*k).second) first.push_back(std::move(gated));
  // and the heuristic's partial plans: a complete plan (STAGE actions last) has few extensions,
  // and the bare kernel's are far from it; its prefixes branch where it chose
  for (size_t n = heuristic.size(); n-- > 1;) {
    std::vector<Opt> prefix(heuristic.begin(), heuristic.begin() + static_cast<std::ptrdiff_t>(n));
    if (std::optional<Key128> k = key_of(prefix); k && seen.insert(*k).second) first.push_back(std::move(prefix));
  }
  std::vector<Entry> beam = run(first);
  for (const Entry& e : beam) {
    if (e.opts.empty()) res.unoptimised = e.seconds;
    else if (e.opts == heuristic) res.heuristic = e.seconds;
  }
  if (!heuristic_differs) res.unoptimised = res.heuristic = std::max(res.unoptimised, res.heuristic);  // (one kernel)
  auto by_time = [](const Entry& a, const Entry& b) { return a.seconds < b.seconds; };
  std::sort(beam.begin(), beam.end(), by_time);
  if (beam.size() > static_cast<size_t>(limits.width)) beam.resize(static_cast<size_t>(limits.width));
  for (int round = 1; round <= limits.max_rounds && !beam.empty() && elapsed() < limits.seconds; ++round) {
    std::vector<std::vector<Opt>> lists;
    for (const Entry& e : beam) {
      const UOp state = apply_opts(kernel, e.opts, target);
      for (const Opt& o : next_actions(state, target)) {
        if (lists.size() >= limits.max_per_round) break;
        std::vector<Opt> list = e.opts;
        list.push_back(o);
        std::optional<Key128> k = key_of(list);
        if (!k) continue;  // (next_actions validated it against the same kernel)
        if (!seen.insert(*k).second) {
          ++res.duplicates;
          continue;
        }
        lists.push_back(std::move(list));
      }
    }
    if (lists.empty()) break;
    const double before = beam.front().seconds;
    std::vector<Entry> fresh = run(lists);
    res.rounds = round;
    if (limits.on_round) limits.on_round(round, std::min(best, before));
    beam.insert(beam.end(), fresh.begin(), fresh.end());
    std::stable_sort(beam.begin(), beam.end(), by_time);
    if (beam.size() > static_cast<size_t>(limits.width)) beam.resize(static_cast<size_t>(limits.width));
    if (!(beam.front().seconds < before * (1 - limits.min_gain))) break;
  }
  // The final: the beam and the heuristic's list timed again side by side, then the duel
  // (kFinalRounds, kTooNoisy above) between the best of them and the heuristic's list.
  if (!beam.empty() && hk && !(beam.size() == 1 && beam.front().opts.size() == heuristic.size() && key_of(beam.front().opts) == hk)) {
    std::vector<std::vector<Opt>> finalists{heuristic};
    for (const Entry& e : beam)
      if (key_of(e.opts) != hk) finalists.push_back(e.opts);
    const std::vector<std::vector<std::optional<double>>> rounds = time_final(finalists, time);
    std::vector<std::pair<size_t, Entry>> final;  // (finalist index, median time)
    for (size_t i = 0; i < finalists.size(); ++i)
      if (std::optional<double> m = median_of(rounds[i])) final.push_back({i, {finalists[i], *m}});
    std::stable_sort(final.begin(), final.end(), [&](const auto& a, const auto& b) { return by_time(a.second, b.second); });
    const bool heuristic_ran = median_of(rounds[0]).has_value();
    if (heuristic_ran) res.heuristic = *median_of(rounds[0]);
    auto challenger = std::find_if(final.begin(), final.end(), [](const auto& f) { return f.first != 0; });
    bool keep_heuristic = heuristic_ran;
    if (heuristic_ran && challenger != final.end()) {
      std::vector<double> ratios;
      for (int r = 0; r < kFinalRounds; ++r) {
        const auto& h = rounds[0][static_cast<size_t>(r)];
        const auto& c = rounds[challenger->first][static_cast<size_t>(r)];
        if (h && c && *h > 0) ratios.push_back(*c / *h);
      }
      res.duel_rounds = static_cast<int>(ratios.size());
      res.duel_wins = static_cast<int>(std::count_if(ratios.begin(), ratios.end(), [](double q) { return q < 1; }));
      if (!ratios.empty()) {
        const double med = median(ratios);
        std::vector<double> dev;
        for (double q : ratios) dev.push_back(std::abs(q - med));
        res.noise = median(dev);
        res.too_noisy = res.noise > kTooNoisy;
        keep_heuristic = res.too_noisy || !(2 * res.duel_wins > res.duel_rounds) ||
                         !(med < 1 - std::max(limits.min_gain, res.noise));
      }
    }
    if (keep_heuristic)
      std::stable_partition(final.begin(), final.end(), [](const auto& f) { return f.first == 0; });
    if (!final.empty()) {
      beam.clear();
      for (auto& f : final) beam.push_back(std::move(f.second));
    }
  }
  if (beam.empty()) {  // nothing ran: the heuristic's list, untimed
    res.opts = heuristic;
  } else {
    res.opts = beam.front().opts;
    res.seconds = beam.front().seconds;
  }
  res.search_seconds = elapsed();
  return res;
}

}  // namespace kiln
