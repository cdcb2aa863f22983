// tensor/tensor_state.cpp - shared graph-building helpers of the frontend.
#include "tensor/tensor_state.hpp"

#include <algorithm>

#include "runtime/runtime.hpp"
#include "tensor/multi.hpp"

namespace kiln::detail {

Tensor make(UOp uop, Shape shape, std::string device, std::vector<UOp> vars) {
  check_size(shape, uop.dtype(), "tensor");  // the ops check first, naming themselves; this is the net
  bool any = false;
  for (const UOp& v : vars) any |= static_cast<bool>(v);
  if (!any) vars.clear();
  auto s = std::make_shared<TensorState>(TensorGraph{std::move(uop), std::move(vars)}, std::move(shape), std::move(device));
  register_state(s);
  return Tensor(std::move(s));
}

std::string canonical_device(const std::string& device) {
  if (!is_placement(device)) return runtime::canonical_device(device);
  std::vector<std::string> devs;
  for (const std::string& d : split_placement(device)) {
    std::string c = runtime::canonical_device(d);
    if (std::find(devs.begin(), devs.end(), c) != devs.end())
      fail(ErrorCode::invalid_argument, "placement \"", device, "\" names ", c, " twice; each device holds one part, so name each once");
    devs.push_back(c);
  }
  return join_placement(devs);
}

UOp TensorState::mstack() const {
  std::vector<UOp> src;
  for (const Tensor& p : multi->parts) src.push_back(p.state()->uop());
  return UOp::make(Ops::MSTACK, dtype, src, Arg{static_cast<int64_t>(multi->axis ? *multi->axis : -1)});
}

UOp device_node(const std::string& device) { return UOp::make(Ops::DEVICE, dtypes::void_, {}, Arg{device}); }

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

int64_t numel_of(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

namespace {
[[noreturn]] void too_big(const char* op, const std::string& what) {
  fail(ErrorCode::invalid_argument, op, ": ", what, " does not fit in a 64-bit signed integer; a tensor holds at most ",
       "2^63 - 1 bytes (use smaller dimensions)");
}
}  // namespace

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) too_big(op, cat("the size ", a, " * ", b));
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) too_big(op, cat("the size ", a, " + ", b));
  return r;
}

void check_size(const Shape& shape, DType dtype, const char* op) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorCode::invalid_argument, op, ": shape ", shape_str(shape), " has a negative dimension");
    zero |= d == 0;
  }
  if (zero) return;  // no elements, whatever the other dimensions
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) too_big(op, cat("the element count of shape ", shape_str(shape)));
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype.itemsize()), &n))
    too_big(op, cat("the size in bytes of shape ", shape_str(shape), " of ", dtype.name()));
}

int norm_axis(int axis, const Shape& shape, const char* op, bool insert) {
  int ndim = static_cast<int>(shape.size()) + (insert ? 1 : 0);
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    fail(ErrorCode::out_of_range, op, ": axis ", axis, " is out of range for a tensor of shape ", shape_str(shape), " with ",
         shape.size(), " dimensions (expected ", -ndim, " <= axis < ", ndim, ")");
  return a;
}

std::string ints_str(const std::vector<int>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + (v.size() == 1 ? ",)" : ")");
}

Tensor const_tensor(double value, DType dtype, const Shape& shape, const std::string& device) {
  if (is_placement(device)) {  // the same constant on each device (replicated)
    std::vector<Tensor> parts;
    for (const std::string& d : split_placement(device)) parts.push_back(const_tensor(value, dtype, shape, d));
    return make_multi(std::move(parts), std::nullopt);
  }
  UOp c = UOp::make(Ops::CONST, dtype, {device_node(device)},
                    dtype.is_float() ? Arg{Float(value)} : dtype.is_bool() ? Arg{value != 0} : Arg{static_cast<int64_t>(value)});
  Tensor t = make(c, {}, device);
  if (shape.empty()) return t;
  Shape ones(shape.size(), 1);
  t = movement(t, Ops::RESHAPE, ones, ones, {});
  return movement(t, Ops::EXPAND, shape, shape, {});
}

Tensor const_like(const Tensor& like, double value, DType dtype) {
  const StateView s = st(like);
  Tensor c = const_tensor(value, dtype, {}, s.device);
  if (s.shape.empty()) return c;
  Shape ones(s.shape.size(), 1);
  c = movement(c, Ops::RESHAPE, ones, ones, {});
  return shaped(c, Ops::EXPAND, s.shape, s.vars);  // the (possibly symbolic) shape of `like`
}
Tensor const_like(const Tensor& like, double value) { return const_like(like, value, like.dtype()); }

Tensor movement(const Tensor& x, Ops op, const std::vector<int64_t>& arg, const Shape& new_shape,
                const std::vector<UOp>& new_vars, const std::vector<UOp>& arg_vars) {
  if (multi_of(x))
    return multi_movement(x, op, arg, !arg_vars.empty() || std::any_of(new_vars.begin(), new_vars.end(), [](const UOp& v) { return static_cast<bool>(v); }));
  const StateView s = st(x);
  std::vector<UOp> src{s.uop};
  src.insert(src.end(), arg_vars.begin(), arg_vars.end());
  UOp u = UOp::make(op, s.uop.dtype(), src, Arg{arg});
  return make(u, new_shape, s.device, new_vars);
}

Tensor shaped(const Tensor& x, Ops op, const Shape& dims, const std::vector<UOp>& vars) {
  std::vector<int64_t> arg(dims.begin(), dims.end());
  std::vector<UOp> extra;
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i]) {
      arg[i] = -1 - static_cast<int64_t>(extra.size());
      extra.push_back(vars[i]);
    }
  return movement(x, op, arg, dims, vars, extra);
}

Tensor alu(Ops op, const std::vector<Tensor>& srcs, DType out) {
  if (std::any_of(srcs.begin(), srcs.end(), [](const Tensor& t) { return multi_of(t) != nullptr; })) return multi_alu(op, srcs, out);
  std::vector<UOp> u, vars;
  const TensorState& s = *srcs[0].state();
  // a symbolic dimension of any operand is the result's
  for (const Tensor& t : srcs) {
    StateView v = st(t);
    u.push_back(std::move(v.uop));
    if (!v.vars.empty()) vars = std::move(v.vars);
  }
  return make(UOp::make(op, out, u), s.shape, s.device, vars);
}

Tensor reduce_axis(const Tensor& x, Ops op, const std::vector<int>& axes) {
  if (multi_of(x)) return multi_reduce(x, op, axes);
  const StateView s = st(x);
  Shape shape = s.shape;
  std::vector<UOp> vars = s.vars;
  std::vector<int64_t> arg{static_cast<int64_t>(op)};
  for (int a : axes) {
    arg.push_back(a);
    shape[a] = 1;
    if (!vars.empty()) vars[a] = UOp();
  }
  return make(UOp::make(Ops::REDUCE_AXIS, s.uop.dtype(), {s.uop}, Arg{arg}), shape, s.device, vars);
}

namespace {
UOp var_at(const StateView& s, size_t i) { return i < s.vars.size() ? s.vars[i] : UOp(); }
std::string dim_str(int64_t size, const UOp& var) {
  if (!var) return std::to_string(size);
  return "'" + std::get<NamedInts>(var.src(0).arg()).name + "' (" + std::to_string(size) + ")";
}
}  // namespace

std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, const char* op) {
  const StateView sa = st(a), sb = st(b);
  // (a multi-device operand may meet one placed otherwise: multi_alu copies or reshards the other)
  if (sa.device != sb.device && !multi_of(a) && !multi_of(b))
    fail(ErrorCode::invalid_argument, op, ": operands are on different devices (", sa.device, " and ", sb.device,
         "); move one with .to(\"", sa.device, "\")");
  if (sa.shape == sb.shape && sa.vars == sb.vars) return {a, b};
  size_t n = std::max(sa.shape.size(), sb.shape.size());
  Shape out(n), pa(n, 1), pb(n, 1);
  std::vector<UOp> va(n), vb(n), vout(n);
  for (size_t i = 0; i < sa.shape.size(); ++i) pa[n - sa.shape.size() + i] = sa.shape[i], va[n - sa.shape.size() + i] = var_at(sa, i);
  for (size_t i = 0; i < sb.shape.size(); ++i) pb[n - sb.shape.size() + i] = sb.shape[i], vb[n - sb.shape.size() + i] = var_at(sb, i);
  for (size_t i = 0; i < n; ++i) {
    // a symbolic dimension broadcasts only against itself or a fixed 1: bound to 1 it is not a 1 to
    // stretch (its next value need not be), and a fixed size equal to its value is a coincidence
    bool same = pa[i] == pb[i] && va[i] == vb[i];
    if (same || (pb[i] == 1 && !vb[i])) out[i] = pa[i], vout[i] = va[i];
    else if (pa[i] == 1 && !va[i]) out[i] = pb[i], vout[i] = vb[i];
    else if (va[i] || vb[i])
      fail(ErrorCode::invalid_argument, op, ": shapes ", shape_str(sa.shape), " and ", shape_str(sb.shape),
           " cannot be broadcast: dimension ", i, " is ", dim_str(pa[i], va[i]), " vs ", dim_str(pb[i], vb[i]),
           " (a symbolic dimension meets only the same variable or a fixed 1)");
    else
      fail(ErrorCode::invalid_argument, op, ": shapes ", shape_str(sa.shape), " and ", shape_str(sb.shape),
           " cannot be broadcast: dimension ", i, " is ", pa[i], " vs ", pb[i], " (sizes must match or one must be 1)");
  }
  check_size(out, least_upper_dtype(a.dtype(), b.dtype()), op);
  auto fit = [&](const Tensor& t, const Shape& padded, const std::vector<UOp>& pv) {
    Tensor r = st(t).shape.size() != n ? shaped(t, Ops::RESHAPE, padded, pv) : t;
    return padded == out && pv == vout ? r : shaped(r, Ops::EXPAND, out, vout);
  };
  return {fit(a, pa, va), fit(b, pb, vb)};
}

std::pair<Tensor, Tensor> promote(const Tensor& a, const Tensor& b, const char* op) {
  auto [x, y] = broadcast(a, b, op);
  DType d = least_upper_dtype(x.dtype(), y.dtype());
  if (!(x.dtype() == d)) x = x.cast(d);
  if (!(y.dtype() == d)) y = y.cast(d);
  return {x, y};
}

}  // namespace kiln::detail
