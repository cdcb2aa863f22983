// examples/softmax.cpp - softmax over the last axis of a batch of logits, checked against plain C++.
//
//   build/examples/softmax [device]      (default: kiln's default device)
//
// Softmax is a reduction (max), an elementwise exp, a second reduction (sum) and a division; kiln
// fuses them into a few kernels. Prints row checks, the error against a float64 reference and the
// time of every kernel launched.
#include <kiln/kiln.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

int main(int argc, char** argv) try {
  constexpr int64_t rows = 512, cols = 1000;
  std::string device = argc > 1 ? argv[1] : kiln::default_device();
  kiln::manual_seed(7);
  kiln::Tensor logits = kiln::Tensor::randn({rows, cols}, kiln::dtypes::float32, device) * 4;
  logits.realize();

  kiln::Profile profile;
  kiln::Tensor probs = logits.softmax(-1);
  std::vector<float> got = probs.to_vector<float>();
  std::vector<float> row_sums = probs.sum({-1}).to_vector<float>();

  std::vector<float> x = logits.to_vector<float>();
  double err = 0, worst_row = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float* xr = &x[r * cols];
    double mx = *std::max_element(xr, xr + cols), s = 0;
    for (int64_t c = 0; c < cols; c++) s += std::exp(xr[c] - mx);
    for (int64_t c = 0; c < cols; c++) err = std::max(err, std::fabs(got[r * cols + c] - std::exp(xr[c] - mx) / s));
    worst_row = std::max(worst_row, std::fabs(row_sums[r] - 1.0));
  }

  std::printf("softmax of %lldx%lld logits on %s\n", (long long)rows, (long long)cols, device.c_str());
  std::printf("  row 0: p[0..3] = %.5f %.5f %.5f %.5f, max p = %.5f\n", got[0], got[1], got[2], got[3],
              *std::max_element(got.begin(), got.begin() + cols));
  std::printf("  max |row sum - 1| = %.2e\n", worst_row);
  bool ok = err < 1e-5 && worst_row < 1e-5;  // float32: a few ulp of exp, sum and divide
  std::printf("  max |kiln - reference| = %.2e  %s\n", err, ok ? "ok" : "MISMATCH");
  std::printf("kernels:\n%s", profile.table().c_str());
  return ok ? 0 : 1;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "softmax: %s\n", e.what());
  return 1;
}
