// bench/workloads.cpp - the eight workloads of the default set, the set registry and the timing loop.
#include "workloads.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "kiln/jit.hpp"
#include "plugin/device.hpp"
#include "runtime/buffer.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/schedule.hpp"
#include "sets.hpp"
#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln::bench {

const char* unit(Roof roof) { return roof == Roof::fma ? "GFLOPS" : "GB/s"; }

namespace {

}  // namespace

Workload elementwise(const std::string& name, int64_t n) {
  return {name, Roof::copy, 2.0 * double(n) * 4,
          [n](const std::string& d) { return std::vector<Tensor>{Tensor::rand({n}, dtypes::float32, d)}; },
          [](const std::vector<Tensor>& in) { return ((in[0] + 1) * 2).relu(); },
          [](const Host& h) {
            std::vector<double> out(h[0].size());
            for (size_t i = 0; i < out.size(); i++) out[i] = std::max((double(h[0][i]) + 1) * 2, 0.0);
            return out;
          },
          {},
          [](const std::vector<Tensor>& in) { return ((in[0] + 1) * 2).relu(); }};
}

Workload sum(const std::string& name, int64_t n) {
  return {name, Roof::read, double(n) * 4,
          [n](const std::string& d) { return std::vector<Tensor>{Tensor::rand({n}, dtypes::float32, d)}; },
          [](const std::vector<Tensor>& in) { return in[0].sum(); },
          [](const Host& h) {
            double s = 0;
            for (float v : h[0]) s += v;
            return std::vector<double>{s};
          },
          {},
          [](const std::vector<Tensor>& in) { return in[0].cast(dtypes::float32).sum(); }};
}

Workload softmax(const std::string& name, int64_t rows) {
  constexpr int64_t cols = 1024;
  return {name, Roof::copy, 2.0 * double(rows) * cols * 4,
          [rows](const std::string& d) { return std::vector<Tensor>{Tensor::randn({rows, cols}, dtypes::float32, d)}; },
          [](const std::vector<Tensor>& in) { return in[0].softmax(-1); },
          [rows](const Host& h) { return ref::softmax_rows(ref::widen(h[0]), rows, cols); },
          {},
          [](const std::vector<Tensor>& in) { return in[0].softmax(-1); }};
}

namespace {

// 784-512-512-10, batch 256, relu; weights initialised like nn.Linear (uniform +-1/sqrt(in)).
Workload mlp() {
  constexpr int64_t batch = 256, d0 = 784, d1 = 512, d2 = 512, d3 = 10;
  return {"mlp", Roof::fma, 2.0 * batch * (d0 * d1 + d1 * d2 + d2 * d3),
          [](const std::string& d) {
            auto layer = [&](int64_t in, int64_t out) {
              double bound = 1.0 / std::sqrt(double(in));
              return std::pair{centered({out, in}, d) * (2 * bound), centered({out}, d) * (2 * bound)};
            };
            auto [w1, b1] = layer(d0, d1);
            auto [w2, b2] = layer(d1, d2);
            auto [w3, b3] = layer(d2, d3);
            return std::vector<Tensor>{Tensor::rand({batch, d0}, dtypes::float32, d), w1, b1, w2, b2, w3, b3};
          },
          [](const std::vector<Tensor>& in) {
            Tensor h = in[0].linear(in[1], in[2]).relu();
            h = h.linear(in[3], in[4]).relu();
            return h.linear(in[5], in[6]);
          },
          [](const Host& h) {
            std::vector<double> x = ref::linear(ref::widen(h[0]), h[1], h[2], batch, d0, d1, true);
            x = ref::linear(x, h[3], h[4], batch, d1, d2, true);
            return ref::linear(x, h[5], h[6], batch, d2, d3, false);
          }};
}

// 8x32x64x64 input, 64 filters 3x3, padding 1.
Workload conv2d() {
  return conv2d_workload("conv2d", {.batch = 8, .channels = 32, .height = 64, .width = 64, .filters = 64, .kernel = 3, .pad = 1});
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

const std::vector<WorkloadSet>& workload_sets() {
  static const std::vector<WorkloadSet> sets = {
      {"default", "the eight peer workloads of ../shared/bench/tinygrad_bench.py",
       {elementwise("elementwise", 16 * M), sum("sum", 16 * M), square_matmul(256), square_matmul(512), square_matmul(1024),
        softmax("softmax", 4096), mlp(), conv2d()},
       false},
      {"sizes", "matmul n x n x n over sizes that divide nothing and powers of two", sizes_set(), true},
      {"extra", "workloads outside the eight: layouts, normalisation, attention, convolutions, odd sizes", extra_set(),
       false},
      {"gpu", "a GPU's sizes: memory-bound work 8x the default's (past a 60 MB L2), matmul 4096", gpu_set(), false},
  };
  return sets;
}

std::optional<Workload> in_dtype(const Workload& w, DType d) {
  if (!w.half_fn) return std::nullopt;
  Workload h = w;
  h.name = w.name + " " + d.name();
  if (w.roof != Roof::fma) h.amount = w.amount * static_cast<double>(d.itemsize()) / 4;  // the bytes moved, as float32's are 4 each
  h.inputs = [inputs = w.inputs, d](const std::string& device) {
    std::vector<Tensor> in = inputs(device);
    for (Tensor& t : in) t = t.cast(d);
    return in;
  };
  h.fn = w.half_fn;
  return h;
}

double tolerance_for(DType d, double float32_tolerance) {
  if (d == dtypes::float16) return 8 * 0x1p-10;
  if (d == dtypes::bfloat16) return 8 * 0x1p-7;
  return float32_tolerance;
}

const WorkloadSet* find_set(const std::string& name) {
  for (const WorkloadSet& s : workload_sets())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<const Workload*> all_workloads() {
  std::vector<const Workload*> out;
  for (const WorkloadSet& s : workload_sets())
    for (const Workload& w : s.workloads)
      if (std::none_of(out.begin(), out.end(), [&](const Workload* o) { return o->name == w.name; })) out.push_back(&w);
  return out;
}

const std::vector<Workload>& workloads() { return workload_sets().front().workloads; }

namespace {

// A private, empty compile cache directory per first call (removed at the end).
class FreshCacheDirs {
 public:
  FreshCacheDirs() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) fail(ErrorCode::internal, "kiln bench: cannot create a temporary directory from ", tmpl);
    root_ = tmpl;
  }
  ~FreshCacheDirs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  void use_next() { setenv("KILN_CACHE_DIR", (root_ / std::to_string(n_++)).c_str(), 1); }

 private:
  std::filesystem::path root_;
  int n_ = 0;
};

// The output first, then what the workload also writes.
std::vector<Tensor> outputs(const Workload& w, const std::vector<Tensor>& in) {
  std::vector<Tensor> out{w.fn(in)};
  if (w.writes)
    for (Tensor& t : w.writes(in)) out.push_back(t);
  return out;
}

void realize_outputs(const Workload& w, const std::vector<Tensor>& in) {
  std::vector<Tensor> out = outputs(w, in);
  Tensor::realize_all(out);
}

}  // namespace

Result run(const Workload& w, const std::string& device, const Options& options) {
  auto dev = runtime::open_device(device);
  Result r{.name = w.name, .unit = unit(w.roof)};
  std::optional<FreshCacheDirs> dirs;
  if (options.fresh_cache) dirs.emplace();
  std::vector<Tensor> inputs;
  std::optional<Tensor> out;
  std::vector<double> firsts;
  for (int run = 0; run < std::max(1, options.first_runs); ++run) {
    // As in a fresh process: no memory recycled from earlier runs, nothing scheduled or compiled.
    // The inputs are made (and their kernels compiled) before the caches are emptied once more,
    // so `first` compiles every kernel of the workload itself.
    out.reset();
    inputs.clear();
    runtime::clear_allocation_cache();
    manual_seed(1234);
    inputs = w.inputs(device);
    for (Tensor& t : inputs) t = t.contiguous();
    Tensor::realize_all(inputs);
    dev->synchronize();
    if (dirs) dirs->use_next();
    runtime::clear_program_cache();
    runtime::clear_compile_memory_cache();
    clear_schedule_cache();
    auto start = std::chrono::steady_clock::now();
    std::vector<Tensor> all = outputs(w, inputs);
    Tensor::realize_all(all);
    out = all[0];
    dev->synchronize();
    firsts.push_back(ms_since(start));
  }
  r.first_ms = median(firsts);

  if (options.check) {
    std::vector<float> got = out->to_vector<float>();
    Host host;
    for (const Tensor& t : inputs) host.push_back(t.to_vector<float>());
    std::vector<double> want = w.reference(host);
    double scale = 1, err = got.size() == want.size() ? 0 : INFINITY;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < std::min(got.size(), want.size()); i++) {
      double e = std::fabs(double(got[i]) - want[i]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    r.checked = true;
    r.error = err / scale;
    r.ok = r.error <= options.tolerance;
  }
  out.reset();  // frees the output before the steady loop

  for (int i = 0; i < options.warmup; i++) {
    realize_outputs(w, inputs);
    dev->synchronize();
  }
  std::vector<double> steady, sched;
  for (int i = 0; i < std::max(1, options.iters); i++) {
    auto t0 = std::chrono::steady_clock::now();
    realize_outputs(w, inputs);
    dev->synchronize();
    steady.push_back(ms_since(t0));
  }
  if (options.jit) {
    Jit jit([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return outputs(w, in); });
    for (int i = 0; i < std::max(2, options.warmup); i++) jit(inputs);  // the second call captures
    std::vector<double> replays;
    for (int i = 0; i < std::max(1, options.iters); i++) {
      auto t0 = std::chrono::steady_clock::now();
      jit(inputs);
      dev->synchronize();
      replays.push_back(ms_since(t0));
    }
    r.jit_ms = median(replays);
    std::vector<float> replayed = jit(inputs)[0].to_vector<float>();
    std::vector<Tensor> eager = outputs(w, inputs);
    Tensor::realize_all(eager);
    r.jit_same = replayed == eager[0].to_vector<float>();
  }
  std::vector<double> miss;
  for (int i = 0; i < 3; i++) {  // building the graph + scheduling, schedule cache cold and warm
    clear_schedule_cache();
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> cold = outputs(w, inputs);
    (void)Tensor::schedule_all(cold);
    miss.push_back(ms_since(t0));
    if (w.writes) Tensor::realize_all(cold);  // (its assigns must not pile up on the inputs)
    t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> all = outputs(w, inputs);
    std::vector<ExecItem> items = Tensor::schedule_all(all);
    sched.push_back(ms_since(t0));
    if (w.writes) Tensor::realize_all(all);
    r.kernels = static_cast<size_t>(std::count_if(items.begin(), items.end(), [](const ExecItem& e) { return !e.is_copy; }));
  }
  r.schedule_miss_ms = median(miss);
  r.steady_ms = median(steady);
  r.schedule_ms = median(sched);
  r.rate = w.amount / (r.steady_ms * 1e-3) / 1e9;
  return r;
}

JitOverhead jit_overhead(const std::string& device) {
  auto chain = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 32; ++i) y = (y * 1.5 - 0.25).contiguous();
    return y;
  };
  Tensor x = Tensor::ones({16}, dtypes::float32, device).realize();
  Jit jit([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) { return std::vector<Tensor>{chain(in[0])}; });
  jit({x});
  jit({x});
  chain(x).realize();
  constexpr int kCalls = 200, kRounds = 5;  // a round's mean, the median round (a shared machine)
  std::vector<double> replay, eager;
  for (int round = 0; round < kRounds; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) jit({x});
    replay.push_back(ms_since(t0) * 1e3 / kCalls / 32);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) chain(x).realize();
    eager.push_back(ms_since(t0) * 1e3 / kCalls / 32);
  }
  return {median(replay), median(eager)};
}

void search(const Workload& w, const std::string& device, int width) {
  manual_seed(1234);
  std::vector<Tensor> inputs = w.inputs(device);
  for (Tensor& t : inputs) t = t.contiguous();
  Tensor::realize_all(inputs);
  const int64_t before = knob(Knob::beam);
  set_knob(Knob::beam, width);
  runtime::clear_program_cache();
  clear_schedule_cache();
  try {
    realize_outputs(w, inputs);
  } catch (...) {
    set_knob(Knob::beam, before);
    runtime::clear_program_cache();
    throw;
  }
  set_knob(Knob::beam, before);
  runtime::clear_program_cache();
  runtime::open_device(device)->synchronize();
}

}  // namespace kiln::bench
