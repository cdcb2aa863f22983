// bench/sets.hpp - what the workload sets of `kiln bench` share (internal to bench/): the input
// builders, the parameterised matmul and conv2d workloads, and the sets beyond the eight.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference.hpp"
#include "workloads.hpp"

namespace kiln::bench {

using Host = std::vector<std::vector<float>>;  // host copies of a workload's inputs
constexpr int64_t M = int64_t{1} << 20;

// Uniform in [-0.5, 0.5): sums of products stay well scaled for the float32 check.
Tensor centered(const Shape& shape, const std::string& device);

// A[n,k] @ B[k,m], 2nmk FLOPs; with `a_t` A is stored k x n and read transposed (a weight
// gradient, X.T @ dY), with `b_t` B is stored m x k (x @ W.T, a linear layer).
Workload matmul_workload(const std::string& name, int64_t n, int64_t k, int64_t m, bool a_t = false, bool b_t = false);
Workload square_matmul(int64_t n);  // "matmul<n>"
// conv2d without bias, `s.flops()` FLOPs.
Workload conv2d_workload(const std::string& name, const ref::ConvShape& s);

// The default set's memory-bound workloads at any size: ((x + 1) * 2).relu() and x.sum() over n
// floats, softmax over `rows` rows of 1024.
Workload elementwise(const std::string& name, int64_t n);
Workload sum(const std::string& name, int64_t n);
Workload softmax(const std::string& name, int64_t rows);
// LayerNorm over `rows` rows of 1024 with a gain and a bias.
Workload layernorm(const std::string& name, int64_t rows);

// The matmul size sweep (n x n x n for n in kSweepSizes), and the workloads outside the eight.
std::vector<Workload> sizes_set();
std::vector<Workload> extra_set();
// Sizes for a GPU (issue 48's targets): the memory-bound workloads with 8x the data, so that
// they outgrow a 60 MB L2 and a launch is small beside them, and a float32 matmul 4096.
std::vector<Workload> gpu_set();

// The sweep's sizes: multiples of nothing, one off a power of two, powers of two.
inline constexpr int64_t kSweepSizes[] = {127, 255, 500, 511, 999, 1000, 1001, 1023, 1024, 1536, 2048};

}  // namespace kiln::bench
