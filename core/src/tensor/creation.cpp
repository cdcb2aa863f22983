// tensor/creation.cpp - creating tensors: constants, ranges, host data, random numbers, variables.
#include <cmath>
#include <cstring>
#include <mutex>

#include "runtime/buffer.hpp"
#include "support/hash.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

struct RngState {
  std::mutex mu;
  uint64_t seed = 0;
  uint64_t counter = 0;
};
RngState& rng() {
  static RngState s;
  return s;
}

// Uniform [0, 1) numbers of `dtype`: threefry bits of (counter + i) under the seed's key, keeping
// as many top bits as the dtype's mantissa holds so the value is exact and below 1.
Tensor uniform01(const Shape& shape, DType dtype, const std::string& dev) {
  int64_t n = numel_of(shape);
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(rng().mu);
    seed = rng().seed;
    offset = rng().counter;
    rng().counter += static_cast<uint64_t>(n);
  }
  int mant = dtype.scalar() == Scalar::float64 ? 53 : dtype.scalar() == Scalar::float16 ? 11
           : dtype.scalar() == Scalar::bfloat16 ? 8 : 24;
  DType compute = dtype.scalar() == Scalar::float64 ? dtypes::float64 : dtypes::float32;
  UOp ctr = UOp::make(Ops::IOTA, dtypes::uint64, {device_node(dev)}, Arg{n});
  Tensor c = make(ctr, {n}, dev);
  // 64-bit constants are built exactly (a double cannot hold every uint64)
  uint64_t k = mix64(seed ^ 0x6b696c6e72616e64ULL);  // "kilnrand"
  auto u64 = [&](uint64_t v) {
    UOp u = UOp::make(Ops::CONST, dtypes::uint64, {device_node(dev)}, Arg{static_cast<int64_t>(v)});
    return make(u, {}, dev).reshape({1}).expand({n});
  };
  // The counter's offset and the key reach the kernel in a buffer, not as constants: a constant
  // would make every call's kernel a new one, compiled again (a 1024 x 1024 rand took 49 ms a
  // call, nearly all of it LLVM; torch 7).
  Tensor state = Tensor::from_vector<uint64_t>({offset, k}, {2}, dev);
  c = c + state.shrink({{0, 1}}).expand({n});
  Tensor bits = alu(Ops::THREEFRY, {c, state.shrink({{1, 2}}).expand({n})}, dtypes::uint64);
  Tensor top = alu(Ops::SHR, {bits, u64(static_cast<uint64_t>(64 - mant))}, dtypes::uint64);
  Tensor v = top.cast(compute) * const_tensor(std::ldexp(1.0, -mant), compute, {n}, dev);
  return v.cast(dtype).reshape(shape);
}

// A placement ("cpu:0,cpu:1") gets the tensor `make_on(device)` builds on each of its devices
// (replicated); a device gets it once.
template <typename F>
Tensor on_each(const std::string& dev, F&& make_on) {
  if (!is_placement(dev)) return make_on(dev);
  std::vector<Tensor> parts;
  for (const std::string& d : split_placement(dev)) parts.push_back(make_on(d));
  return make_multi(std::move(parts), std::nullopt);
}

}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(rng().mu);
  rng().seed = seed;
  rng().counter = 0;
}

Variable::Variable(const std::string& name, int64_t min, int64_t max) {
  if (name.empty()) fail(ErrorCode::invalid_argument, "Variable: the name must not be empty");
  if (name.rfind("__", 0) == 0)
    fail(ErrorCode::invalid_argument, "Variable '", name, "': names starting with \"__\" are kiln's own (host scalars passed to kernels)");
  if (min > max) fail(ErrorCode::invalid_argument, "Variable '", name, "': min ", min, " > max ", max);
  if (min < 0) fail(ErrorCode::invalid_argument, "Variable '", name, "': a dimension cannot be negative (min ", min, ")");
  var_ = UOp::variable(name, min, max);
}

BoundVariable Variable::bind(int64_t value) const {
  const auto& v = std::get<NamedInts>(var_.arg());
  if (value < v.ints[0] || value > v.ints[1])
    fail(ErrorCode::invalid_argument, "Variable '", v.name, "': value ", value, " is outside its range [", v.ints[0], ", ",
         v.ints[1], "]");
  return BoundVariable(UOp::make(Ops::BIND, dtypes::index, {var_, UOp::cint(dtypes::index, value)}));
}

int64_t BoundVariable::value() const { return bind_.src(1).arg_int(); }
const std::string& BoundVariable::name() const { return std::get<NamedInts>(bind_.src(0).arg()).name; }
int64_t BoundVariable::min() const { return std::get<NamedInts>(bind_.src(0).arg()).ints[0]; }
int64_t BoundVariable::max() const { return std::get<NamedInts>(bind_.src(0).arg()).ints[1]; }
bool BoundVariable::same_variable(const BoundVariable& other) const { return bind_.src(0) == other.bind_.src(0); }

Tensor Tensor::empty(const Shape& shape, DType dtype, const std::string& device) {
  check_size(shape, dtype, "empty");
  return on_each(canonical_device(device), [&](const std::string& dev) {
    return make(runtime::new_buffer(dev, dtype, numel_of(shape)), {numel_of(shape)}, dev).reshape(shape);
  });
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, const std::string& device) {
  check_size(shape, dtype, "full");
  return const_tensor(value, dtype, shape, canonical_device(device));
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, const std::string& device) { return full(shape, 0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, const std::string& device) { return full(shape, 1, dtype, device); }

Tensor Tensor::arange(double start, double stop, double step, DType dtype, const std::string& device) {
  if (step == 0) fail(ErrorCode::invalid_argument, "arange: step must not be 0");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    fail(ErrorCode::invalid_argument, "arange: start, stop and step must be finite");
  double count = std::ceil((stop - start) / step);
  if (!(count < 0x1p63))  // also NaN; a larger count would not convert to int64
    fail(ErrorCode::invalid_argument, "arange: the element count of start ", start, ", stop ", stop, ", step ", step, " (", count,
         ") does not fit in a 64-bit signed integer (use a larger step or a smaller range)");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  check_size({n}, dtype, "arange");
  return on_each(canonical_device(device), [&](const std::string& dev) {
    Tensor i = make(UOp::make(Ops::IOTA, dtype, {device_node(dev)}, Arg{n}), {n}, dev);
    if (step != 1) i = i * const_tensor(step, dtype, {n}, dev);
    if (start != 0) i = i + const_tensor(start, dtype, {n}, dev);
    return i;
  });
}

Tensor Tensor::rand(const Shape& shape, DType dtype, const std::string& device) {
  check_size(shape, dtype, "rand");
  if (!dtype.is_float()) fail(ErrorCode::invalid_argument, "rand: dtype must be a float type, got ", dtype.name());
  std::string dev = canonical_device(device);
  if (is_placement(dev)) return rand(shape, dtype, split_placement(dev)[0]).to(dev);  // the same numbers on each device
  return uniform01(shape, dtype, dev);
}

Tensor Tensor::randn(const Shape& shape, DType dtype, const std::string& device) {
  check_size(shape, dtype, "randn");
  if (!dtype.is_float()) fail(ErrorCode::invalid_argument, "randn: dtype must be a float type, got ", dtype.name());
  std::string dev = canonical_device(device);
  if (is_placement(dev)) return randn(shape, dtype, split_placement(dev)[0]).to(dev);
  DType compute = dtype.scalar() == Scalar::float64 ? dtypes::float64 : dtypes::float32;
  // Box-Muller: sqrt(-2 ln(1 - u1)) * cos(2 pi u2); 1 - u1 is in (0, 1] so the log is finite
  Tensor u1 = uniform01(shape, compute, dev), u2 = uniform01(shape, compute, dev);
  Tensor r = ((1.0 - u1).log() * -2.0).sqrt();
  return (r * (u2 * (2 * M_PI)).cos()).cast(dtype);
}


Tensor Tensor::from_blob(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> owner, const std::string& device,
                         bool* shared) {
  check_size(shape, dtype, "from_blob");
  if (shared) *shared = false;
  int64_t n = numel_of(shape);
  uint64_t nbytes = static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype.itemsize());
  if (n && !data) fail(ErrorCode::invalid_argument, "from_blob: data is null for ", n, " elements");
  std::string dev = canonical_device(device);
  if (n && !is_placement(dev)) {
    if (std::optional<UOp> b = runtime::wrap_host_memory(dev, dtype, n, data, std::move(owner))) {
      if (shared) *shared = true;
      return make(*b, {n}, dev).reshape(shape);
    }
  }
  return from_bytes(data, nbytes, dtype, shape, dev);
}

Tensor Tensor::linspace(double start, double stop, int64_t steps, DType dtype, const std::string& device) {
  if (steps < 0) fail(ErrorCode::invalid_argument, "linspace: steps must be >= 0, got ", steps);
  if (dtype == dtypes::bool_) fail(ErrorCode::invalid_argument, "linspace: a bool dtype is not supported (use a number type)");
  if (steps == 1) return full({1}, start, dtype, device);
  // float32 steps then a cast, as tinygrad (torch computes in the dtype: integer results may differ by one)
  Tensor i = arange(0, static_cast<double>(steps), 1, dtypes::float32, device);
  double delta = steps > 1 ? (stop - start) / static_cast<double>(steps - 1) : 0.0;
  return (i * delta + start).cast(dtype);
}

Tensor Tensor::eye(int64_t n, std::optional<int64_t> cols, DType dtype, const std::string& device) {
  int64_t m = cols.value_or(n);
  if (n < 0 || m < 0) fail(ErrorCode::invalid_argument, "eye: sizes must be >= 0, got ", n, " x ", m);
  Tensor row = arange(0, static_cast<double>(n), 1, dtypes::int32, device).reshape({n, 1});
  Tensor col = arange(0, static_cast<double>(m), 1, dtypes::int32, device).reshape({1, m});
  return row.eq(col).cast(dtype);
}

Tensor Tensor::uniform(const Shape& shape, double low, double high, DType dtype, const std::string& device) {
  if (!(low < high)) fail(ErrorCode::invalid_argument, "uniform: requires low < high, got low ", low, ", high ", high);
  if (!dtype.is_float()) fail(ErrorCode::invalid_argument, "uniform: dtype must be a float type, got ", dtype.name(), " (randint gives integers)");
  return rand(shape, dtype, device) * (high - low) + low;
}

Tensor Tensor::normal(const Shape& shape, double mean, double std, DType dtype, const std::string& device) {
  if (!(std >= 0)) fail(ErrorCode::invalid_argument, "normal: requires std >= 0, got ", std);
  return randn(shape, dtype, device) * std + mean;
}

Tensor Tensor::randint(const Shape& shape, int64_t low, int64_t high, DType dtype, const std::string& device) {
  if (!dtype.is_int()) fail(ErrorCode::invalid_argument, "randint: dtype must be an integer type, got ", dtype.name());
  if (low >= high) fail(ErrorCode::invalid_argument, "randint: requires low < high, got low ", low, ", high ", high);
  // floor(u * range) with u in [0, 1): float32 holds every integer of a range up to 2^24; wider
  // ranges draw float64 (53 bits). The minimum guards the last ulp of rounding.
  double range = static_cast<double>(high) - static_cast<double>(low);
  if (!(range < 0x1p52)) fail(ErrorCode::invalid_argument, "randint: the range [", low, ", ", high, ") is wider than 2^52");
  DType compute = range <= 0x1p24 ? dtypes::float32 : dtypes::float64;
  Tensor k = (rand(shape, compute, device) * range).cast(dtypes::int64);
  return (k.minimum(scalar_like(k, static_cast<int64_t>(range) - 1)) + low).cast(dtype);
}

namespace {
int64_t fan_in(const Shape& shape) {
  int64_t f = 1;
  for (size_t i = 1; i < shape.size(); ++i) f *= shape[i];
  return f;
}
}  // namespace

Tensor Tensor::scaled_uniform(const Shape& shape, DType dtype, const std::string& device) {
  check_size(shape, dtype, "scaled_uniform");
  return uniform(shape, -1, 1, dtype, device) * std::pow(static_cast<double>(std::max<int64_t>(1, numel_of(shape))), -0.5);
}

Tensor Tensor::glorot_uniform(const Shape& shape, DType dtype, const std::string& device) {
  check_size(shape, dtype, "glorot_uniform");
  if (shape.empty()) fail(ErrorCode::invalid_argument, "glorot_uniform: needs at least one dimension (fan-out is shape[0])");
  double bound = std::sqrt(6.0 / static_cast<double>(std::max<int64_t>(1, shape[0] + fan_in(shape))));
  return uniform(shape, -bound, bound, dtype, device);
}

Tensor Tensor::kaiming_uniform(const Shape& shape, double a, DType dtype, const std::string& device) {
  check_size(shape, dtype, "kaiming_uniform");
  double bound = std::sqrt(6.0 / (1 + a * a) / static_cast<double>(std::max<int64_t>(1, fan_in(shape))));
  return uniform(shape, -bound, bound, dtype, device);
}

Tensor Tensor::kaiming_normal(const Shape& shape, double a, DType dtype, const std::string& device) {
  check_size(shape, dtype, "kaiming_normal");
  double std = std::sqrt(2.0 / (1 + a * a) / static_cast<double>(std::max<int64_t>(1, fan_in(shape))));
  return normal(shape, 0, std, dtype, device);
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& data, const Shape& shape, const std::string& device) {
  check_size(shape, dtype_of<T>(), "from_vector");
  if (static_cast<int64_t>(data.size()) != numel_of(shape))
    fail(ErrorCode::invalid_argument, "from_vector: ", data.size(), " values cannot fill shape ", shape_str(shape), " (",
         numel_of(shape), " elements)");
  std::string dev = canonical_device(device);
  DType d = dtype_of<T>();
  int64_t n = numel_of(shape);
  UOp host;
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    host = runtime::new_host_buffer(d, n, bytes.data());
  } else {
    host = runtime::new_host_buffer(d, n, data.data());
  }
  Tensor h = make(host, {n}, runtime::kHostDevice);
  return h.to(dev).reshape(shape);
}

Tensor Tensor::from_bytes(const void* data, uint64_t nbytes, DType dtype, const Shape& shape, const std::string& device) {
  if (dtype.is_ptr() || dtype.count() != 1 || dtype.is_void() || dtype.scalar() == Scalar::index)
    fail(ErrorCode::invalid_argument, "from_bytes: ", dtype.name(), " is not an element type of a tensor");
  check_size(shape, dtype, "from_bytes");
  int64_t n = numel_of(shape);
  uint64_t want = static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype.itemsize());
  if (nbytes != want)
    fail(ErrorCode::invalid_argument, "from_bytes: ", nbytes, " bytes cannot fill shape ", shape_str(shape), " of ",
         dtype.name(), " (", want, " bytes)");
  if (n && !data) fail(ErrorCode::invalid_argument, "from_bytes: no data for ", n, " elements");
  std::string dev = canonical_device(device);
  UOp host = runtime::new_host_buffer(dtype, n, data);
  Tensor h = make(host, {n}, runtime::kHostDevice);
  return h.to(dev).reshape(shape);
}

#define KILN_FROM_VECTOR(T) template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&, const std::string&);
KILN_FROM_VECTOR(bool)
KILN_FROM_VECTOR(int8_t)
KILN_FROM_VECTOR(int16_t)
KILN_FROM_VECTOR(int32_t)
KILN_FROM_VECTOR(int64_t)
KILN_FROM_VECTOR(uint8_t)
KILN_FROM_VECTOR(uint16_t)
KILN_FROM_VECTOR(uint32_t)
KILN_FROM_VECTOR(uint64_t)
KILN_FROM_VECTOR(float)
KILN_FROM_VECTOR(double)
#undef KILN_FROM_VECTOR

}  // namespace kiln
