// A program outside the project: all-reduces ones with the installed kiln::dist (without mpirun: a
// world of one rank) and prints the world size and the sum.
#include <kiln/dist.hpp>

#include <cstdio>

int main() {
  kiln::dist::init();
  kiln::Tensor s = kiln::dist::all_reduce(kiln::Tensor::ones({4}, kiln::dtypes::float32, "cpu:0"), kiln::dist::ReduceOp::Sum).sum();
  std::printf("world %d sum %g\n", kiln::dist::world_size(), static_cast<double>(s.item<float>()));
  kiln::dist::finalize();
  return 0;
}
