// bench/peak.cpp - measuring the machine's roofs (see peak.hpp for what and how).
#include "peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_BENCH_X86 1
#endif

#include "runtime/compile_cache.hpp"

namespace kiln::bench {
namespace {

// Short repetitions, the best kept: on a shared machine some of them run without a neighbour.
constexpr int64_t kFmaIters = 8'000'000;  // per thread: ~20 ms of AVX-512 FMAs at 4 GHz
constexpr int kFmaReps = 10;
constexpr int64_t kArray = int64_t{16} << 20;  // floats per bandwidth array
constexpr int kReps = 8;

// Seconds of `work(thread)` run on `threads` threads from a common start: from the first worker's
// start to the last one's end, as the workers see them (the spawning thread may not get a core
// back until a worker is done, so it cannot time them).
double timed_on_threads(unsigned threads, const std::function<void(unsigned)>& work) {
  using Clock = std::chrono::steady_clock;
  std::latch ready(threads);
  std::vector<Clock::time_point> starts(threads), ends(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; t++)
    pool.emplace_back([&, t] {
      ready.arrive_and_wait();
      starts[t] = Clock::now();
      work(t);
      ends[t] = Clock::now();
    });
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                       *std::min_element(starts.begin(), starts.end()))
      .count();
}

// Each FMA loop returns a value that depends on every chain, so none is optimised away; the
// chains converge (a < 1), so no value overflows or turns denormal.
#ifdef KILN_BENCH_X86
__attribute__((target("avx512f"))) float fma_avx512(int64_t iters) {
  __m512 acc[16], a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(1e-3f);
  for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps(float(i));
  for (int64_t n = 0; n < iters; n++)
    for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  for (int i = 1; i < 16; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, acc[0]);
  return lanes[0] + lanes[15];
}
__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iters) {
  __m256 acc[12], a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(1e-3f);  // 12 + 2 of 16 ymm registers
  for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps(float(i));
  for (int64_t n = 0; n < iters; n++)
    for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  for (int i = 1; i < 12; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, acc[0]);
  return lanes[0] + lanes[7];
}
#endif
float fma_scalar(int64_t iters) {
  float acc[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int64_t n = 0; n < iters; n++)
    for (float& x : acc) x = x * 0.9999f + 1e-3f;
  return acc[0] + acc[7];
}

struct FmaLoop {
  const char* isa;
  float (*run)(int64_t);
  double flops_per_iter;
};
FmaLoop widest_fma() {
#ifdef KILN_BENCH_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", fma_avx512, 16 * 16 * 2};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", fma_avx2, 12 * 8 * 2};
#endif
  return {"scalar", fma_scalar, 8 * 2};
}

// Plain loops the compiler vectorises for the widest ISA it may pick at run time.
#if defined(KILN_BENCH_X86) && defined(__GNUC__)
#define KILN_BENCH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KILN_BENCH_CLONES
#endif
KILN_BENCH_CLONES void copy_span(const float* __restrict src, float* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = src[i] + 0.0f;  // + 0 keeps it a loop, not a memcpy call
}
KILN_BENCH_CLONES uint32_t read_span(const uint32_t* __restrict src, int64_t n) {
  uint32_t s = 0;  // integer adds reassociate, so the sum vectorises without fast-math
  for (int64_t i = 0; i < n; i++) s += src[i];
  return s;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::filesystem::path cache_file(unsigned threads) {
  std::string dir = runtime::compile_cache_dir();
  return dir.empty() ? std::filesystem::path() : std::filesystem::path(dir) / ("machine-peak-" + std::to_string(threads) + "t.txt");
}

}  // namespace

MachinePeak measure_machine_peak(unsigned threads) {
  threads = std::max(1u, threads);
  MachinePeak p;
  p.threads = threads;
  FmaLoop fma = widest_fma();
  p.isa = fma.isa;
  std::vector<float> sinks(threads);
  double best = 1e30;
  for (int rep = 0; rep < kFmaReps; rep++)
    best = std::min(best, timed_on_threads(threads, [&](unsigned t) { sinks[t] = fma.run(kFmaIters); }));
  p.gflops = double(threads) * double(kFmaIters) * fma.flops_per_iter / best / 1e9;

  // new[] leaves the pages untouched: each thread first-touches its own share, as the kernels do
  std::unique_ptr<float[]> src(new float[kArray]), dst(new float[kArray]);
  const int64_t share = kArray / threads;
  auto span = [&](unsigned t) { return std::pair<int64_t, int64_t>{t * share, t + 1 == threads ? kArray : (t + 1) * share}; };
  timed_on_threads(threads, [&](unsigned t) {
    auto [lo, hi] = span(t);
    std::fill(src.get() + lo, src.get() + hi, 1.0f);
    std::fill(dst.get() + lo, dst.get() + hi, 0.0f);
  });
  double copy = 1e30, read = 1e30;
  std::vector<uint32_t> sums(threads);
  for (int rep = 0; rep < kReps; rep++) {
    copy = std::min(copy, timed_on_threads(threads, [&](unsigned t) {
                      auto [lo, hi] = span(t);
                      copy_span(src.get() + lo, dst.get() + lo, hi - lo);
                    }));
    read = std::min(read, timed_on_threads(threads, [&](unsigned t) {
                      auto [lo, hi] = span(t);
                      sums[t] = read_span(reinterpret_cast<const uint32_t*>(src.get()) + lo, hi - lo);
                    }));
  }
  p.copy_gbs = 2.0 * kArray * sizeof(float) / copy / 1e9;
  p.read_gbs = double(kArray) * sizeof(float) / read / 1e9;
  volatile float keep = sinks[0] + float(sums[0]) + dst[kArray - 1];  // the results are used
  (void)keep;
  return p;
}

namespace {

std::optional<MachinePeak> read_cached(const std::filesystem::path& file, const std::string& model, unsigned threads) {
  std::ifstream in(file);
  std::string cached_model;
  MachinePeak p;
  p.threads = threads, p.from_cache = true;
  std::getline(in, cached_model);
  if (in && cached_model == model && (in >> p.gflops >> p.copy_gbs >> p.read_gbs >> p.isa) && p.gflops > 0 &&
      p.copy_gbs > 0 && p.read_gbs > 0)
    return p;
  return std::nullopt;
}

}  // namespace

MachinePeak machine_peak(unsigned threads, bool remeasure) {
  threads = std::max(1u, threads);
  std::filesystem::path file = cache_file(threads);
  const std::string model = cpu_model();
  std::optional<MachinePeak> cached = file.empty() ? std::nullopt : read_cached(file, model, threads);
  if (cached && !remeasure) return *cached;
  MachinePeak p = measure_machine_peak(threads);
  if (cached && cached->isa == p.isa) {
    // a roof is a maximum: a busy neighbour only ever lowers a measurement, so the cache keeps the
    // best figure each run has seen
    p.gflops = std::max(p.gflops, cached->gflops);
    p.copy_gbs = std::max(p.copy_gbs, cached->copy_gbs);
    p.read_gbs = std::max(p.read_gbs, cached->read_gbs);
  }
  if (!file.empty()) {  // best effort: written whole, then renamed, so a reader never sees half
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    std::filesystem::path tmp = file;
    tmp += ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp);
      out << model << "\n" << p.gflops << " " << p.copy_gbs << " " << p.read_gbs << " " << p.isa << "\n";
    }
    std::filesystem::rename(tmp, file, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  }
  return p;
}

}  // namespace kiln::bench
