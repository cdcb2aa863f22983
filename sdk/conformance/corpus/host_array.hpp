// sdk/conformance/corpus/host_array.hpp - plain C++ reference implementations of the tensor ops.
//
// An n-dimensional array of doubles with a dtype tag; every function is the obvious loop, written
// independently of kiln (the oracle for the op corpus). Values are rounded to the dtype where the
// dtype is narrower than double, so results compare to kiln's within a float32 tolerance.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "kiln/dtype.hpp"

namespace kiln::testing {

struct HostArray {
  std::vector<int64_t> shape;
  std::vector<double> v;
  DType dtype = dtypes::float32;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  std::vector<int64_t> strides() const {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
  }
  double at(const std::vector<int64_t>& idx) const {
    int64_t f = 0, st = 1;
    for (size_t i = shape.size(); i-- > 0;) f += idx[i] * st, st *= shape[i];
    return v[static_cast<size_t>(f)];
  }
};

// Rounds/wraps a double to what `d` can hold (C semantics for integer wrap-around).
double to_dtype(double x, DType d);
// While one lives (on this thread), to_dtype leaves values tagged float32 unrounded: a 16-bit
// case reuses a float32 case's loops as its reference and must compute in float64 throughout.
struct Float64Reference {
  Float64Reference();
  ~Float64Reference();
  Float64Reference(const Float64Reference&) = delete;
  Float64Reference& operator=(const Float64Reference&) = delete;
  bool saved;
};
// The 16-bit pattern of a float16 or bfloat16 value (x rounded to nearest even first).
uint16_t half_bits(double x, DType d);
double from_half_bits(uint16_t bits, DType d);
// Every multi-index of a shape, in row-major order.
void for_each_index(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f);

HostArray make_array(const std::vector<int64_t>& shape, DType d, uint64_t seed, double lo = -2, double hi = 2);
HostArray map(const HostArray& a, const std::function<double(double)>& f, DType out);
HostArray zip(const HostArray& a, const HostArray& b, const std::function<double(double, double)>& f, DType out);
HostArray where(const HostArray& c, const HostArray& a, const HostArray& b);
HostArray reduce(const HostArray& a, std::vector<int> axes, bool keepdim, const std::function<double(double, double)>& f,
                 double init, DType out);
HostArray reshape(const HostArray& a, const std::vector<int64_t>& shape);
HostArray permute(const HostArray& a, const std::vector<int>& order);
HostArray expand(const HostArray& a, const std::vector<int64_t>& shape);
HostArray pad(const HostArray& a, const std::vector<std::pair<int64_t, int64_t>>& p, double value);
HostArray shrink(const HostArray& a, const std::vector<std::pair<int64_t, int64_t>>& r);
HostArray flip(const HostArray& a, const std::vector<int>& axes);
HostArray matmul(const HostArray& a, const HostArray& b);
HostArray conv2d(const HostArray& x, const HostArray& w, int stride, int pad, int dilation, int groups);
HostArray pool2d(const HostArray& x, int k, int stride, int pad, bool max);
HostArray cat(const std::vector<HostArray>& xs, int axis);
HostArray gather(const HostArray& x, int axis, const HostArray& idx);
HostArray cast(const HostArray& a, DType d);

}  // namespace kiln::testing
