// runtime/beam.cpp - BEAM search on a real device, and the search cache (see beam.hpp).
#include "runtime/beam.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "codegen/lir.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "plugin/device.hpp"
#include "runtime/compile_cache.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/half.hpp"
#include "support/hash.hpp"
#include "support/parallel.hpp"

namespace kiln::runtime {

namespace {

std::mutex search_mu;  // one search times at a time: two would time each other
std::mutex observer_mu;
std::function<void(const BeamReport&)> observer;
std::function<void(const std::string&, int, double)> progress;
std::atomic<double> timeout_override{0};
std::atomic<bool> skip_launches{false};  // tests: see set_beam_skip_launches
std::function<void(size_t, int)> launch_observer_for_tests;  // under search_mu: see set_beam_launch_observer
SearchLimits limits_override;  // under observer_mu

constexpr int kTimedRuns = 3;
constexpr double kDropFactor = 3;  // a first run this much slower than the best stops there
constexpr double kAbandonAfter = 60;  // seconds a late run is waited for before the search gives up

struct Param {
  int64_t slot;
  DType dtype;
  int64_t elems;
  bool loaded = false, stored = false;
};

// The kernel's buffers by slot; false when a size is not constant (symbolic kernels). Host scalars
// (kernel arguments) are timed as zeros.
bool params_of(const UOp& ast, std::vector<Param>& out) {
  auto at = [&](int64_t slot) -> Param* {
    for (Param& p : out)
      if (p.slot == slot) return &p;
    return nullptr;
  };
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::DEFINE_VAR && !is_scalar_var(u)) return false;  // (a host scalar's value is any number)
    if (u.op() == Ops::PARAM && u.dtype().is_ptr() && !at(u.arg_int())) {
      if (u.dtype().ptr_size() <= 0) return false;
      out.push_back({u.arg_int(), u.dtype().base(), u.dtype().ptr_size()});
    }
    if ((u.op() == Ops::LOAD || u.op() == Ops::STORE) && u.src(0).op() == Ops::INDEX && u.src(0).src(0).op() == Ops::PARAM)
      (u.op() == Ops::LOAD ? at(u.src(0).src(0).arg_int())->loaded : at(u.src(0).src(0).arg_int())->stored) = true;
  }
  std::sort(out.begin(), out.end(), [](const Param& a, const Param& b) { return a.slot < b.slot; });
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].slot != static_cast<int64_t>(i)) return false;
  return true;
}

// Deterministic inputs: floats in [-1, 1], integers in [0, 16), bools 0/1.
std::string random_bytes(DType d, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t size = static_cast<size_t>(d.itemsize());
  std::string b(static_cast<size_t>(n) * size, '\0');
  for (int64_t i = 0; i < n; ++i) {
    char* p = b.data() + static_cast<size_t>(i) * size;
    switch (d.scalar()) {
      case Scalar::float32: { float v = u(rng); std::memcpy(p, &v, 4); break; }
      case Scalar::float64: { double v = u(rng); std::memcpy(p, &v, 8); break; }
      case Scalar::float16: { uint16_t v = float_to_half(u(rng)); std::memcpy(p, &v, 2); break; }
      case Scalar::bfloat16: { uint16_t v = float_to_bf16(u(rng)); std::memcpy(p, &v, 2); break; }
      case Scalar::bool_: *p = static_cast<char>(rng() & 1); break;
      default: *p = static_cast<char>(rng() % 16); break;  // (little-endian: the low byte)
    }
  }
  return b;
}

double element(DType d, const std::string& b, size_t i) {
  const char* p = b.data() + i * static_cast<size_t>(d.itemsize());
  switch (d.scalar()) {
    case Scalar::float32: { float v; std::memcpy(&v, p, 4); return v; }
    case Scalar::float64: { double v; std::memcpy(&v, p, 8); return v; }
    case Scalar::float16: { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    default: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
  }
}

// "" when `got` matches `want`: floats within reassociation error (a reduce split into vector
// lanes and partial sums adds in another order), everything else exactly.
std::string mismatch(DType d, const std::string& want, const std::string& got) {
  const size_t n = want.size() / static_cast<size_t>(d.itemsize());
  for (size_t i = 0; i < n; ++i) {
    if (!d.is_float()) {
      if (std::memcmp(want.data() + i * static_cast<size_t>(d.itemsize()), got.data() + i * static_cast<size_t>(d.itemsize()),
                      static_cast<size_t>(d.itemsize())) != 0)
        return cat("element ", i, " differs");
      continue;
    }
    const double w = element(d, want, i), g = element(d, got, i);
    const double tol = (d.itemsize() == 2 ? 2e-2 : 1e-3) * std::max(1.0, std::fabs(w));
    if (!(std::isnan(w) && std::isnan(g)) && !(w == g) && !(std::fabs(g - w) <= tol))
      return cat("element ", i, " is ", g, ", expected ", w);
  }
  return {};
}

// Scratch buffers of the kernel's sizes on the device, inputs filled once.
class Scratch {
 public:
  Scratch(std::shared_ptr<Device> dev, std::vector<Param> params) : dev_(std::move(dev)), params_(std::move(params)) {
    for (const Param& p : params_) {
      const uint64_t bytes = static_cast<uint64_t>(p.elems) * static_cast<uint64_t>(p.dtype.itemsize());
      handles_.push_back(dev_->alloc(std::max<uint64_t>(bytes, 1)));
      host_.push_back(p.loaded ? random_bytes(p.dtype, p.elems, 0x6b696c6e + static_cast<uint64_t>(p.slot)) : std::string());
    }
  }
  ~Scratch() {
    if (abandoned_) return;  // a kernel may still be running on them
    for (kiln_buffer* b : handles_) dev_->free(b);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // The inputs as they were (a kernel that writes a buffer it reads changes them), and the
  // outputs poisoned (all bits set: NaN for floats): a candidate that leaves part of an output
  // unwritten cannot pass the check on values an earlier candidate stored there.
  void reset() {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!host_[i].empty()) dev_->copy_in(handles_[i], 0, host_[i].data(), host_[i].size());
      else if (params_[i].stored) {
        const std::string poison(static_cast<size_t>(params_[i].elems) * static_cast<size_t>(params_[i].dtype.itemsize()), '\xff');
        dev_->copy_in(handles_[i], 0, poison.data(), poison.size());
      }
    }
  }
  std::vector<std::string> outputs() {
    std::vector<std::string> out;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].stored) continue;
      std::string b(static_cast<size_t>(params_[i].elems) * static_cast<size_t>(params_[i].dtype.itemsize()), '\0');
      dev_->copy_out(b.data(), handles_[i], 0, b.size());
      out.push_back(std::move(b));
    }
    return out;
  }
  std::string compare(const std::vector<std::string>& want, const std::vector<std::string>& got) const {
    size_t k = 0;
    for (const Param& p : params_) {
      if (!p.stored) continue;
      if (std::string why = mismatch(p.dtype, want[k], got[k]); !why.empty()) return cat("output ", p.slot, ": ", why);
      ++k;
    }
    return {};
  }
  const std::vector<kiln_buffer*>& handles() const { return handles_; }
  void abandon() { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }

 private:
  std::shared_ptr<Device> dev_;
  std::vector<Param> params_;
  std::vector<kiln_buffer*> handles_;
  std::vector<std::string> host_;
  bool abandoned_ = false;
};

std::string list_text(const std::vector<Opt>& opts) { return opts.empty() ? "(none)" : opts_text(opts); }

// Times candidate lists of one kernel on the device (CandidateTimer).
struct DeviceTimer {
  std::shared_ptr<Device> dev;
  const UOp& ast;
  const Target& target;
  Scratch& scratch;
  std::string name;
  std::optional<std::vector<std::string>> reference;  // the first candidate's outputs

  double timeout(double best) const {
    if (double t = timeout_override.load(); t > 0) return t;
    return std::isfinite(best) ? std::max(1.0, 10 * best) : 10.0;
  }

  // One launch on a thread of its own, waited for up to `limit` seconds. Past it the candidate is
  // dropped (`late`) and the launch waited for up to kAbandonAfter more seconds before the search
  // goes on; a launch still running then is abandoned with the scratch buffers (`lost`). A launch
  // the device refuses yields no time and is not late.
  struct Run {
    std::optional<double> seconds;
    bool late = false, lost = false;
  };
  Run launch(const std::shared_ptr<Program>& program, const uint32_t* g, const uint32_t* l, size_t n_values, double limit) {
    auto done = std::make_shared<std::promise<double>>();
    std::future<double> result = done->get_future();
    std::array<uint32_t, 6> dims{g[0], g[1], g[2], l[0], l[1], l[2]};
    const bool skip = reference && skip_launches.load();
    std::thread([done, program, dev = dev, handles = scratch.handles(), dims, skip, values = std::vector<int64_t>(n_values)] {
      try {
        if (skip) return done->set_value(1e-9);
        done->set_value(dev->launch(*program, handles, {}, values, dims.data(), dims.data() + 3, true));
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    }).detach();
    if (result.wait_for(std::chrono::duration<double>(limit)) == std::future_status::ready) {
      double seconds;
      try {
        seconds = result.get();
      } catch (const Error& e) {  // the device refused the launch (resources): the candidate is dropped
        if (debug_level() >= 3) log_line(cat("beam: ", name, ": a launch failed: ", e.what()));
        return {};
      }
      if (seconds <= limit) return {seconds};
      return {std::nullopt, true, false};  // (done by the time we looked, but past the limit all the same)
    }
    const bool finished = result.wait_for(std::chrono::duration<double>(kAbandonAfter)) == std::future_status::ready;
    return {std::nullopt, true, !finished};
  }

  std::vector<std::optional<double>> operator()(const std::vector<std::vector<Opt>>& lists, double best) {
    std::vector<std::optional<double>> times(lists.size());
    if (scratch.abandoned()) return times;
    struct Built {
      ProgramSpec spec;
      std::string binary, error;
    };
    std::vector<Built> built(lists.size());
    // A device that builds many kernels in one call (OpenCL) gets the candidates together, each
    // under a name of its own (a program's entries differ); the others compile in parallel.
    const bool together = dev->has_compile_many() && lists.size() > 1;
    std::vector<std::string> sources(lists.size());
    parallel_for(lists.size(), [&](size_t i) {  // lower and render (and compile) in parallel
      try {
        const UOp named = together ? ast.replace_arg(Arg{cat(name, "_beam", i)}) : ast;
        built[i].spec = to_program(named, target, &lists[i]);
        const kiln_lir lir = built[i].spec.lir.view();
        sources[i] = dev->render(lir);
        if (!together) built[i].binary = compile_cached(*dev, sources[i], built[i].spec.name, lir_key(lir));
      } catch (const Error& e) {
        built[i].error = e.what();
      }
    });
    if (together) {
      std::vector<CompileJob> jobs;
      std::vector<size_t> of;
      for (size_t i = 0; i < lists.size(); ++i)
        if (built[i].error.empty()) {
          jobs.push_back({sources[i], built[i].spec.name, lir_key(built[i].spec.lir.view())});
          of.push_back(i);
        }
      try {
        std::vector<std::string> binaries = compile_cached_many(*dev, jobs);
        for (size_t j = 0; j < of.size(); ++j) built[of[j]].binary = std::move(binaries[j]);
      } catch (const Error&) {  // one candidate that does not compile: build them one by one
        parallel_for(of.size(), [&](size_t j) {
          Built& b = built[of[j]];
          try {
            b.binary = compile_cached(*dev, jobs[j].source, b.spec.name, jobs[j].lir_key);
          } catch (const Error& e) {
            b.error = e.what();
          }
        });
      }
    }
    // Load every candidate that built, then time them in passes over all of them: the first pass
    // checks each one's outputs and drops the far slower, each later pass runs every candidate
    // left once more (in reverse order every other pass). A shared machine's slow phases last
    // seconds, so a candidate timed in one and its rival in another would be compared unfairly;
    // interleaved, each candidate's minimum comes from the same stretches of time as the others'.
    struct Timed {
      size_t list;
      std::shared_ptr<Program> program;
      double seconds = std::numeric_limits<double>::infinity();
      bool alive = true;
    };
    std::vector<Timed> timed;
    for (size_t i = 0; i < lists.size(); ++i) {
      if (!built[i].error.empty()) {
        if (debug_level() >= 3) log_line(cat("beam: ", name, " [", list_text(lists[i]), "] does not build: ", built[i].error));
        continue;
      }
      try {
        timed.push_back({i, dev->load(built[i].binary, built[i].spec.name)});
      } catch (const Error& e) {
        if (debug_level() >= 3) log_line(cat("beam: ", name, " [", list_text(lists[i]), "] does not load: ", e.what()));
      }
    }
    auto collect = [&] {
      for (const Timed& c : timed)
        if (std::isfinite(c.seconds)) times[c.list] = c.seconds;
      return times;
    };
    for (int run = 0; run < kTimedRuns; ++run) {
      std::vector<size_t> order(timed.size());
      std::iota(order.begin(), order.end(), size_t{0});
      if (run % 2 == 1) std::reverse(order.begin(), order.end());  // the first pass in list order
      for (size_t k : order) {
        Timed& c = timed[k];
        if (!c.alive) continue;
        const ProgramSpec& spec = built[c.list].spec;
        if (run == 0) scratch.reset();  // the checked run: outputs poisoned first
        if (launch_observer_for_tests) launch_observer_for_tests(c.list, run);
        Run r = launch(c.program, spec.lir.global, spec.lir.local, spec.var_names.size(), timeout(best));
        if (r.late) {
          log_line(cat("beam: ", name, " [", list_text(lists[c.list]), "] ran past ", timeout(best), " s and is dropped",
                       r.lost ? "; it still runs, so the search of this kernel stops" : ""));
          c.alive = false;  // (its earlier runs' time stands)
          if (r.lost) {
            scratch.abandon();
            return collect();
          }
          continue;
        }
        if (!r.seconds) {
          c.alive = false;
          continue;
        }
        c.seconds = std::min(c.seconds, *r.seconds);
        if (run == 0) {
          std::vector<std::string> out = scratch.outputs();
          if (!reference) reference = out;
          else if (std::string why = scratch.compare(*reference, out); !why.empty())
            fail(ErrorCode::internal, "beam search of kernel ", name, " on ", dev->name(), ": the actions [", list_text(lists[c.list]),
                 "] compute another result than the first candidate (", why, "); please report this kernel (KILN_DEBUG=3)");
          if (c.seconds > kDropFactor * best) c.alive = false;  // timed once: far slower than the best
        }
        best = std::min(best, c.seconds);
      }
    }
    return collect();
  }
};

Key128 cache_key(Device& dev, const UOp& ast, const Target& t, int width) {
  return Fingerprint()
      .str("kiln-beam-2")  // (bumped where the steps before the actions renumber axes: merged axes)
      .key(ast.key())
      .str(dev.name())
      .str(dev.backend())
      .str(dev.plugin_version())
      .str(dev.compiler_cache_key())
      .u64(t.flags)
      .u64(t.threads)
      .u64(t.max_vector_width)
      .u64(t.l1d_bytes)
      .u64(t.l2_bytes)
      .u64(t.vector_registers)
      .u64(t.fma_pipes)
      .u64(t.ops[0])
      .u64(t.ops[1])
      .i64(width)
      .finish();
}

// The list an entry holds, if it is intact and applies to the kernel.
// An entry's list, checked against `kernel` (the kernel as the optimiser sees it) when one is
// given: without, the caller applies the list and a list that does not apply is its to report.
std::optional<std::vector<Opt>> read_entry(const std::string& path, const UOp* kernel, const Target& target, SearchResult& res) {
  std::string text;
  bool corrupt = false;
  if (!read_compile_cache_entry(path, text, corrupt)) {
    if (corrupt && debug_level() >= 1) log_line(cat("beam cache: ", path, " is corrupt; searching again"));
    return std::nullopt;
  }
  try {
    size_t at = text.find("opts:");
    if (at == std::string::npos) fail(ErrorCode::data_loss, "no opts line");
    std::string line = text.substr(at + 5, text.find('\n', at) - at - 5);
    std::vector<Opt> opts = line.find_first_not_of(' ') == std::string::npos ? std::vector<Opt>{} : parse_opts(line);
    if (kernel) apply_opts(*kernel, opts, target);  // (throws if it does not apply)
    auto number = [&](const char* field) {
      size_t s = text.find(field);
      return s == std::string::npos ? 0.0 : std::atof(text.c_str() + s + std::strlen(field));
    };
    res.seconds = number("\nseconds:");
    res.heuristic = number("\nheuristic:");
    res.too_noisy = number("\ntoo_noisy:") != 0;
    return opts;
  } catch (const Error& e) {
    if (debug_level() >= 1) log_line(cat("beam cache: ", path, " does not hold an action list for this kernel (", e.what(), "); searching again"));
    return std::nullopt;
  }
}

void notify(const BeamReport& r) {
  if (debug_level() >= 1) {
    const SearchResult& s = r.result;
    log_line(r.from_cache ? cat("beam: ", r.kernel, " on ", r.device, ": cached [", list_text(s.opts), "] ", s.seconds * 1e3, " ms",
                                s.too_noisy ? " (the heuristic's plan: the search that stored it found the machine too noisy to decide; "
                                              "KILN_BEAM_CACHE=0 searches again)"
                                            : "")
                          : cat("beam: ", r.kernel, " on ", r.device, ": heuristic ", s.heuristic * 1e3, " ms -> ", s.seconds * 1e3,
                                " ms [", list_text(s.opts), "], ", s.timed, " candidates in ", s.rounds, " rounds, ",
                                s.search_seconds, " s",
                                s.too_noisy ? cat("; too noisy to decide (the final's time ratios spread ", s.noise * 100,
                                                  "%): kept the heuristic's plan")
                                            : std::string()));
  }
  std::lock_guard<std::mutex> lock(observer_mu);
  if (observer) observer(r);
}

std::string kernel_name(const UOp& ast) {
  return ast.op() == Ops::SINK && std::holds_alternative<std::string>(ast.arg()) ? ast.arg_string() : "kernel";
}

std::string entry_path(Device& dev, const UOp& ast, const Target& target, int width) {
  const std::string dir = beam_cache_dir();
  return dir.empty() ? "" : dir + "/" + cache_key(dev, ast, target, width).hex() + ".opts";
}

// The cache's list for `ast` (checked against `kernel` when given), reported as a hit.
std::optional<std::vector<Opt>> cache_hit(const std::shared_ptr<Device>& dev, const UOp& ast, const UOp* kernel, const Target& target,
                                          int width, BeamReport* report) {
  const std::string path = entry_path(*dev, ast, target, width);
  if (path.empty() || knob(Knob::beam_cache) == 0) return std::nullopt;
  BeamReport r;
  r.kernel = kernel_name(ast);
  r.device = dev->name();
  std::optional<std::vector<Opt>> hit = read_entry(path, kernel, target, r.result);
  if (!hit) return std::nullopt;
  r.result.opts = *hit;
  r.from_cache = true;
  notify(r);
  if (report) *report = r;
  return hit;
}

}  // namespace

std::optional<std::vector<Opt>> beam_cached_opts(const std::shared_ptr<Device>& dev, const UOp& ast, const Target& target, int width) {
  std::vector<Param> params;
  if (width <= 0 || !params_of(ast, params)) return std::nullopt;
  return cache_hit(dev, ast, nullptr, target, width, nullptr);
}

std::optional<std::vector<Opt>> beam_opts(const std::shared_ptr<Device>& dev, const UOp& ast, const Target& target, int width,
                                          BeamReport* report) {
  std::vector<Param> params;
  if (width <= 0 || !params_of(ast, params)) return std::nullopt;
  const UOp kernel = kernel_for_opts(ast, target);
  if (std::optional<std::vector<Opt>> hit = cache_hit(dev, ast, &kernel, target, width, report)) return hit;
  BeamReport r;
  r.kernel = kernel_name(ast);
  r.device = dev->name();
  const std::string dir = beam_cache_dir();
  const std::string path = entry_path(*dev, ast, target, width);
  std::lock_guard<std::mutex> lock(search_mu);
  Scratch scratch(dev, params);
  const std::vector<Opt> heuristic = to_program(ast, target).opts;
  SearchLimits limits;
  {
    std::lock_guard<std::mutex> guard(observer_mu);
    limits = limits_override;
  }
  limits.width = width;
  // A search takes seconds to minutes a kernel: without a progress callback of the caller's (kiln
  // beam's), a terminal still sees which kernel is searched and how far it got.
  static const bool tty = isatty(STDERR_FILENO);
  bool printed = false;
  limits.on_round = [&](int round, double best) {
    std::lock_guard<std::mutex> lock(observer_mu);
    if (progress) {
      progress(r.kernel, round, best);
    } else if (tty) {
      std::fprintf(stderr, "\033[Kkiln: KILN_BEAM=%d: searching %s, round %d, best %.4f ms\r", width, r.kernel.c_str(), round, best * 1e3);
      printed = true;
    }
  };
  r.result = beam_search(kernel, target, heuristic, limits, DeviceTimer{dev, ast, target, scratch, r.kernel, std::nullopt});
  if (printed) std::fprintf(stderr, "\033[K");
  if (!path.empty() && r.result.seconds > 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!write_compile_cache_entry(path, cat("kiln beam search\nkernel: ", r.kernel, "\nopts: ", opts_text(r.result.opts),
                                             "\nseconds: ", r.result.seconds, "\nheuristic: ", r.result.heuristic, "\nwidth: ", width,
                                             r.result.too_noisy ? "\ntoo_noisy: 1" : "", "\n")))
      warn_unwritable_cache(dir, knob(TextKnob::beam_dir).empty() ? "KILN_BEAM_DIR (or KILN_CACHE_DIR)" : "KILN_BEAM_DIR",
                            ec ? ec.message() : "writing an entry failed");
  }
  notify(r);
  if (report) *report = r;
  return r.result.opts;
}

std::string beam_cache_dir() {
  std::string d = knob(TextKnob::beam_dir);
  if (!d.empty()) return d == "off" ? "" : d;
  d = compile_cache_dir();
  return d.empty() ? "" : d + "/beam";
}

void set_beam_progress(std::function<void(const std::string&, int, double)> f) {
  std::lock_guard<std::mutex> lock(observer_mu);
  progress = std::move(f);
}

void set_beam_observer(std::function<void(const BeamReport&)> f) {
  std::lock_guard<std::mutex> lock(observer_mu);
  observer = std::move(f);
}

void set_beam_limits(const SearchLimits& limits) {
  std::lock_guard<std::mutex> lock(observer_mu);
  limits_override = limits;
}

void set_beam_timeout(double seconds) { timeout_override.store(seconds); }

void set_beam_skip_launches(bool skip) { skip_launches.store(skip); }

void set_beam_launch_observer(std::function<void(size_t candidate, int run)> observer) {
  std::lock_guard<std::mutex> lock(search_mu);  // not while a search launches
  launch_observer_for_tests = std::move(observer);
}

}  // namespace kiln::runtime
