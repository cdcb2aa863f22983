// bench/reference.cpp - the float64 references of reference.hpp.
#include "reference.hpp"

#include <algorithm>
#include <cmath>

namespace kiln::bench::ref {

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t k, int64_t m) {
  std::vector<double> c(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = 0; p < k; p++) {
      double av = a[i * k + p];
      const double* brow = &b[p * m];
      double* crow = &c[i * m];
      for (int64_t j = 0; j < m; j++) crow[j] += av * brow[j];
    }
  return c;
}

std::vector<double> transposed(const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<double> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c];
  return t;
}

std::vector<double> linear(const std::vector<double>& x, const std::vector<float>& w, const std::vector<float>& bias,
                           int64_t batch, int64_t in, int64_t out, bool relu) {
  std::vector<double> h = matmul(x, transposed(w, out, in), batch, in, out);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t o = 0; o < out; o++) {
      double& v = h[b * out + o];
      v += bias[o];
      if (relu) v = std::max(v, 0.0);
    }
  return h;
}

std::vector<double> conv2d(const std::vector<float>& x, const std::vector<float>& w, const ConvShape& s) {
  const int64_t OH = s.out_height(), OW = s.out_width(), K = s.kernel;
  const int64_t cpg = s.channels / s.groups, fpg = s.filters / s.groups;  // per group
  std::vector<double> out(static_cast<size_t>(s.batch * s.filters * OH * OW), 0.0);
  for (int64_t b = 0; b < s.batch; b++)
    for (int64_t o = 0; o < s.filters; o++)
      for (int64_t c = 0; c < cpg; c++)
        for (int64_t ky = 0; ky < K; ky++)
          for (int64_t kx = 0; kx < K; kx++) {
            double wv = w[((o * cpg + c) * K + ky) * K + kx];
            const float* plane = &x[(b * s.channels + o / fpg * cpg + c) * s.height * s.width];
            for (int64_t y = 0; y < OH; y++) {
              int64_t iy = y * s.stride + ky - s.pad;
              if (iy < 0 || iy >= s.height) continue;
              double* orow = &out[((b * s.filters + o) * OH + y) * OW];
              for (int64_t xo = 0; xo < OW; xo++) {
                int64_t ix = xo * s.stride + kx - s.pad;
                if (ix >= 0 && ix < s.width) orow[xo] += wv * plane[iy * s.width + ix];
              }
            }
          }
  return out;
}

std::vector<double> softmax_rows(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; r++) {
    const double* in = &x[r * cols];
    double mx = *std::max_element(in, in + cols), s = 0;
    for (int64_t c = 0; c < cols; c++) s += out[r * cols + c] = std::exp(in[c] - mx);
    for (int64_t c = 0; c < cols; c++) out[r * cols + c] /= s;
  }
  return out;
}

}  // namespace kiln::bench::ref
