// tools/kiln/cmd_bench.cpp - `kiln bench`: the eight peer workloads on one device.
//
// Same programs and counts as ../shared/bench/tinygrad_bench.py, so the two tables compare line
// by line. Unless --keep-cache, each first call gets an empty temporary compile cache (and PoCL's
// kernel cache is off), so `first` includes compiling every kernel.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli.hpp"
#include "commands.hpp"
#include "kiln/tensor.hpp"
#include "workloads.hpp"

namespace kiln::cli {

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The default device, chosen like every other command chooses it: each backend tried in a child
// first, so a broken plugin elsewhere on the search path is a warning, not the end of the run. A
// KILN_DEVICE or devices.default naming nothing usable is a configuration error (exit 3).
std::string bench_default_device() {
  Registry registry(cli_settings());
  StdoutToStderr quiet;
  try {
    return registry.default_device();
  } catch (const Error& e) {
    bool configured = !registry.settings().device.empty() || !registry.config().default_device.empty();
    if (configured) throw Error(ErrorCode::config_error, e.what());
    throw;
  }
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  po::options_description options("kiln bench options");
  options.add_options()("device", po::value<std::string>(), "device to run on (default: the default device)")(
      "only", po::value<std::string>(), "comma-separated workloads (default: all)")(
      "json", "machine-readable output")("iters", po::value<int>()->default_value(10), "timed steady calls")(
      "warmup", po::value<int>()->default_value(3), "untimed calls before the steady ones")(
      "first-runs", po::value<int>()->default_value(3), "first calls from scratch (the median is reported)")(
      "keep-cache", "use the normal compile cache (first call may hit it)")(
      "no-check", "skip the float64 reference check");
  po::variables_map vm;
  std::string names;
  for (const bench::Workload& w : bench::workloads()) names += (names.empty() ? "" : ", ") + w.name;
  if (!parse_args(args, options, {}, vm, "kiln bench [--device D] [--only a,b] [--json]",
                  "  kiln bench\n  kiln bench --device cpu:0 --only matmul512,softmax --json\n\nworkloads: " + names +
                      "\n"))
    return kOk;

  std::vector<const bench::Workload*> selected;
  if (vm.count("only")) {
    for (const std::string& name : split_list(vm["only"].as<std::string>())) {
      const bench::Workload* found = nullptr;
      for (const bench::Workload& w : bench::workloads())
        if (w.name == name) found = &w;
      if (!found) throw UsageError("unknown workload '" + name + "' in --only; the workloads are: " + names);
      selected.push_back(found);
    }
  } else {
    for (const bench::Workload& w : bench::workloads()) selected.push_back(&w);
  }
  bench::Options opt;
  opt.iters = vm["iters"].as<int>();
  opt.warmup = vm["warmup"].as<int>();
  if (opt.iters < 1 || opt.warmup < 0) throw UsageError("--iters must be at least 1 and --warmup at least 0");
  opt.check = !vm.count("no-check");

  opt.fresh_cache = !vm.count("keep-cache");
  // tinygrad's `first` is measured with an empty PoCL kernel cache too: a driver's own cache of
  // built programs would flatter every `first` after the one that filled it. Set before any
  // device (or default_device()) initialises the OpenCL platform; a value the user set wins.
  if (opt.fresh_cache) setenv("POCL_KERNEL_CACHE", "0", 0);
  opt.first_runs = vm["first-runs"].as<int>();
  if (opt.first_runs < 1) throw UsageError("--first-runs must be at least 1");
  std::string device = vm.count("device") ? vm["device"].as<std::string>() : bench_default_device();
  bool json = vm.count("json"), progress = isatty(STDERR_FILENO);

  if (!json)
    std::printf("%-12s %10s %10s %8s %16s %17s  %s\n", "workload", "first ms", "steady ms", "kernels", "rate",
                "sched miss/hit ms", "check");
  Json list = Json::array();
  bool all_ok = true;
  for (const bench::Workload* w : selected) {
    if (progress) std::fprintf(stderr, "running %s on %s...\r", w->name.c_str(), device.c_str());
    bench::Result r = bench::run(*w, device, opt);
    if (progress) std::fprintf(stderr, "\033[K");
    all_ok = all_ok && (!r.checked || r.ok);
    if (json) {
      Json o = Json::object();
      o.set("name", r.name).set("first_ms", r.first_ms).set("steady_ms", r.steady_ms);
      o.set("kernels", uint64_t{r.kernels}).set("rate", r.rate).set("unit", r.unit);
      o.set("ok", r.checked ? Json(r.ok) : Json()).set("error", r.checked ? Json(r.error) : Json());
      o.set("schedule_miss_ms", r.schedule_miss_ms).set("schedule_hit_ms", r.schedule_ms);
      list.push(o);
      continue;
    }
    char rate[32], check[48];
    std::snprintf(rate, sizeof rate, "%.1f %s", r.rate, r.unit.c_str());
    if (r.checked)
      std::snprintf(check, sizeof check, "%s (err %.1e)", r.ok ? "ok" : "MISMATCH", r.error);
    else
      std::snprintf(check, sizeof check, "-");
    char sched[32];
    std::snprintf(sched, sizeof sched, "%.2f/%.3f", r.schedule_miss_ms, r.schedule_ms);
    std::printf("%-12s %10.1f %10.2f %8zu %16s %17s  %s\n", r.name.c_str(), r.first_ms, r.steady_ms, r.kernels, rate, sched,
                check);
    std::fflush(stdout);
  }
  if (json) {
    Json doc = Json::object();
    doc.set("device", device).set("workloads", list);
    std::printf("%s\n", doc.dump().c_str());
  }
  return all_ok ? kOk : kFailure;
}

}  // namespace kiln::cli
