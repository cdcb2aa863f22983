// tools/kiln/cmd_bench.cpp - `kiln bench`: a set of workloads on one device.
//
// The default set has the programs and counts of ../shared/bench/tinygrad_bench.py, so the two
// tables compare line by line; `--sizes` sweeps matmul over sizes, `--set extra` runs workloads
// outside the eight (bench/workloads.hpp). Each rate is also shown as a share of the machine's
// roof (bench/peak.hpp) on CPU devices. Unless --keep-cache, each first call gets an empty
// temporary compile cache (and PoCL's kernel cache is off), so `first` includes compiling every
// kernel.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "cli.hpp"
#include "commands.hpp"
#include "kiln/tensor.hpp"
#include "peak.hpp"
#include "plugin/device.hpp"
#include "plugin/registry.hpp"
#include "runtime/beam.hpp"
#include "runtime/device_alloc.hpp"
#include "support/env.hpp"
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

// The roofs of the host CPU, for a CPU device only (a GPU's are not the host's): on the device's
// worker threads (cpu backend), else on every hardware thread (PoCL runs on all of them).
std::optional<bench::MachinePeak> device_peak(const std::string& device, bool remeasure) {
  auto dev = runtime::open_device(device);
  if (dev->props().kind != KILN_DEVICE_KIND_CPU) return std::nullopt;
  const Target& t = dev->target();
  unsigned threads = t.has(KILN_TARGET_HAS_THREADS) ? t.threads : std::thread::hardware_concurrency();
  return bench::machine_peak(threads, remeasure);
}

double roof_of(const bench::MachinePeak& p, bench::Roof roof) {
  return roof == bench::Roof::fma ? p.gflops : roof == bench::Roof::copy ? p.copy_gbs : p.read_gbs;
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  po::options_description options("kiln bench options");
  options.add_options()("device", po::value<std::string>(), "device to run on (default: the default device)")(
      "set", po::value<std::string>(), "workload set: default, sizes or extra (default: default)")(
      "sizes", "the matmul size sweep (= --set sizes)")(
      "only", po::value<std::string>(), "comma-separated workloads (default: all of the set; without --set, from any set)")(
      "json", "machine-readable output")("iters", po::value<int>()->default_value(10), "timed steady calls")(
      "warmup", po::value<int>()->default_value(3), "untimed calls before the steady ones")(
      "first-runs", po::value<int>()->default_value(3), "first calls from scratch (the median is reported)")(
      "keep-cache", "use the normal compile cache (first call may hit it)")(
      "no-check", "skip the float64 reference check")("no-peak", "do not measure the machine's roofs (no % of peak)")(
      "remeasure-peak", "measure the roofs again instead of reading the cached ones")(
      "beam", po::value<int>(), "search each workload's kernels first (beam width N; the search cache keeps them), then time "
      "them with the searched actions")(
      "jit", "also time the steady calls replayed by a kiln::Jit (jit ms), and the replay cost per kernel")(
      "dtype", po::value<std::string>()->default_value("float32"),
      "float32, float16 or bfloat16: the memory-bound workloads (elementwise, sum, softmax; layernorm in --set extra) and the matmuls also "
      "run in that dtype, beside float32 in the same run, with the ratio of their throughputs (convolutions and the "
      "MLP stay float32)");
  po::variables_map vm;
  std::string about;
  for (const bench::WorkloadSet& set : bench::workload_sets()) {
    about += "\n" + set.name + " (" + set.about + "):\n  ";
    for (const bench::Workload& w : set.workloads) about += w.name + (&w == &set.workloads.back() ? "\n" : ", ");
  }
  if (!parse_args(args, options, {}, vm, "kiln bench [--device D] [--sizes | --set S] [--only a,b] [--beam N] [--jit] [--json]",
                  "  kiln bench\n  kiln bench --sizes\n  kiln bench --set extra\n  kiln bench --beam 4 --only matmul1024\n  kiln bench --jit\n"
                  "  kiln bench --dtype bfloat16 --only elementwise,sum,softmax\n"
                  "  kiln bench --device cpu:0 --only matmul512,softmax --json\n\nworkload sets:" + about))
    return kOk;

  if (vm.count("sizes") && vm.count("set") && vm["set"].as<std::string>() != "sizes")
    throw UsageError("--sizes and --set " + vm["set"].as<std::string>() + " name two sets; give one");
  std::string set_name = vm.count("sizes") ? "sizes" : vm.count("set") ? vm["set"].as<std::string>() : "default";
  const bench::WorkloadSet* set = bench::find_set(set_name);
  if (!set) throw UsageError("unknown workload set '" + set_name + "'; the sets are: default, sizes, extra");
  std::vector<const bench::Workload*> selected;
  if (vm.count("only")) {
    // without --set or --sizes, a name is looked up in every set
    std::vector<const bench::Workload*> candidates = bench::all_workloads();
    if (vm.count("sizes") || vm.count("set")) {
      candidates.clear();
      for (const bench::Workload& w : set->workloads) candidates.push_back(&w);
    }
    std::string names;
    for (const bench::Workload* w : candidates) names += (names.empty() ? "" : ", ") + w->name;
    for (const std::string& name : split_list(vm["only"].as<std::string>())) {
      auto found = std::find_if(candidates.begin(), candidates.end(), [&](const bench::Workload* c) { return c->name == name; });
      if (found == candidates.end()) throw UsageError("unknown workload '" + name + "' in --only; the workloads are: " + names);
      selected.push_back(*found);
    }
  } else {
    for (const bench::Workload& w : set->workloads) selected.push_back(&w);
  }
  const bool sweep = set->sweep;  // its rates compare with each other: % of the best is shown
  bench::Options opt;
  opt.iters = vm["iters"].as<int>();
  opt.warmup = vm["warmup"].as<int>();
  if (opt.iters < 1 || opt.warmup < 0) throw UsageError("--iters must be at least 1 and --warmup at least 0");
  opt.check = !vm.count("no-check");
  opt.jit = vm.count("jit") > 0;

  opt.fresh_cache = !vm.count("keep-cache");
  // tinygrad's `first` is measured with an empty PoCL kernel cache too: a driver's own cache of
  // built programs would flatter every `first` after the one that filled it. Set before any
  // device (or default_device()) loads the opencl backend (its option pocl_kernel_cache; a
  // POCL_KERNEL_CACHE the user set wins).
  if (opt.fresh_cache) {
    Registry& registry = Registry::get();
    for (const BackendRecord& r : registry.known_backends())  // (a disabled or broken one takes no options)
      if (r.name == "opencl" && r.pending && !r.is_shadowed())
        registry.set_option("opencl", {"pocl_kernel_cache", "pocl_kernel_cache", "false", "kiln bench (fresh caches)"});
  }
  opt.first_runs = vm["first-runs"].as<int>();
  if (opt.first_runs < 1) throw UsageError("--first-runs must be at least 1");
  const std::string dtype_name = vm["dtype"].as<std::string>();
  if (dtype_name != "float32" && dtype_name != "float16" && dtype_name != "bfloat16")
    throw UsageError("unknown --dtype '" + dtype_name + "'; the dtypes are: float32, float16, bfloat16");
  const std::optional<DType> half =
      dtype_name == "float16" ? std::optional(dtypes::float16) : dtype_name == "bfloat16" ? std::optional(dtypes::bfloat16) : std::nullopt;
  std::string device = vm.count("device") ? vm["device"].as<std::string>() : default_device_or_config_error();
  bool json = vm.count("json"), progress = isatty(STDERR_FILENO);

  if (vm.count("beam")) {
    const int width = vm["beam"].as<int>();
    if (width < 1) throw UsageError("--beam must be at least 1");
    const std::string dir = runtime::beam_cache_dir();
    if (dir.empty()) throw UsageError("--beam needs the search cache, and KILN_CACHE_DIR (or KILN_BEAM_DIR) is off");
    for (const bench::Workload* w : selected) {
      if (progress) std::fprintf(stderr, "searching %s on %s (width %d)...\r", w->name.c_str(), device.c_str(), width);
      bench::search(*w, device, width);
    }
    if (progress) std::fprintf(stderr, "\033[K");
    set_knob(Knob::beam, width);
  }
  // The first calls' fresh compile caches keep the searched lists, as a second process would:
  // with --beam or KILN_BEAM (without this, `KILN_BEAM=4 kiln bench` searched every kernel again in
  // each first call's empty cache, minutes for the default set, and timed the search as `first`).
  if (knob(Knob::beam) > 0)
    if (const std::string dir = runtime::beam_cache_dir(); !dir.empty()) set_knob(TextKnob::beam_dir, std::filesystem::absolute(dir).string());

  std::optional<bench::MachinePeak> peak;
  if (!vm.count("no-peak")) peak = device_peak(device, vm.count("remeasure-peak"));
  if (peak && !json)
    std::printf("# machine roofs (%s, %u threads, %s FMA): %.1f GFLOP/s fp32 FMA, %.1f GB/s copy, %.1f GB/s read\n",
                peak->from_cache ? "cached" : "measured", peak->threads, peak->isa.c_str(), peak->gflops, peak->copy_gbs,
                peak->read_gbs);

  std::optional<bench::JitOverhead> overhead;
  if (opt.jit) {
    overhead = bench::jit_overhead(device);
    if (!json)
      std::printf("# jit overhead (32 kernels of 16 elements): replay %.3f us per kernel, eager realize %.3f us (%.1fx)\n",
                  overhead->replay_us, overhead->eager_us, overhead->eager_us / overhead->replay_us);
  }

  const int name_width = half ? 20 : 14;  // ("elementwise bfloat16")
  auto print_header = [&] {
    std::printf("%-*s %10s %10s%s %8s %16s %6s%s %17s  %s\n", name_width, "workload", "first ms", "steady ms", opt.jit ? "     jit ms" : "",
                "kernels", "rate", "%peak", sweep ? "   %best" : "", "sched miss/hit ms", "check");
  };
  auto print_row = [&](const bench::Result& r, double peak_pct, double best_pct) {
    char rate[32], check[48], sched[32], pct[16] = "-", best[16] = "";
    std::snprintf(rate, sizeof rate, "%.1f %s", r.rate, r.unit.c_str());
    if (r.checked)
      std::snprintf(check, sizeof check, "%s (err %.1e)", r.ok ? "ok" : "MISMATCH", r.error);
    else
      std::snprintf(check, sizeof check, "-");
    std::snprintf(sched, sizeof sched, "%.2f/%.3f", r.schedule_miss_ms, r.schedule_ms);
    if (peak_pct > 0) std::snprintf(pct, sizeof pct, "%.0f%%", peak_pct);
    if (sweep) std::snprintf(best, sizeof best, " %6.0f%%", best_pct);
    char jit[32] = "";
    if (opt.jit) std::snprintf(jit, sizeof jit, " %10.2f%s", r.jit_ms, r.jit_same ? "" : "!");  // ! = replay differs
    std::printf("%-*s %10.1f %10.2f%s %8zu %16s %6s%s %17s  %s\n", name_width, r.name.c_str(), r.first_ms, r.steady_ms, jit, r.kernels,
                rate, pct, best, sched, check);
    std::fflush(stdout);
  };

  if (!json && !sweep) print_header();
  std::vector<bench::Result> results;
  std::vector<double> peak_pcts;
  std::vector<std::string> result_dtypes;
  bool all_ok = true;
  // with --dtype: each memory-bound workload in float32, then in the 16-bit dtype; the ratio of
  // their element throughputs (float32's steady time over the 16-bit one's)
  std::string ratios, float32_only;
  Json ratio_json = Json::object();
  auto run_one = [&](const bench::Workload& w, DType d) {
    if (progress) std::fprintf(stderr, "running %s on %s...\r", w.name.c_str(), device.c_str());
    bench::Options o = opt;
    o.tolerance = bench::tolerance_for(d, opt.tolerance);
    bench::Result r = bench::run(w, device, o);
    if (progress) std::fprintf(stderr, "\033[K");
    all_ok = all_ok && (!r.checked || r.ok) && (!opt.jit || r.jit_same);
    double pct = peak ? 100 * r.rate / roof_of(*peak, w.roof) : 0;
    if (!json && !sweep) print_row(r, pct, 0);  // a sweep's rows wait for its best rate
    results.push_back(r);
    peak_pcts.push_back(pct);
    result_dtypes.push_back(d.name());
    return r;
  };
  for (const bench::Workload* w : selected) {
    bench::Result f32 = run_one(*w, dtypes::float32);
    if (!half) continue;
    std::optional<bench::Workload> h = bench::in_dtype(*w, *half);
    if (!h) {
      float32_only += (float32_only.empty() ? "" : ", ") + w->name;
      continue;
    }
    bench::Result r = run_one(*h, *half);
    const double ratio = f32.steady_ms / r.steady_ms;
    char text[64];
    std::snprintf(text, sizeof text, "%s %.2fx", w->name.c_str(), ratio);
    ratios += (ratios.empty() ? "" : ", ") + std::string(text);
    ratio_json.set(w->name, ratio);
  }
  if (half && !json) {
    if (!ratios.empty())
      std::printf("# %s / float32 element throughput (same run, steady): %s\n", dtype_name.c_str(), ratios.c_str());
    if (!float32_only.empty())
      std::printf("# float32 only (16-bit convolutions and MLPs are not benchmarked yet): %s\n", float32_only.c_str());
  }
  double best_rate = 0;
  for (const bench::Result& r : results) best_rate = std::max(best_rate, r.rate);
  // (rate / best first: the best size's share is exactly 100; 100 * rate / best could round to 99.99...)
  auto best_pct = [&](const bench::Result& r) { return best_rate > 0 ? 100 * (r.rate / best_rate) : 0; };
  if (!json && sweep) {
    print_header();
    for (size_t i = 0; i < results.size(); i++) print_row(results[i], peak_pcts[i], best_pct(results[i]));
  }
  if (json) {
    Json list = Json::array();
    for (size_t i = 0; i < results.size(); i++) {
      const bench::Result& r = results[i];
      Json o = Json::object();
      o.set("name", r.name).set("dtype", result_dtypes[i]).set("first_ms", r.first_ms).set("steady_ms", r.steady_ms);
      o.set("kernels", uint64_t{r.kernels}).set("rate", r.rate).set("unit", r.unit);
      o.set("peak_pct", peak ? Json(peak_pcts[i]) : Json()).set("best_pct", sweep ? Json(best_pct(r)) : Json());
      o.set("ok", r.checked ? Json(r.ok) : Json()).set("error", r.checked ? Json(r.error) : Json());
      o.set("schedule_miss_ms", r.schedule_miss_ms).set("schedule_hit_ms", r.schedule_ms);
      o.set("jit_ms", opt.jit ? Json(r.jit_ms) : Json()).set("jit_same", opt.jit ? Json(r.jit_same) : Json());
      list.push(o);
    }
    Json doc = Json::object();
    doc.set("device", device).set("set", set_name).set("dtype", dtype_name);
    if (half) doc.set("throughput_ratio", ratio_json);  // 16-bit over float32, per workload
    if (peak) {
      Json p = Json::object();
      p.set("gflops", peak->gflops).set("copy_gbs", peak->copy_gbs).set("read_gbs", peak->read_gbs);
      p.set("threads", peak->threads).set("isa", peak->isa).set("cached", peak->from_cache);
      doc.set("peak", p);
    } else {
      doc.set("peak", Json());
    }
    if (overhead) {
      Json j = Json::object();
      j.set("replay_us_per_kernel", overhead->replay_us).set("eager_us_per_kernel", overhead->eager_us);
      doc.set("jit_overhead", j);
    } else {
      doc.set("jit_overhead", Json());
    }
    doc.set("workloads", list);
    std::printf("%s\n", doc.dump().c_str());
  }
  return all_ok ? kOk : kFailure;
}

}  // namespace kiln::cli
