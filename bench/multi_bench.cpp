// bench/multi_bench.cpp - the multi-device costs (issue 18): all-reduce bandwidth between the cpu
// backend's devices next to a plain memcpy of the same bytes, and the MLP workload data-parallel
// over every cpu device next to the same workload on one. The device layout comes from the user
// config (KILN_CONFIG), so bench/multi.sh runs it twice: two one-thread devices, then one device
// with two threads. Medians of several runs; nothing is asserted.
//
//   bench_multi allreduce   all-reduce of 1..64 MiB per device, naive and ring, vs memcpy
//   bench_multi mlp         the MLP workload on cpu:0 alone, and data-parallel when there are more devices
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "tensor/multi.hpp"
#include "workloads.hpp"

using namespace kiln;

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int runs, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<std::string> cpu_devices() {
  std::vector<std::string> out;
  for (const std::string& d : devices())
    if (d.rfind("cpu:", 0) == 0) out.push_back(d);
  return out;
}

void allreduce(const std::vector<std::string>& devs) {
  if (devs.size() < 2) {
    std::printf("allreduce: needs two cpu devices or more (KILN_CONFIG with [backends.cpu.options] devices = 2)\n");
    return;
  }
  std::printf("# all-reduce (sum) over %zu devices; memcpy: one thread copying the bytes of one part\n", devs.size());
  std::printf("%10s %11s %11s %11s %11s %9s %9s %9s\n", "MiB/part", "memcpy ms", "naive ms", "ring ms", "peer ms", "naive/cp",
              "ring/cp", "peer/cp");
  for (int64_t mib : {1, 4, 16, 64}) {
    int64_t n = mib * (1 << 20) / 4;
    std::vector<Tensor> parts;
    for (const std::string& d : devs) parts.push_back(Tensor::rand({n}, dtypes::float32, d).realize());
    std::vector<char> a(static_cast<size_t>(n) * 4, 1), b(a.size());
    double cp = median_ms(9, [&] {
      std::memcpy(b.data(), a.data(), a.size());
      asm volatile("" ::"r"(b.data()) : "memory");
    });
    auto time = [&](auto* algo) {
      return median_ms(9, [&] {
        std::vector<Tensor> out = algo(Ops::ADD, parts);
        Tensor::realize_all(out);
      });
    };
    double naive = time(&detail::all_reduce_naive), ring = time(&detail::all_reduce_ring), peer = time(&detail::all_reduce_peer);
    std::printf("%10lld %11.3f %11.3f %11.3f %11.3f %9.2f %9.2f %9.2f\n", static_cast<long long>(mib), cp, naive, ring, peer, naive / cp,
                ring / cp, peer / cp);
  }
}

void mlp(const std::vector<std::string>& devs) {
  const bench::Workload* w = nullptr;
  for (const bench::Workload& x : bench::workloads())
    if (x.name == "mlp") w = &x;
  std::vector<Tensor> in = w->inputs(devs[0]);
  Tensor::realize_all(in);
  auto run = [&](const std::vector<Tensor>& args) { return w->fn(args).realize(); };
  for (int i = 0; i < 3; ++i) run(in);
  double one = median_ms(21, [&] { run(in); });
  std::printf("mlp on %s (%zu threads): %.3f ms\n", devs[0].c_str(), static_cast<size_t>(runtime::open_device(devs[0])->target().threads), one);
  if (devs.size() < 2) return;
  std::vector<Tensor> dp{in[0].shard(devs, 0)};
  for (size_t i = 1; i < in.size(); ++i) dp.push_back(in[i].shard(devs));
  Tensor::realize_all(dp);
  for (int i = 0; i < 3; ++i) run(dp);
  double par = median_ms(21, [&] { run(dp); });
  Jit jit([&](const std::vector<Tensor>& a, const std::vector<BoundVariable>&) { return std::vector<Tensor>{w->fn(a)}; });
  for (int i = 0; i < 3; ++i) jit(dp);
  double jitted = median_ms(21, [&] { jit(dp); });
  std::printf("mlp data-parallel over %zu devices: %.3f ms (jitted %.3f ms)\n", devs.size(), par, jitted);
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "";
  std::vector<std::string> devs = cpu_devices();
  if (what == "allreduce") allreduce(devs);
  else if (what == "mlp") mlp(devs);
  else {
    std::fprintf(stderr, "usage: bench_multi allreduce|mlp (the devices come from KILN_CONFIG; see bench/multi.sh)\n");
    return 2;
  }
}
