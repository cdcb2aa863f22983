// bench/dist_bench.cpp - kiln::dist's costs (bench/dist.sh runs it under mpirun -np 2, one thread per
// rank). Printed by rank 0: the median and the best of the repetitions (on a shared machine the
// best is the least disturbed run).
//
//   allreduce  kiln::dist::all_reduce of 4, 16, 64 MiB float32 (Sum) next to a bare MPI_Allreduce of
//              the same bytes into a buffer allocated once, alternating in the same run: the ratio
//              is what kiln adds (header exchange, result tensor, watchdog).
//   step       a data-parallel training step (SGD, 64 rows per rank, eager: forward, backward,
//              all_reduce_grads, update) next to the same step without the all-reduce: the rank's
//              step on its half of the batch alone, measured while the other rank does the same, so
//              both see the same machine. The data-parallel step twice: overlapped (all_reduce_grads
//              on the lazy gradients: buckets all-reduced while the backward pass runs) and not
//              (every gradient realized first, then all_reduce_grads: the same buckets, its
//              time printed apart), alternating in the same run. Two MLPs: the spiral example's 2-64-64-3 (4.5 k float32
//              gradients: latency) and 256-1024-1024-10 (1.3 M: 5 MB of gradients per step).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/dist.hpp"
#include "kiln/kiln.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void allreduce(int reps) {
  namespace dist = kiln::dist;
  int me = dist::rank();
  if (me == 0)
    std::printf("%-10s %12s %12s %8s   %12s %12s %8s\n", "all_reduce", "kiln median", "MPI median", "ratio", "kiln best", "MPI best", "ratio");
  for (int64_t mib : {4, 16, 64}) {
    int64_t n = mib * (1 << 20) / 4;
    kiln::Tensor x = kiln::Tensor::full({n}, 1.0 + me).contiguous().realize();
    std::vector<float> src(static_cast<size_t>(n), 1.0f + static_cast<float>(me)), dst(static_cast<size_t>(n));
    std::vector<double> ours, bare;
    for (int r = 0; r < reps + 1; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t = Clock::now();
      MPI_Allreduce(src.data(), dst.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double b = since(t);
      MPI_Barrier(MPI_COMM_WORLD);
      t = Clock::now();
      kiln::Tensor y = dist::all_reduce(x, dist::ReduceOp::Sum);
      double o = since(t);
      if (r == 0) {  // warm-up (first touch of the buffers); checked once
        if (y.to_vector<float>()[static_cast<size_t>(n - 1)] != 3.0f) std::printf("WRONG: all_reduce result\n");
        continue;
      }
      bare.push_back(b);
      ours.push_back(o);
    }
    if (me == 0)
      std::printf("%4lld MiB   %9.2f ms %9.2f ms %7.2fx   %9.2f ms %9.2f ms %7.2fx\n", static_cast<long long>(mib), median(ours), median(bare),
                  median(ours) / median(bare), best(ours), best(bare), best(ours) / best(bare));
  }
}

void step(int reps, int64_t in, int64_t hidden, int64_t out, int64_t rows) {
  namespace dist = kiln::dist;
  using kiln::Tensor;
  int me = dist::rank();
  kiln::manual_seed(1);
  std::vector<Tensor> params{Tensor::glorot_uniform({hidden, in}), Tensor::zeros({hidden}), Tensor::glorot_uniform({hidden, hidden}),
                             Tensor::zeros({hidden}), Tensor::glorot_uniform({out, hidden}), Tensor::zeros({out})};
  for (Tensor& p : params) p = p.contiguous().realize().requires_grad_();
  kiln::optim::SGD opt(params, 0.01);
  kiln::manual_seed(100 + static_cast<uint64_t>(me));  // this rank's half of the batch
  Tensor x = Tensor::randn({rows, in}).realize();
  Tensor y = Tensor::randint({rows}, 0, out).realize();
  // mode 0: the rank's step alone (no all-reduce); 1: data-parallel, the plain path (every gradient
  // realized with the loss, then all_reduce_grads); 2: data-parallel, overlapped (all_reduce_grads
  // realizes the lazy gradients and the loss, all-reducing buckets while the backward pass runs);
  std::vector<double> in_reduce;  // the all_reduce_grads call alone, in the plain data-parallel steps
  auto one = [&](int mode) {
    opt.zero_grad();
    Tensor h = x.linear(params[0], params[1]).relu().linear(params[2], params[3]).relu().linear(params[4], params[5]);
    Tensor loss = h.sparse_categorical_crossentropy(y);
    loss.backward();
    if (mode == 2) {
      dist::all_reduce_grads(params, {loss});
    } else {
      std::vector<Tensor> done{loss};
      for (const Tensor& p : params) done.push_back(*p.grad());
      Tensor::realize_all(done);
      if (mode == 1) {
        auto t = Clock::now();
        dist::all_reduce_grads(params);
        in_reduce.push_back(since(t));
      }
    }
    std::vector<Tensor> upd = opt.step_tensors();
    Tensor::realize_all(upd);
  };
  for (int w = 0; w < 3; ++w) {  // compile every kernel
    one(1);
    one(2);
  }
  std::vector<double> local, dp, ov;
  in_reduce.clear();
  for (int r = 0; r < reps; ++r) {  // the three alternate, so that each sees the same machine
    dist::barrier();
    auto t = Clock::now();
    one(0);
    local.push_back(since(t));
    dist::barrier();
    t = Clock::now();
    one(1);
    dp.push_back(since(t));
    dist::barrier();
    t = Clock::now();
    one(2);
    ov.push_back(since(t));
  }
  if (me == 0) {
    std::printf("train step (MLP %lld-%lld-%lld-%lld, %lld rows per rank, %d ranks; buckets of %lld bytes): ms and ratio to the rank's step "
                "alone on its half of the batch\n", static_cast<long long>(in), static_cast<long long>(hidden), static_cast<long long>(hidden),
                static_cast<long long>(out), static_cast<long long>(rows), dist::world_size(), static_cast<long long>(dist::bucket_bytes()));
    std::printf("  %-7s %8s %18s %22s %22s\n", "", "alone", "overlapped", "not (realized first)", "(its all_reduce_grads)");
    auto row = [&](const char* what, double (*f)(std::vector<double>)) {
      double a = f(local);
      std::printf("  %-7s %8.2f %10.2f %6.2fx %14.2f %6.2fx %14.2f\n", what, a, f(ov), f(ov) / a, f(dp), f(dp) / a, f(in_reduce));
    };
    row("median", median);
    row("best", [](std::vector<double> v) { return best(v); });
    // each repetition's overlapped step over the not-overlapped one right before it: on a machine
    // whose load drifts, the pairs see about the same load
    std::vector<double> paired;
    for (size_t r = 0; r < ov.size(); ++r) paired.push_back(ov[r] / dp[r]);
    std::printf("  overlapped / not overlapped, median of the %zu pairs: %.2fx\n", paired.size(), median(paired));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "all";
  int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  kiln::dist::init();
  if (kiln::dist::rank() == 0) std::printf("%s\n", kiln::dist::describe().c_str());
  if (what == "all" || what == "allreduce") allreduce(reps);
  if (what == "all" || what == "step") {
    step(reps, 2, 64, 3, 64);        // the spiral MLP of examples/train_mlp_dist (4.5 k parameters)
    step(reps, 256, 1024, 10, 64);  // 1.3 M parameters: 5 MB of gradients per step
  }
  kiln::dist::finalize();
}
