// tensor/movement.cpp - views: reshape, permute, expand, pad, shrink, flip and the shorthands.
#include <algorithm>
#include <numeric>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

UOp var_of(const StateView& s, size_t i) { return i < s.vars.size() ? s.vars[i] : UOp(); }
const std::string& var_name(const UOp& bind) { return std::get<NamedInts>(bind.src(0).arg()).name; }

// Where each symbolic dimension of `s` lands in `target` (see reshape); throws when it cannot.
std::vector<UOp> map_symbolic_dims(const StateView& s, const Shape& target) {
  std::vector<UOp> out(target.size());
  size_t i = 0, j = 0;
  for (size_t p = 0; p < s.shape.size(); ++p) {
    if (!var_of(s, p)) continue;
    int64_t before = 1;
    for (size_t k = i; k < p; ++k) before *= s.shape[k];
    int64_t acc = 1;
    size_t q = j;
    for (; q < target.size(); ++q) {
      if (acc == before && target[q] == s.shape[p]) break;
      acc *= target[q];
    }
    if (q == target.size())
      fail(ErrorCode::invalid_argument, "reshape: ", shape_str(s.shape), " -> ", shape_str(target), " must keep the symbolic ",
           "dimension '", var_name(var_of(s, p)), "' (", s.shape[p], ") as its own dimension");
    out[q] = var_of(s, p);
    i = p + 1;
    j = q + 1;
  }
  return out;
}

}  // namespace

Tensor Tensor::reshape(const Shape& shape) const {
  const StateView s = st(*this);
  Shape target = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) fail(ErrorCode::invalid_argument, "reshape: only one dimension can be -1, got ", shape_str(shape));
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      fail(ErrorCode::invalid_argument, "reshape: invalid dimension ", target[i], " in ", shape_str(shape));
    } else {
      known = checked_mul(known, target[i], "reshape");
    }
  }
  int64_t n = numel_of(s.shape);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      fail(ErrorCode::invalid_argument, "reshape: cannot reshape ", shape_str(s.shape), " (", n, " elements) into ",
           shape_str(shape));
    target[infer] = n / known;
  }
  check_size(target, dtype(), "reshape");
  if (numel_of(target) != n)
    fail(ErrorCode::invalid_argument, "reshape: cannot reshape ", shape_str(s.shape), " (", n, " elements) into ",
         shape_str(shape), " (", numel_of(target), " elements)");
  if (target == s.shape) return *this;
  std::vector<UOp> vars = s.vars.empty() ? std::vector<UOp>{} : map_symbolic_dims(s, target);
  return shaped(*this, Ops::RESHAPE, target, vars);
}

Tensor Tensor::permute(const std::vector<int>& order) const {
  const StateView s = st(*this);
  int n = ndim();
  if (static_cast<int>(order.size()) != n)
    fail(ErrorCode::invalid_argument, "permute: order has ", order.size(), " axes, tensor ", shape_str(s.shape), " has ", n);
  std::vector<int64_t> arg(n);
  std::vector<bool> seen(n, false);
  for (int i = 0; i < n; ++i) {
    int a = norm_axis(order[i], s.shape, "permute");
    if (seen[a])
      fail(ErrorCode::invalid_argument, "permute: axis ", order[i], " appears twice in the order ", ints_str(order),
           " for a tensor of shape ", shape_str(s.shape), " (the order must list every axis once)");
    seen[a] = true;
    arg[i] = a;
  }
  bool identity = true;
  for (int i = 0; i < n; ++i) identity &= arg[i] == i;
  if (identity) return *this;
  Shape shape(n);
  std::vector<UOp> vars(s.vars.empty() ? 0 : n);
  for (int i = 0; i < n; ++i) {
    shape[i] = s.shape[arg[i]];
    if (!vars.empty()) vars[i] = s.vars[arg[i]];
  }
  return movement(*this, Ops::PERMUTE, arg, shape, vars);
}

Tensor Tensor::expand(const Shape& shape) const {
  const StateView s = st(*this);
  if (shape.size() < s.shape.size())
    fail(ErrorCode::invalid_argument, "expand: cannot expand ", shape_str(s.shape), " to fewer dimensions ", shape_str(shape));
  Tensor x = *this;
  if (shape.size() > s.shape.size()) {  // numpy: new leading dimensions
    Shape padded(shape.size() - s.shape.size(), 1);
    padded.insert(padded.end(), s.shape.begin(), s.shape.end());
    x = reshape(padded);
  }
  const StateView xs = st(x);
  Shape target(shape.size());
  std::vector<UOp> vars = xs.vars;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t want = shape[i] == -1 ? xs.shape[i] : shape[i];
    if (xs.shape[i] != want && xs.shape[i] != 1)
      fail(ErrorCode::invalid_argument, "expand: cannot expand ", shape_str(s.shape), " to ", shape_str(shape), ": dimension ", i,
           " is ", xs.shape[i], " (only size-1 dimensions can be expanded)");
    target[i] = want;
  }
  if (target == xs.shape) return x;
  check_size(target, dtype(), "expand");
  return shaped(x, Ops::EXPAND, target, vars);
}

Tensor Tensor::pad(const Pads& pads, double value) const {
  const StateView s = st(*this);
  if (pads.size() != s.shape.size())
    fail(ErrorCode::invalid_argument, "pad: ", pads.size(), " (before, after) pairs given for a tensor of shape ", shape_str(s.shape),
         " (expected one per dimension)");
  std::vector<int64_t> arg;
  Shape shape(s.shape.size());
  bool any = false;
  for (size_t i = 0; i < pads.size(); ++i) {
    auto [b, a] = pads[i];
    if (b < 0 || a < 0)
      fail(ErrorCode::invalid_argument, "pad: negative padding (", b, ", ", a, ") on dimension ", i, " of a tensor of shape ",
           shape_str(s.shape), "; padding must be >= 0 (use shrink to cut)");
    if ((b || a) && var_of(s, i))
      fail(ErrorCode::invalid_argument, "pad: cannot pad the symbolic dimension '", var_name(var_of(s, i)), "'");
    arg.push_back(b);
    arg.push_back(a);
    shape[i] = checked_add(checked_add(s.shape[i], b, "pad"), a, "pad");
    any |= b || a;
  }
  if (!any) return *this;
  check_size(shape, dtype(), "pad");
  Tensor padded = movement(*this, Ops::PAD, arg, shape, s.vars);
  if (value == 0) return padded;
  // non-zero padding: the padded region of a mask is false
  Tensor mask = movement(const_like(*this, 1, dtypes::bool_), Ops::PAD, arg, shape, s.vars);
  return where(mask, padded, const_like(padded, value));
}

Tensor Tensor::shrink(const Pads& start_end) const {
  const StateView s = st(*this);
  if (start_end.size() != s.shape.size())
    fail(ErrorCode::invalid_argument, "shrink: ", start_end.size(), " (start, end) pairs given for a tensor of shape ",
         shape_str(s.shape), " (expected one per dimension)");
  std::vector<int64_t> arg;
  std::vector<UOp> extra;
  Shape shape(s.shape.size());
  bool any = false;
  for (size_t i = 0; i < start_end.size(); ++i) {
    auto [b, e] = start_end[i];
    if (b < 0 || e < b || e > s.shape[i])
      fail(ErrorCode::invalid_argument, "shrink: range (", b, ", ", e, ") is invalid for dimension ", i, " of size ", s.shape[i],
           " (expected 0 <= start <= end <= size)");
    if (var_of(s, i) && !(b == 0 && e == s.shape[i]))
      fail(ErrorCode::invalid_argument, "shrink: cannot shrink the symbolic dimension '", var_name(var_of(s, i)), "'");
    arg.push_back(b);
    if (var_of(s, i)) {  // a symbolic dimension kept whole
      arg.push_back(-1 - static_cast<int64_t>(extra.size()));
      extra.push_back(var_of(s, i));
    } else {
      arg.push_back(e);
    }
    shape[i] = e - b;
    any |= b != 0 || e != s.shape[i];
  }
  if (!any) return *this;
  return movement(*this, Ops::SHRINK, arg, shape, s.vars, extra);
}

Tensor Tensor::shrink(int axis, const BoundVariable& end) const {
  const StateView s = st(*this);
  int a = norm_axis(axis, s.shape, "shrink");
  if (var_of(s, a)) fail(ErrorCode::invalid_argument, "shrink: dimension ", a, " is already symbolic");
  const auto& v = std::get<NamedInts>(end.uop().src(0).arg());
  if (v.ints[1] > s.shape[a])
    fail(ErrorCode::invalid_argument, "shrink: variable '", v.name, "' can reach ", v.ints[1], ", beyond dimension ", a, " of size ",
         s.shape[a]);
  std::vector<int64_t> arg;
  std::vector<UOp> extra, vars(s.shape.size());
  Shape shape = s.shape;
  for (size_t i = 0; i < s.shape.size(); ++i) {
    arg.push_back(0);
    if (static_cast<int>(i) == a) {
      arg.push_back(-1 - static_cast<int64_t>(extra.size()));
      extra.push_back(end.uop());
      vars[i] = end.uop();
      shape[i] = end.value();
    } else if (var_of(s, i)) {
      arg.push_back(-1 - static_cast<int64_t>(extra.size()));
      extra.push_back(var_of(s, i));
      vars[i] = var_of(s, i);
    } else {
      arg.push_back(s.shape[i]);
    }
  }
  return movement(*this, Ops::SHRINK, arg, shape, vars, extra);
}

Tensor Tensor::flip(const std::vector<int>& axes) const {
  const StateView s = st(*this);
  std::vector<int64_t> arg(s.shape.size(), 0);
  for (int a : axes) {
    int n = norm_axis(a, s.shape, "flip");
    if (arg[n])
      fail(ErrorCode::invalid_argument, "flip: axis ", a, " appears twice in axes ", ints_str(axes), " for a tensor of shape ",
           shape_str(s.shape), " (each axis may appear once)");
    arg[n] = 1;
  }
  if (std::all_of(arg.begin(), arg.end(), [](int64_t f) { return f == 0; })) return *this;
  return movement(*this, Ops::FLIP, arg, s.shape, s.vars);
}

Tensor Tensor::transpose(int a, int b) const {
  int n = ndim();
  a = norm_axis(a, shape(), "transpose");
  b = norm_axis(b, shape(), "transpose");
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[a], order[b]);
  return permute(order);
}

Tensor Tensor::flatten(int start, int end) const {
  int n = ndim();
  if (n == 0) return reshape({1});
  start = norm_axis(start, shape(), "flatten");
  end = norm_axis(end, shape(), "flatten");
  if (start > end) fail(ErrorCode::invalid_argument, "flatten: start ", start, " is after end ", end);
  const Shape& s = shape();
  Shape out(s.begin(), s.begin() + start);
  int64_t p = 1;
  for (int i = start; i <= end; ++i) p *= s[i];
  out.push_back(p);
  out.insert(out.end(), s.begin() + end + 1, s.end());
  return reshape(out);
}

Tensor Tensor::squeeze(int axis) const {
  int a = norm_axis(axis, shape(), "squeeze");
  if (shape()[a] != 1) fail(ErrorCode::invalid_argument, "squeeze: dimension ", a, " of ", shape_str(shape()), " is not 1");
  Shape out = shape();
  out.erase(out.begin() + a);
  return reshape(out);
}

Tensor Tensor::unsqueeze(int axis) const {
  int a = norm_axis(axis, shape(), "unsqueeze", true);
  Shape out = shape();
  out.insert(out.begin() + a, 1);
  return reshape(out);
}

}  // namespace kiln
