// codegen/opt/search.hpp - BEAM search over the optimisation actions, timed by a caller's function.
//
// The search knows kernels and actions, not devices: a caller (runtime/beam.cpp on a real device,
// tests with an injected function) times lists of actions. Every candidate is an action list
// applied to the kernel from scratch, so a candidate is exactly what a given list does in the
// pipeline (apply_opts validates it; an invalid one is never timed).
//
//   round 0   the heuristic's list and the unoptimised kernel (always candidates: the search never
//             returns something slower than what would run without it), the heuristic's list
//             with its pads gated (PADTO(a, n, gated): no peel), and the heuristic's prefixes
//             (its partial plans: the beam branches where it chose)
//   round r   every beam entry extended by every action that applies to the kernel it leaves
//             (next_actions), minus lists whose kernel is one already seen (the structural key of
//             the kernel after the actions: UPCAST(0,4) UPCAST(0,2) and UPCAST(0,8) are one)
//   keep      the `width` fastest of everything timed so far
//   stop      when a round's best is not faster than the best before it by more than `min_gain`
//             (2%: a shared machine's timing noise is about that between repeated minimums),
//             after `max_rounds`, or past `seconds` of searching
//   final     the beam and the heuristic's list timed again side by side, in five interleaved
//             rounds (each one's time the median of its rounds); then a duel between the fastest
//             and the heuristic's list, round by round: the fastest is returned only if it won
//             most rounds and its median time ratio beats 1 by more than `min_gain` and more
//             than the ratios' spread; a spread over 15% is a machine too noisy to decide
//             (SearchResult::too_noisy), and the heuristic's list is returned (a noise winner
//             meets it under the same conditions, and a gain within the noise is none)
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "codegen/opt/opt.hpp"

namespace kiln {

struct Target;

struct SearchLimits {
  int width = 4;
  int max_rounds = 6;
  double min_gain = 0.02;
  double seconds = 60;
  size_t max_per_round = 200;  // candidates timed per round at most (the beam's order decides)
  std::function<void(int round, double best)> on_round;  // after each round (progress displays)
};

// Times candidate lists: seconds per list (nullopt: it failed to build or run, or was abandoned).
// `best` is the fastest time so far (infinity at first), for early exits.
using CandidateTimer = std::function<std::vector<std::optional<double>>(const std::vector<std::vector<Opt>>& lists, double best)>;

struct SearchResult {
  std::vector<Opt> opts;  // the fastest list
  double seconds = 0;     // its time
  double unoptimised = 0, heuristic = 0;  // the round-0 times (0: it failed)
  int rounds = 0;
  int64_t timed = 0, duplicates = 0, failed = 0;
  double search_seconds = 0;
  // The final duel (search.cpp): rounds where the best finalist beat the heuristic's list, of the
  // rounds both ran; the spread of their time ratios; whether that spread was too large to decide
  // (the heuristic's list kept, whatever the medians said).
  int duel_wins = 0, duel_rounds = 0;
  double noise = 0;
  bool too_noisy = false;
};

// Every action that applies to `kernel` (as previous actions left it) on `target`, with the
// amounts a search tries: vector lanes up to the target's width, small upcasts and unrolls (at
// most 256 copies of a value in all), the target's thread count and four chunks per thread (at
// most 16 chunks per thread in all), workgroup sizes, paddings to a vector or two, swaps of
// output axes, staging of each input, reduce blocks. Each is checked by opt_problem.
std::vector<Opt> next_actions(const UOp& kernel, const Target& target);
// What makes two candidates the same kernel: the structural key of the kernel `list` leaves, and
// which axes keep their gates (a gated PADTO leaves the same kernel, but the peel after the
// actions reads it). Throws kiln::Error when the list does not apply.
Key128 candidate_key(const UOp& kernel, const std::vector<Opt>& list, const Target& target);

// `kernel` as the pipeline's "apply opts" step sees it (codegen/pipeline.cpp), `heuristic` the
// list the heuristic picks for it. Throws kiln::Error only through `time`.
SearchResult beam_search(const UOp& kernel, const Target& target, const std::vector<Opt>& heuristic, const SearchLimits& limits,
                         const CandidateTimer& time);

}  // namespace kiln
