// runtime/program_cache.cpp - lowering, rendering, compiling and loading device kernels (prepared.cpp launches them).
#include "runtime/program_cache.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "codegen/lir.hpp"
#include "plugin/device.hpp"
#include "runtime/beam.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/device_alloc.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "schedule/schedule.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/lru_map.hpp"
#include "support/parallel.hpp"
#include "support/trace.hpp"

namespace kiln::runtime {

namespace {

struct CacheKey {
  Key128 ast;
  std::string device;
  int64_t noopt;
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return Key128Hash()(k.ast) ^ (std::hash<std::string>()(k.device) * 31) ^ static_cast<size_t>(k.noopt);
  }
};

// Kernels being built or built, the least recently used dropped past KILN_CACHE_ENTRIES (a
// dropped kernel stays loaded while a launch holds it).
// An entry is a slot object so a failed build can remove its own entry and nothing else: by then
// the key may have been evicted and claimed again by another build.
using Slot = std::shared_ptr<const std::shared_future<std::shared_ptr<Kernel>>>;
struct Cache {
  std::mutex mu;
  LruMap<CacheKey, Slot, CacheKeyHash> map;

  void erase_own(const CacheKey& key, const Slot& slot) {
    std::lock_guard<std::mutex> lock(mu);
    if (const Slot* s = map.find(key); s && *s == slot) map.erase(key);
  }
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: programs outlive static destruction order
  return *c;
}

double ms_since(std::chrono::steady_clock::time_point& t) {
  auto now = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(now - t).count();
  t = now;
  return ms;
}

// The plugin's renderer turns the LIR into source in the target's format: the last step of the
// pass list, traced as the others are (KILN_DEBUG=6 its time, 7 the source).
std::string do_render(Device& dev, const kiln_lir& lir) {
  if (!dev.has_renderer())
    fail(ErrorCode::unimplemented, "device ", dev.name(), " has no renderer, so kiln cannot generate kernels for it");
  StepScope step("render", [&] { return cat(lir.n_insts, " LIR instructions"); });
  std::string source = dev.render(lir);
  step.finish([&] { return cat(source.size(), " bytes of source"); }, [&] { return source; });
  return source;
}

// The plugin's compiler, behind the compile cache (memory, then disk, keyed by the LIR's
// fingerprint and the compiler's own cache key); traced as a step.
std::string do_compile(Device& dev, const std::string& source, const std::string& name, const kiln_lir& lir) {
  StepScope step("compile", [&] { return cat(source.size(), " bytes of source"); });
  std::string binary = compile_cached(dev, source, name, lir_key(lir));
  step.finish([&] { return cat(binary.size(), " bytes of binary"); }, [] { return std::string(); });
  return binary;
}

// A kernel AST's name (the scheduler names every kernel's SINK), for the trace.
std::string kernel_name(const UOp& ast) {
  return std::holds_alternative<std::string>(ast.arg()) ? ast.arg_string() : std::string("kernel");
}

// A kernel on its way: lowered and rendered, not yet compiled and loaded.
struct Pending {
  std::shared_ptr<Kernel> k;
  double codegen_ms = 0, render_ms = 0;
};

// Errors of the plugin's steps name the kernel and the device.
template <typename F>
auto naming(const Kernel& k, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    fail(e.code(), "kernel ", k.spec.name, " on ", k.device->name(), ": ", e.what());
  }
}

// set_build_observer's function, read under its own lock (a copy is called outside it)
std::mutex observer_mu;
std::shared_ptr<const std::function<void(const BuildProgress&)>> observer;

void report_built(const Kernel& k, size_t done, size_t total, bool compiled) {
  std::shared_ptr<const std::function<void(const BuildProgress&)>> f;
  {
    std::lock_guard<std::mutex> lock(observer_mu);
    f = observer;
  }
  if (f) (*f)(BuildProgress{done, total, k.spec.name, k.device->name(), compiled});
}

// set_target_override's target (tests); null: each device's own
std::atomic<const Target*> target_override{nullptr};
std::atomic<uint64_t> generation{0};  // program_cache_generation
// set_opts_override's chooser (tests), read under its own lock
std::mutex opts_override_mu;
OptsOverride opts_override;

// to_program (codegen) -> do_render
Pending lower(const std::shared_ptr<Device>& dev, const UOp& ast) {
  Pending p;
  p.k = std::make_shared<Kernel>();
  Kernel& k = *p.k;
  k.device = dev;
  auto t = std::chrono::steady_clock::now();
  const Target* simulated = target_override.load();
  try {
    const Target& target = simulated ? *simulated : dev->target();
    std::optional<std::vector<Opt>> given;
    {
      std::lock_guard<std::mutex> lock(opts_override_mu);
      if (opts_override) given = opts_override(ast, target);
    }
    // KILN_BEAM=N: the searched list (from the search cache, or a search now). A cached list is
    // checked by the lowering itself; one that does not apply is searched for again.
    const int width = knob(Knob::noopt) == 0 ? static_cast<int>(knob(Knob::beam)) : 0;
    const bool cached = !given && width > 0 && (given = beam_cached_opts(dev, ast, target, width));
    if (!given && width > 0) given = beam_opts(dev, ast, target, width);
    trace::Span span("codegen", [&] { return cat("codegen ", kernel_name(ast)); });
    try {
      k.spec = to_program(ast, target, given ? &*given : nullptr);
    } catch (const Error& e) {
      if (!cached) throw;
      if (debug_level() >= 1) log_line(cat("beam cache: the entry for ", dev->name(), " does not apply (", e.what(), "); searching again"));
      given = beam_opts(dev, ast, target, width);
      k.spec = to_program(ast, target, given ? &*given : nullptr);
    }
  } catch (const Error& e) {  // e.g. an op the target lacks and kiln cannot decompose: say which device
    fail(e.code(), dev->name(), ": ", e.what());
  }
  p.codegen_ms = ms_since(t);
  kiln_lir lir = k.spec.lir.view();
  if (debug_level() >= 5) log_line(lir_text(lir));
  k.source = naming(k, [&] { return do_render(*dev, lir); });
  p.render_ms = ms_since(t);
  if (debug_level() >= 4) log_line(k.source);
  return p;
}

// -> load: ready to launch
std::shared_ptr<Kernel> finish(Pending& p, const std::string& binary, bool compiled, double compile_ms) {
  Kernel& k = *p.k;
  auto t = std::chrono::steady_clock::now();
  trace::Span span("load", [&] { return cat("load ", k.spec.name); });
  k.program = naming(k, [&] {
    try {
      return k.device->load(binary, k.spec.name);
    } catch (const Error& e) {
      // The binary may be a cache entry that is intact but does not load (written by another
      // driver state): it is rebuilt and its entry overwritten, as a corrupt one is. A binary
      // that was just compiled fails again, and that error is the one reported.
      if (debug_level() >= 1) log_line(cat("compile cache: ", k.spec.name, " did not load (", e.what(), "); rebuilding it"));
      std::string fresh = recompile(*k.device, {k.source, k.spec.name, lir_key(k.spec.lir.view())});
      return k.device->load(fresh, k.spec.name);
    }
  });
  if (debug_level() >= 2)
    log_line(cat(k.device->name(), "  built ", k.spec.name, ": codegen ", p.codegen_ms, " ms, render ", p.render_ms, " ms, ",
                 compiled ? "compile " : "cached binary ", compile_ms, " ms, load ", ms_since(t), " ms; actions: ",
                 k.spec.opts.empty() ? "(none)" : opts_text(k.spec.opts)));
  return p.k;
}

std::shared_ptr<Kernel> build(const std::shared_ptr<Device>& dev, const UOp& ast) {
  Pending p = lower(dev, ast);
  auto t = std::chrono::steady_clock::now();
  uint64_t compiles = compile_stats().compiles;
  std::string binary = naming(*p.k, [&] { return do_compile(*dev, p.k->source, p.k->spec.name, p.k->spec.lir.view()); });
  const bool compiled = compile_stats().compiles > compiles;
  report_built(*p.k, 1, 1, compiled);
  return finish(p, binary, compiled, ms_since(t));
}

}  // namespace

std::shared_ptr<Kernel> get_kernel(const std::shared_ptr<Device>& dev, const UOp& ast) {
  CacheKey key{ast.key(), dev->name(), knob(Knob::noopt)};
  std::promise<std::shared_ptr<Kernel>> mine;
  Slot slot;
  bool builder = false;
  {
    std::lock_guard<std::mutex> lock(cache().mu);
    if (auto* hit = cache().map.find(key)) {
      slot = *hit;
    } else {
      slot = std::make_shared<const std::shared_future<std::shared_ptr<Kernel>>>(mine.get_future().share());
      cache().map.put(key, slot, cache_entries());
      builder = true;
    }
  }
  if (builder) {
    try {
      mine.set_value(build(dev, ast));
    } catch (...) {
      cache().erase_own(key, slot);  // a failed build is retried next time
      mine.set_exception(std::current_exception());
    }
  }
  return slot->get();
}

void build_kernels(const std::vector<std::pair<std::shared_ptr<Device>, UOp>>& kernels) {
  // Claim the kernels nobody has built or is building (get_kernel waits on these claims).
  struct Claim {
    std::shared_ptr<Device> dev;
    UOp ast;
    CacheKey key;
    std::promise<std::shared_ptr<Kernel>> promise;
    Slot slot;
    Pending pending;
    std::string binary;
    bool compiled = false;
    double compile_ms = 0;
    std::exception_ptr error;
  };
  std::vector<std::unique_ptr<Claim>> claims;
  for (const auto& [dev, ast] : kernels) {
    auto c = std::make_unique<Claim>();
    c->dev = dev;
    c->key = {ast.key(), c->dev->name(), knob(Knob::noopt)};
    std::lock_guard<std::mutex> lock(cache().mu);
    if (cache().map.contains(c->key)) continue;
    c->slot = std::make_shared<const std::shared_future<std::shared_ptr<Kernel>>>(c->promise.get_future().share());
    cache().map.put(c->key, c->slot, cache_entries());
    c->ast = ast;
    claims.push_back(std::move(c));
  }
  if (claims.empty()) return;
  auto failed = [](Claim& c) { c.error = std::current_exception(); };
  std::atomic<size_t> done{0};  // binaries ready, for set_build_observer
  // codegen and rendering in parallel
  parallel_for(claims.size(), [&](size_t i) {
    try {
      claims[i]->pending = lower(claims[i]->dev, claims[i]->ast);
    } catch (...) {
      failed(*claims[i]);
    }
  });
  // Compiling: a device that builds many kernels at once gets them all in one call (one fixed
  // cost per schedule, not per kernel); the others compile in parallel, kernel by kernel.
  std::vector<Claim*> alone;
  std::map<Device*, std::vector<Claim*>> together;
  for (auto& c : claims)
    if (!c->error) (c->dev->has_compile_many() ? together[c->dev.get()] : alone).push_back(c.get());
  for (auto& [dev, group] : together) {
    std::vector<CompileJob> jobs;
    for (Claim* c : group) jobs.push_back({c->pending.k->source, c->pending.k->spec.name, lir_key(c->pending.k->spec.lir.view())});
    trace::Span span("compile", [&] { return cat("compile ", jobs.size(), " kernels on ", dev->name(), " at once"); });
    auto t = std::chrono::steady_clock::now();
    uint64_t compiles = compile_stats().compiles;
    try {
      std::vector<std::string> binaries = compile_cached_many(*dev, jobs);  // its errors name the kernel
      double ms = ms_since(t);
      bool compiled = compile_stats().compiles > compiles;
      for (size_t i = 0; i < group.size(); ++i) {
        group[i]->binary = std::move(binaries[i]);
        group[i]->compiled = compiled;
        group[i]->compile_ms = ms;
        report_built(*group[i]->pending.k, ++done, claims.size(), compiled);
      }
    } catch (...) {
      for (Claim* c : group) failed(*c);
    }
  }
  parallel_for(alone.size(), [&](size_t i) {
    Claim& c = *alone[i];
    try {
      auto t = std::chrono::steady_clock::now();
      uint64_t compiles = compile_stats().compiles;
      const Kernel& k = *c.pending.k;
      c.binary = naming(k, [&] { return do_compile(*c.dev, k.source, k.spec.name, k.spec.lir.view()); });
      c.compiled = compile_stats().compiles > compiles;
      c.compile_ms = ms_since(t);
      report_built(k, ++done, claims.size(), c.compiled);
    } catch (...) {
      failed(c);
    }
  });
  // loading, then every claim is settled: a failed one leaves the cache (retried next time)
  std::exception_ptr first_error;
  for (auto& c : claims) {
    if (!c->error) {
      try {
        c->promise.set_value(finish(c->pending, c->binary, c->compiled, c->compile_ms));
        continue;
      } catch (...) {
        failed(*c);
      }
    }
    cache().erase_own(c->key, c->slot);
    c->promise.set_exception(c->error);
    if (!first_error) first_error = c->error;
  }
  if (first_error) std::rethrow_exception(first_error);
}

void set_build_observer(std::function<void(const BuildProgress&)> f) {
  std::lock_guard<std::mutex> lock(observer_mu);
  observer = f ? std::make_shared<const std::function<void(const BuildProgress&)>>(std::move(f)) : nullptr;
}

void set_target_override(const Target* target) {
  target_override.store(target);
  clear_program_cache();
  clear_schedule_cache();  // row fusion follows the target
}

void set_opts_override(OptsOverride chooser) {
  {
    std::lock_guard<std::mutex> lock(opts_override_mu);
    opts_override = std::move(chooser);
  }
  clear_program_cache();
}

size_t program_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().map.size();
}

void clear_program_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().map.clear();
  ++generation;
}

uint64_t program_cache_generation() { return generation.load(std::memory_order_acquire); }

bool runs_rows(const std::string& device) {
  const Target* simulated = target_override.load();
  try {
    const Target& t = simulated ? *simulated : open_device(device)->target();
    return t.runs_rows();
  } catch (const Error&) {
    return false;
  }
}

}  // namespace kiln::runtime
