// sdk/conformance/corpus/host_array.cpp - the reference loops.
#include "host_array.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

namespace kiln::testing {

namespace {
// half/bfloat16 rounding through float bits (round to nearest even), independent of kiln
float round_bits(float f, int drop) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return f;
  uint32_t half = 1u << (drop - 1);
  uint32_t rem = x & ((1u << drop) - 1);
  x &= ~((1u << drop) - 1);
  if (rem > half || (rem == half && (x & (1u << drop)))) x += 1u << drop;
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
thread_local bool float64_reference = false;
}  // namespace

Float64Reference::Float64Reference() : saved(float64_reference) { float64_reference = true; }
Float64Reference::~Float64Reference() { float64_reference = saved; }

uint16_t half_bits(double x, DType d) {
  x = to_dtype(x, d);  // (a value the caller changed, as the Jit check does, rounds to nearest first)
  if (d.scalar() == Scalar::bfloat16) {
    float f = static_cast<float>(x);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<uint16_t>(b >> 16);
  }
  if (d.scalar() != Scalar::float16) throw std::runtime_error("half_bits: not a 16-bit float type");
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (std::isnan(x)) return 0x7e00;
  if (std::isinf(x)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(a * std::ldexp(1.0, 24));  // subnormal
  int e;
  double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  return sign | static_cast<uint16_t>((e + 14) << 10) | static_cast<uint16_t>((m * 2 - 1) * 1024);
}

double from_half_bits(uint16_t bits, DType d) {
  if (d.scalar() == Scalar::bfloat16) {
    uint32_t b = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (d.scalar() != Scalar::float16) throw std::runtime_error("from_half_bits: not a 16-bit float type");
  int e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  double a = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return bits & 0x8000 ? -a : a;
}

double to_dtype(double x, DType d) {
  switch (d.scalar()) {
    case Scalar::bool_: return (x != 0 || std::isnan(x)) ? 1 : 0;
    case Scalar::float32: return float64_reference ? x : static_cast<float>(x);
    case Scalar::float64: return x;
    case Scalar::bfloat16: return round_bits(static_cast<float>(x), 16);
    case Scalar::float16: {
      double a = std::fabs(x);
      if (std::isnan(x) || std::isinf(x)) return x;
      if (a >= 65520.0) return std::copysign(INFINITY, x);
      if (a < std::ldexp(1.0, -14)) return std::nearbyint(x * std::ldexp(1.0, 24)) * std::ldexp(1.0, -24);  // subnormal
      int e;
      std::frexp(a, &e);
      double q = std::ldexp(1.0, e - 11);
      return std::copysign(std::nearbyint(a / q) * q, x);
    }
    case Scalar::int8: return static_cast<int8_t>(static_cast<int64_t>(x));
    case Scalar::int16: return static_cast<int16_t>(static_cast<int64_t>(x));
    case Scalar::int32: return static_cast<int32_t>(static_cast<int64_t>(x));
    case Scalar::int64: return static_cast<double>(static_cast<int64_t>(x));
    case Scalar::uint8: return static_cast<uint8_t>(static_cast<int64_t>(x));
    case Scalar::uint16: return static_cast<uint16_t>(static_cast<int64_t>(x));
    case Scalar::uint32: return static_cast<uint32_t>(static_cast<int64_t>(x));
    case Scalar::uint64: return static_cast<double>(static_cast<uint64_t>(static_cast<int64_t>(x)));
    default: throw std::runtime_error("to_dtype: unsupported dtype");
  }
}

void for_each_index(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  for (int64_t d : shape)
    if (d == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  for (;;) {
    f(idx);
    size_t i = shape.size();
    while (i > 0) {
      --i;
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
      if (i == 0) return;
    }
    if (shape.empty()) return;
  }
}

HostArray make_array(const std::vector<int64_t>& shape, DType d, uint64_t seed, double lo, double hi) {
  HostArray a{shape, {}, d};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  a.v.resize(static_cast<size_t>(a.numel()));
  for (double& x : a.v) {
    double r = u(rng);
    if (d.is_bool()) x = r > (lo + hi) / 2;
    else if (d.is_int()) x = to_dtype(std::floor(r), d);
    else x = to_dtype(r, d);
  }
  return a;
}

HostArray map(const HostArray& a, const std::function<double(double)>& f, DType out) {
  HostArray r{a.shape, {}, out};
  for (double x : a.v) r.v.push_back(to_dtype(f(x), out));
  return r;
}

namespace {
std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i + a.size() >= n ? a[i + a.size() - n] : 1, y = i + b.size() >= n ? b[i + b.size() - n] : 1;
    if (x != y && x != 1 && y != 1) throw std::runtime_error("reference: shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
double at_broadcast(const HostArray& a, const std::vector<int64_t>& idx) {
  std::vector<int64_t> j(a.shape.size());
  for (size_t i = 0; i < a.shape.size(); ++i) {
    int64_t k = idx[idx.size() - a.shape.size() + i];
    j[i] = a.shape[i] == 1 ? 0 : k;
  }
  return a.at(j);
}
}  // namespace

HostArray zip(const HostArray& a, const HostArray& b, const std::function<double(double, double)>& f, DType out) {
  HostArray r{broadcast_shape(a.shape, b.shape), {}, out};
  for_each_index(r.shape, [&](const std::vector<int64_t>& i) { r.v.push_back(to_dtype(f(at_broadcast(a, i), at_broadcast(b, i)), out)); });
  return r;
}

HostArray where(const HostArray& c, const HostArray& a, const HostArray& b) {
  HostArray r{broadcast_shape(c.shape, broadcast_shape(a.shape, b.shape)), {}, a.dtype};
  for_each_index(r.shape, [&](const std::vector<int64_t>& i) {
    r.v.push_back(at_broadcast(c, i) != 0 ? at_broadcast(a, i) : at_broadcast(b, i));
  });
  return r;
}

HostArray reduce(const HostArray& a, std::vector<int> axes, bool keepdim, const std::function<double(double, double)>& f,
                 double init, DType out) {
  int n = static_cast<int>(a.shape.size());
  if (axes.empty())
    for (int i = 0; i < n; ++i) axes.push_back(i);
  for (int& x : axes) x = x < 0 ? x + n : x;
  std::vector<int64_t> kshape = a.shape;
  for (int x : axes) kshape[x] = 1;
  HostArray r{kshape, std::vector<double>(1, 0), out};
  int64_t total = 1;
  for (int64_t d : kshape) total *= d;
  r.v.assign(static_cast<size_t>(total), init);
  HostArray kr{kshape, {}, out};
  auto kstr = kr.strides();
  for_each_index(a.shape, [&](const std::vector<int64_t>& i) {
    int64_t f0 = 0;
    for (size_t d = 0; d < i.size(); ++d) f0 += (kshape[d] == 1 ? 0 : i[d]) * kstr[d];
    r.v[static_cast<size_t>(f0)] = f(r.v[static_cast<size_t>(f0)], a.at(i));
  });
  for (double& x : r.v) x = to_dtype(x, out);
  if (!keepdim) {
    std::vector<int64_t> s;
    for (int d = 0; d < n; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) s.push_back(a.shape[d]);
    r.shape = s;
  }
  return r;
}

HostArray reshape(const HostArray& a, const std::vector<int64_t>& shape) { return HostArray{shape, a.v, a.dtype}; }

HostArray permute(const HostArray& a, const std::vector<int>& order) {
  std::vector<int64_t> s;
  for (int o : order) s.push_back(a.shape[o]);
  HostArray r{s, {}, a.dtype};
  for_each_index(s, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j(i.size());
    for (size_t k = 0; k < order.size(); ++k) j[order[k]] = i[k];
    r.v.push_back(a.at(j));
  });
  return r;
}

HostArray expand(const HostArray& a, const std::vector<int64_t>& shape) {
  HostArray r{shape, {}, a.dtype};
  for_each_index(shape, [&](const std::vector<int64_t>& i) { r.v.push_back(at_broadcast(a, i)); });
  return r;
}

HostArray pad(const HostArray& a, const std::vector<std::pair<int64_t, int64_t>>& p, double value) {
  std::vector<int64_t> s = a.shape;
  for (size_t i = 0; i < s.size(); ++i) s[i] += p[i].first + p[i].second;
  HostArray r{s, {}, a.dtype};
  for_each_index(s, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j(i.size());
    bool in = true;
    for (size_t k = 0; k < i.size(); ++k) {
      j[k] = i[k] - p[k].first;
      in &= j[k] >= 0 && j[k] < a.shape[k];
    }
    r.v.push_back(in ? a.at(j) : value);
  });
  return r;
}

HostArray shrink(const HostArray& a, const std::vector<std::pair<int64_t, int64_t>>& rg) {
  std::vector<int64_t> s;
  for (auto [b, e] : rg) s.push_back(e - b);
  HostArray r{s, {}, a.dtype};
  for_each_index(s, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j(i.size());
    for (size_t k = 0; k < i.size(); ++k) j[k] = i[k] + rg[k].first;
    r.v.push_back(a.at(j));
  });
  return r;
}

HostArray flip(const HostArray& a, const std::vector<int>& axes) {
  HostArray r{a.shape, {}, a.dtype};
  for_each_index(a.shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    for (int x : axes) {
      int ax = x < 0 ? x + static_cast<int>(a.shape.size()) : x;
      j[ax] = a.shape[ax] - 1 - i[ax];
    }
    r.v.push_back(a.at(j));
  });
  return r;
}

HostArray matmul(const HostArray& a, const HostArray& b) {
  // 2-D only (the corpus broadcasts batches through expand first)
  int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  HostArray r{{m, n}, std::vector<double>(static_cast<size_t>(m * n), 0), a.dtype};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t x = 0; x < k; ++x) s += a.v[i * k + x] * b.v[x * n + j];
      r.v[i * n + j] = to_dtype(s, a.dtype);
    }
  return r;
}

HostArray conv2d(const HostArray& x, const HostArray& w, int stride, int pad, int dilation, int groups) {
  int64_t n = x.shape[0], cin = x.shape[1], h = x.shape[2], wd = x.shape[3];
  int64_t cout = w.shape[0], kh = w.shape[2], kw = w.shape[3];
  int64_t oh = (h + 2 * pad - dilation * (kh - 1) - 1) / stride + 1, ow = (wd + 2 * pad - dilation * (kw - 1) - 1) / stride + 1;
  int64_t cg = cin / groups, og = cout / groups;
  HostArray r{{n, cout, oh, ow}, {}, x.dtype};
  for_each_index(r.shape, [&](const std::vector<int64_t>& i) {
    int64_t g = i[1] / og;
    double s = 0;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t b = 0; b < kw; ++b) {
          int64_t y = i[2] * stride + a * dilation - pad, xx = i[3] * stride + b * dilation - pad;
          if (y < 0 || y >= h || xx < 0 || xx >= wd) continue;
          s += x.at({i[0], g * cg + c, y, xx}) * w.at({i[1], c, a, b});
        }
    r.v.push_back(to_dtype(s, x.dtype));
  });
  return r;
}

HostArray pool2d(const HostArray& x, int k, int stride, int pad, bool max) {
  int64_t h = x.shape[2], w = x.shape[3];
  int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  HostArray r{{x.shape[0], x.shape[1], oh, ow}, {}, x.dtype};
  for_each_index(r.shape, [&](const std::vector<int64_t>& i) {
    double acc = max ? -INFINITY : 0;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        int64_t y = i[2] * stride + a - pad, xx = i[3] * stride + b - pad;
        bool in = y >= 0 && y < h && xx >= 0 && xx < w;
        double v = in ? x.at({i[0], i[1], y, xx}) : (max ? -INFINITY : 0);
        acc = max ? std::max(acc, v) : acc + v;
      }
    r.v.push_back(to_dtype(max ? acc : acc / (k * k), x.dtype));
  });
  return r;
}

HostArray cat(const std::vector<HostArray>& xs, int axis) {
  std::vector<int64_t> s = xs[0].shape;
  s[axis] = 0;
  for (const auto& x : xs) s[axis] += x.shape[axis];
  HostArray r{s, {}, xs[0].dtype};
  for_each_index(s, [&](const std::vector<int64_t>& i) {
    int64_t off = i[axis];
    for (const auto& x : xs) {
      if (off < x.shape[axis]) {
        std::vector<int64_t> j = i;
        j[axis] = off;
        r.v.push_back(x.at(j));
        return;
      }
      off -= x.shape[axis];
    }
  });
  return r;
}

HostArray gather(const HostArray& x, int axis, const HostArray& idx) {
  HostArray r{idx.shape, {}, x.dtype};
  for_each_index(idx.shape, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    int64_t k = static_cast<int64_t>(idx.at(i));
    j[axis] = k < 0 ? k + x.shape[axis] : k;
    r.v.push_back(j[axis] >= 0 && j[axis] < x.shape[axis] ? x.at(j) : 0);  // out of range: 0 (tensor.hpp)
  });
  return r;
}

HostArray cast(const HostArray& a, DType d) {
  HostArray r{a.shape, {}, d};
  for (double x : a.v) r.v.push_back(to_dtype(d.is_int() && !a.dtype.is_int() ? std::trunc(x) : x, d));
  return r;
}

}  // namespace kiln::testing
