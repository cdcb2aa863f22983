// runtime/beam.hpp - BEAM search on a real device, and the search cache.
//
// With KILN_BEAM=N (N > 0), every kernel the program cache lowers without a given action list
// gets the list a beam search of width N found (codegen/opt/search.hpp): from the search cache when an
// entry exists, else by searching now and storing the result. Candidates are timed on the device
// itself, on scratch buffers of the kernel's sizes (never the user's: inputs are filled with
// deterministic random values), serialised with other searches so they do not time each other.
//
// Timing: every candidate runs 3 times and its time is the minimum (the first run pays cold
// caches; the minimum of a few is what repeated runs converge to on a shared machine). The runs
// go in passes over a round's candidates (its first pass in list order, the next reversed, ...),
// not one candidate's three in a row: a shared machine's slow phases last seconds, and a
// candidate timed in one must not lose to a rival timed in a quiet one. The first
// run's outputs (poisoned before it, so an output a candidate leaves unwritten cannot pass on an
// earlier candidate's values) are checked against the first candidate's (the heuristic's kernel),
// in the tolerance of float reassociation: a mismatch is an error naming the action list. A candidate
// whose first run is over 3x the best so far stops there. A run past the timeout (10x the best
// time, at least 1 s) drops the candidate; if it is still running a minute later, the search ends
// with the best so far and leaves its scratch buffers to the running kernel.
//
// The cache: <key>.opts in KILN_BEAM_DIR (default KILN_CACHE_DIR/beam; "off": none), written and checked like compile cache entries
// (atomic, checksummed; a corrupt or inapplicable entry is searched again and replaced). The key
// covers the kernel's structure, the device (name, backend, plugin version, compiler key: which
// changes with the driver, the compiler and the ISA), the target's caps and the width.
// KILN_BEAM_CACHE=0 does not read entries (it still writes them). A search whose final found the
// machine too noisy to decide (SearchResult::too_noisy) stores the heuristic's plan marked so
// ("too_noisy: 1"): later runs use it without searching, and say so (KILN_DEBUG, kiln beam).
// Not searched: kernels with symbolic sizes (their buffers have no size until launch).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/opt/search.hpp"

namespace kiln {
class Device;
struct Target;
}

namespace kiln::runtime {

struct BeamReport {
  std::string kernel, device;
  SearchResult result;   // seconds: the searched list's time; unoptimised/heuristic: round 0's
  bool from_cache = false;
};

// The searched action list for `ast` on `dev` at beam `width` (nullopt: not searchable, the
// heuristic applies). `report` (optional) receives what happened.
std::optional<std::vector<Opt>> beam_opts(const std::shared_ptr<Device>& dev, const UOp& ast, const Target& target, int width,
                                          BeamReport* report = nullptr);

// The search cache's list for `ast`, not checked against the kernel (nullopt: no entry, or the
// kernel is not searchable). For the program cache's first calls: checking a list costs the
// optimiser's front half again, and the lowering that follows checks it anyway; a list that
// does not apply there goes to beam_opts, which checks, searches again and replaces the entry.
std::optional<std::vector<Opt>> beam_cached_opts(const std::shared_ptr<Device>& dev, const UOp& ast, const Target& target, int width);

// Called after every kernel's search or cache hit (kiln beam, KILN_DEBUG): empty to remove.
void set_beam_observer(std::function<void(const BeamReport&)> observer);

// Called after each round of a search with the kernel's name, the round and the best time so far
// (kiln beam's progress line); empty to remove.
void set_beam_progress(std::function<void(const std::string& kernel, int round, double best)> progress);

// Where the search cache lives ("" when off).
std::string beam_cache_dir();

// The search's limits (width aside: beam_opts' argument); tests keep searches short with fewer
// rounds and candidates. Restored by set_beam_limits({}).
void set_beam_limits(const SearchLimits& limits);

// Tests: the timeout of one run in seconds (0: the default rule above).
void set_beam_timeout(double seconds);

// Tests: called before each timed launch with the candidate's index in the round's list and the
// run (0: the checked one); empty to remove.
void set_beam_launch_observer(std::function<void(size_t candidate, int run)> observer);

// Tests: candidates other than the first are not launched (a kernel that stores nothing), so the
// output check must catch them; false restores real launches.
void set_beam_skip_launches(bool skip);

}  // namespace kiln::runtime
