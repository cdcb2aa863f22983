// runtime/program_cache.cpp - lowering, rendering, compiling and launching device kernels.
#include "runtime/program_cache.hpp"

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "codegen/lir.hpp"
#include "ir/traverse.hpp"
#include "kiln/profile.hpp"
#include "plugin/device.hpp"
#include "runtime/buffer.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/runtime.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "symbolic/interpret.hpp"

namespace kiln::runtime {

namespace {

struct CacheKey {
  Key128 ast;
  std::string device;
  int64_t noopt;
  bool operator<(const CacheKey& o) const {
    if (!(ast == o.ast)) return ast < o.ast;
    if (device != o.device) return device < o.device;
    return noopt < o.noopt;
  }
};

struct Cache {
  std::mutex mu;
  std::map<CacheKey, std::shared_future<std::shared_ptr<Kernel>>> map;
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

// The plugin's renderer turns the LIR into source in the target's format.
std::string do_render(Device& dev, const kiln_lir& lir) {
  if (!dev.has_renderer())
    fail(ErrorCode::unimplemented, "device ", dev.name(), " has no renderer, so kiln cannot generate kernels for it");
  return dev.render(lir);
}

// The plugin's compiler, behind the compile cache (memory, then disk, keyed by the LIR's
// fingerprint and the compiler's own cache key).
std::string do_compile(Device& dev, const std::string& source, const std::string& name, const kiln_lir& lir) {
  return compile_cached(dev, source, name, lir_key(lir));
}

// to_program (codegen) -> do_render -> do_compile -> load: one kernel ready to launch.
std::shared_ptr<Kernel> build(const std::shared_ptr<Device>& dev, const UOp& ast) {
  auto k = std::make_shared<Kernel>();
  k->device = dev;
  auto t = std::chrono::steady_clock::now();
  k->spec = to_program(ast, dev->target());
  double codegen_ms = ms_since(t);
  kiln_lir lir = k->spec.lir.view();
  if (debug_level() >= 5) log_line(lir_text(lir));
  try {
    k->source = do_render(*dev, lir);
    double render_ms = ms_since(t);
    if (debug_level() >= 4) log_line(k->source);
    uint64_t compiles = compile_stats().compiles;
    std::string binary = do_compile(*dev, k->source, k->spec.name, lir);
    double compile_ms = ms_since(t);
    k->program = dev->load(binary, k->spec.name);
    if (debug_level() >= 2)
      log_line(cat(dev->name(), "  built ", k->spec.name, ": codegen ", codegen_ms, " ms, render ", render_ms, " ms, ",
                   compile_stats().compiles > compiles ? "compile " : "cached binary ", compile_ms, " ms, load ",
                   ms_since(t), " ms"));
  } catch (const Error& e) {
    fail(e.code(), "kernel ", k->spec.name, " on ", dev->name(), ": ", e.what());
  }
  return k;
}

int64_t eval_dim(const UOp& d, const ExecItem& e) {
  if (d.is_const()) return d.arg_int();
  Assignment a;
  for (const UOp& u : toposort(d))
    if (u.op() == Ops::DEFINE_VAR) {
      const std::string& n = std::get<NamedInts>(u.arg()).name;
      for (const auto& [name, v] : e.var_vals)
        if (name == n) a.push_back({u, Value{v}});
    }
  auto v = interpret(d, a);
  KILN_CHECK(v, "launch size of kernel ", e.name, " is undefined");
  return as_int(*v);
}

}  // namespace

std::shared_ptr<Kernel> get_kernel(const std::shared_ptr<Device>& dev, const UOp& ast) {
  CacheKey key{ast.key(), dev->name(), knob(Knob::noopt)};
  std::promise<std::shared_ptr<Kernel>> mine;
  std::shared_future<std::shared_ptr<Kernel>> fut;
  bool builder = false;
  {
    std::lock_guard<std::mutex> lock(cache().mu);
    auto it = cache().map.find(key);
    if (it != cache().map.end()) {
      fut = it->second;
    } else {
      fut = mine.get_future().share();
      cache().map.emplace(key, fut);
      builder = true;
    }
  }
  if (builder) {
    try {
      mine.set_value(build(dev, ast));
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(cache().mu);
        cache().map.erase(key);  // a failed build is retried next time
      }
      mine.set_exception(std::current_exception());
    }
  }
  return fut.get();
}

void prepare_kernels(const std::vector<ExecItem>& items) {
  std::vector<const ExecItem*> todo;
  for (const ExecItem& e : items)
    if (!e.is_copy && e.device != kRefDevice) todo.push_back(&e);
  if (todo.size() < 2) return;
  unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(todo.size())));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  std::exception_ptr first_error;
  std::mutex err_mu;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        try {
          get_kernel(open_device(todo[i]->device), todo[i]->ast);
        } catch (...) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (!first_error) first_error = std::current_exception();
        }
      }
    });
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

void run_device_kernel(const ExecItem& e) {
  std::shared_ptr<Device> dev = open_device(e.device);
  std::shared_ptr<Kernel> k = get_kernel(dev, e.ast);
  kiln_buffer* bufs[64];
  KILN_CHECK(e.buffers.size() <= 64, "kernel ", e.name, " has more than 64 buffers");
  for (size_t i = 0; i < e.buffers.size(); ++i) bufs[i] = storage_of(e.buffers[i])->device_buffer();
  int64_t vals[16];
  KILN_CHECK(k->spec.var_names.size() <= 16, "kernel ", e.name, " has more than 16 variables");
  for (size_t i = 0; i < k->spec.var_names.size(); ++i) {
    bool found = false;
    for (const auto& [name, v] : e.var_vals)
      if (name == k->spec.var_names[i]) vals[i] = v, found = true;
    if (!found) fail(ErrorCode::invalid_argument, "kernel ", e.name, " needs a value for variable '", k->spec.var_names[i], "'");
  }
  uint32_t global[3], local[3];
  const Target& target = dev->target();
  for (int d = 0; d < 3; ++d) {
    int64_t g = eval_dim(k->spec.dims.global[d], e), l = eval_dim(k->spec.dims.local[d], e);
    check_launch_size(target, e.name, d, g, l);
    global[d] = static_cast<uint32_t>(g);
    local[d] = static_cast<uint32_t>(l);
  }
  bool profiled = Profile::active(), timed = profiled || debug_level() >= 2;
  auto t0 = std::chrono::steady_clock::now();
  double s = dev->launch(*k->program, std::span<kiln_buffer* const>(bufs, e.buffers.size()), {},
                         std::span<const int64_t>(vals, k->spec.var_names.size()), global, local, timed);
  if (!timed) return;
  if (s <= 0) s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  KernelRun run{k->spec.name, dev->name(), {global[0], global[1], global[2]}, {local[0], local[1], local[2]}, s,
                k->spec.flops, k->spec.bytes};
  if (profiled) Profile::record(run);
  if (debug_level() >= 2)
    log_line(cat(dev->name(), "  ", run.name, "  global=(", global[0], ",", global[1], ",", global[2], ") local=(", local[0],
                 ",", local[1], ",", local[2], ")  ", s * 1e3, " ms  ", run.flops / s * 1e-9, " GFLOP/s  ",
                 run.bytes / s * 1e-9, " GB/s"));
}

size_t program_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().map.size();
}

void clear_program_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().map.clear();
}

}  // namespace kiln::runtime
