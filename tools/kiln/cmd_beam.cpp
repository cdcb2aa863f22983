// tools/kiln/cmd_beam.cpp - `kiln beam`: the beam search (runtime/beam.hpp) over a workload's kernels.
//
// Each workload's inputs are made with the heuristics; then its program is realized with
// KILN_BEAM=width, so every kernel of it is searched (or found in the search cache) exactly as a
// user's program would be. Prints per kernel the heuristic's time, the searched time and the
// chosen actions. A progress line per round shows the kernel, the round and the best time so far
// (rewritten in place on a TTY); --seconds bounds each kernel's search (a device lease).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli.hpp"
#include "commands.hpp"
#include "runtime/beam.hpp"
#include "support/env.hpp"
#include "workloads.hpp"

namespace kiln::cli {

namespace {

struct Row {
  std::string workload;
  runtime::BeamReport report;
};

std::string actions(const std::vector<Opt>& opts) { return opts.empty() ? "(none)" : opts_text(opts); }

}  // namespace

int run_beam(const std::vector<std::string>& args) {
  po::options_description options("kiln beam options");
  options.add_options()("device", po::value<std::string>(), "device to search on (default: the default device)")(
      "width", po::value<int>()->default_value(4), "beam width")("json", "machine-readable output")(
      "no-cache", "search again even where the search cache has an entry (the entry is replaced)")(
      "seconds", po::value<double>(), "stop each kernel's search after this many seconds (default 60) and keep the best "
                                     "plan found by then (still confirmed against the heuristic's)")(
      "workload", po::value<std::vector<std::string>>(), "workloads (kiln bench's names), or all");
  po::positional_options_description positional;
  positional.add("workload", -1);
  po::variables_map vm;
  std::string names;
  for (const bench::Workload* w : bench::all_workloads()) names += (names.empty() ? "" : ", ") + w->name;
  if (!parse_args(args, options, positional, vm, "kiln beam [--device D] [--width N] [--seconds S] [--json] WORKLOAD...|all",
                  "  kiln beam matmul512\n  kiln beam --width 2 mlp conv2d\n  kiln beam all --json\n\nworkloads: " + names +
                      "\nall: the default set (the eight peer workloads)\n"))
    return kOk;
  if (!vm.count("workload")) throw UsageError("name a workload (or all); the workloads are: " + names);
  const int width = vm["width"].as<int>();
  if (width < 1) throw UsageError("--width must be at least 1");
  std::vector<const bench::Workload*> selected;
  for (const std::string& name : vm["workload"].as<std::vector<std::string>>()) {
    if (name == "all") {
      for (const bench::Workload& w : bench::find_set("default")->workloads) selected.push_back(&w);
      continue;
    }
    const std::vector<const bench::Workload*> every = bench::all_workloads();
    auto it = std::find_if(every.begin(), every.end(), [&](const bench::Workload* w) { return w->name == name; });
    if (it == every.end()) throw UsageError("unknown workload '" + name + "'; the workloads are: " + names);
    selected.push_back(*it);
  }
  if (vm.count("no-cache")) set_knob(Knob::beam_cache, 0);
  if (vm.count("seconds")) {  // (the process ends with the command: nothing to restore)
    SearchLimits limits;
    limits.seconds = vm["seconds"].as<double>();
    if (!(limits.seconds > 0) || !std::isfinite(limits.seconds)) throw UsageError("--seconds must be a positive number of seconds");
    runtime::set_beam_limits(limits);
  }
  const std::string device = vm.count("device") ? vm["device"].as<std::string>() : default_device_or_config_error();
  const bool json = vm.count("json"), tty = isatty(STDERR_FILENO);

  std::vector<Row> rows;
  std::string current;
  runtime::set_beam_observer([&](const runtime::BeamReport& r) { rows.push_back({current, r}); });
  // a terminal sees one line rewritten in place; a log (a device check's output) a line a round,
  // so a long search on a large kernel still shows it is alive
  runtime::set_beam_progress([&](const std::string& kernel, int round, double best) {
    std::fprintf(stderr, "%s%s: kernel %zu (%s), round %d, best %.4f ms%s", tty ? "\033[K" : "kiln beam: ", current.c_str(),
                 rows.size() + 1, kernel.c_str(), round, best * 1e3, tty ? "\r" : "\n");
  });
  for (const bench::Workload* w : selected) {
    current = w->name;
    bench::search(*w, device, width);
  }
  runtime::set_beam_observer({});
  runtime::set_beam_progress({});
  if (tty) std::fprintf(stderr, "\033[K");

  if (json) {
    Json list = Json::array();
    for (const Row& row : rows) {
      const SearchResult& s = row.report.result;
      Json o = Json::object();
      o.set("workload", row.workload).set("kernel", row.report.kernel).set("cached", row.report.from_cache);
      o.set("heuristic_ms", s.heuristic * 1e3).set("searched_ms", s.seconds * 1e3).set("actions", actions(s.opts));
      o.set("unoptimised_ms", row.report.from_cache ? Json() : Json(s.unoptimised * 1e3));
      o.set("candidates", row.report.from_cache ? Json() : Json(static_cast<uint64_t>(s.timed)));
      o.set("rounds", row.report.from_cache ? Json() : Json(static_cast<uint64_t>(s.rounds)));
      o.set("search_s", row.report.from_cache ? Json() : Json(s.search_seconds));
      o.set("too_noisy", s.too_noisy);
      list.push(o);
    }
    Json doc = Json::object();
    doc.set("device", device).set("width", static_cast<uint64_t>(width)).set("kernels", list);
    std::printf("%s\n", doc.dump().c_str());
    return kOk;
  }
  std::printf("%-12s %-22s %13s %13s %8s %9s %7s  %s\n", "workload", "kernel", "heuristic ms", "searched ms", "speedup",
              "search s", "tried", "actions");
  for (const Row& row : rows) {
    const SearchResult& s = row.report.result;
    char speedup[16] = "-", search[16] = "cached", tried[16] = "-";
    if (s.heuristic > 0 && s.seconds > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", s.heuristic / s.seconds);
    if (!row.report.from_cache) {
      std::snprintf(search, sizeof search, "%.1f", s.search_seconds);
      std::snprintf(tried, sizeof tried, "%lld", static_cast<long long>(s.timed));
    }
    std::printf("%-12s %-22s %13.4f %13.4f %8s %9s %7s  %s\n", row.workload.c_str(), row.report.kernel.c_str(), s.heuristic * 1e3,
                s.seconds * 1e3, speedup, search, tried, actions(s.opts).c_str());
  }
  for (const Row& row : rows)
    if (row.report.result.too_noisy)
      std::printf("%s: %s too noisy to decide: the heuristic's plan is kept (KILN_BEAM_CACHE=0 searches again)\n",
                  row.report.kernel.c_str(), row.report.from_cache ? "its stored search found the machine" : "the machine was");
  return kOk;
}

}  // namespace kiln::cli
