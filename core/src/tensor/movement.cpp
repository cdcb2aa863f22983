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

// `want` (one entry per dimension of `target`) checked as the placement of the symbolic dimensions of
// `s`: the same variables in the same order, each its own dimension (see reshape(shape, dims)).
std::vector<UOp> placed_symbolic_dims(const StateView& s, const Shape& target, std::vector<UOp> want) {
  size_t i = 0, j = 0;
  for (size_t p = 0; p < s.shape.size(); ++p) {
    if (!var_of(s, p)) continue;
    size_t q = j;
    while (q < want.size() && !want[q]) ++q;
    if (q == want.size() || want[q] != var_of(s, p))
      fail(ErrorCode::invalid_argument, "reshape: ", shape_str(s.shape), " -> ", shape_str(target), " must place the symbolic ",
           "dimension '", var_name(var_of(s, p)), "' (", s.shape[p], ")",
           q == want.size() ? std::string(" (no dimension names it)") : " where dimension " + std::to_string(q) + " names '" + var_name(want[q]) + "'");
    int64_t before = 1, acc = 1;
    for (size_t k = i; k < p; ++k) before *= s.shape[k];
    for (size_t k = j; k < q; ++k) acc *= target[k];
    if (before != acc || target[q] != s.shape[p])
      fail(ErrorCode::invalid_argument, "reshape: ", shape_str(s.shape), " -> ", shape_str(target), " must keep the symbolic ",
           "dimension '", var_name(var_of(s, p)), "' (", s.shape[p], ") as its own dimension, at ", q);
    i = p + 1;
    j = q + 1;
  }
  int64_t rest_s = 1, rest_t = 1;  // after the last one (equal unless a variable is bound to 0)
  for (size_t k = i; k < s.shape.size(); ++k) rest_s *= s.shape[k];
  for (size_t k = j; k < target.size(); ++k) rest_t *= target[k];
  if (rest_s != rest_t)
    fail(ErrorCode::invalid_argument, "reshape: ", shape_str(s.shape), " -> ", shape_str(target),
         " moves elements across a symbolic dimension");
  for (size_t q = j; q < want.size(); ++q)
    if (want[q])
      fail(ErrorCode::invalid_argument, "reshape: dimension ", q, " of ", shape_str(target), " names the variable '", var_name(want[q]),
           "', which is not a symbolic dimension of ", shape_str(s.shape), " in that order");
  return want;
}

// The concrete target of reshape: one -1 inferred; an error for anything else negative or a count
// that does not match.
Shape reshape_target(const StateView& s, const Shape& shape, DType dtype) {
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
  check_size(target, dtype, "reshape");
  if (numel_of(target) != n)
    fail(ErrorCode::invalid_argument, "reshape: cannot reshape ", shape_str(s.shape), " (", n, " elements) into ",
         shape_str(shape), " (", numel_of(target), " elements)");
  return target;
}

}  // namespace

Tensor Tensor::reshape(const Shape& shape) const {
  const StateView s = st(*this);
  const Shape target = reshape_target(s, shape, dtype());
  if (target == s.shape) return *this;
  std::vector<UOp> vars = s.vars.empty() ? std::vector<UOp>{} : map_symbolic_dims(s, target);
  return shaped(*this, Ops::RESHAPE, target, vars);
}

Tensor Tensor::reshape(const Shape& shape, const std::vector<std::optional<BoundVariable>>& dims) const {
  const StateView s = st(*this);
  if (dims.size() != shape.size())
    fail(ErrorCode::invalid_argument, "reshape: ", dims.size(), " symbolic dimension entries for the shape ", shape_str(shape),
         " (one per dimension, nullopt for a fixed size)");
  const Shape target = reshape_target(s, shape, dtype());
  std::vector<UOp> want(target.size());
  for (size_t q = 0; q < dims.size(); ++q)
    if (dims[q]) {
      if (target[q] != dims[q]->value())
        fail(ErrorCode::invalid_argument, "reshape: dimension ", q, " of ", shape_str(target), " is '", dims[q]->name(), "' bound to ",
             dims[q]->value(), " (the sizes must agree)");
      want[q] = dims[q]->uop();
    }
  std::vector<UOp> vars = placed_symbolic_dims(s, target, std::move(want));
  if (std::none_of(vars.begin(), vars.end(), [](const UOp& v) { return static_cast<bool>(v); })) vars.clear();
  if (target == s.shape && vars == s.vars) return *this;
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
    if (xs.shape[i] != want && var_of(xs, i))  // even bound to 1: its value varies between calls
      fail(ErrorCode::invalid_argument, "expand: cannot expand ", shape_str(s.shape), " to ", shape_str(shape), ": dimension ", i,
           " is the symbolic '", var_name(var_of(xs, i)), "' (", xs.shape[i], "), which keeps its size");
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

Tensor Tensor::expand(int axis, const BoundVariable& size) const {
  const StateView s = st(*this);
  int a = norm_axis(axis, s.shape, "expand");
  if (s.shape[a] != 1 || var_of(s, a))
    fail(ErrorCode::invalid_argument, "expand: dimension ", a, " of ", shape_str(s.shape), " is ",
         var_of(s, a) ? "symbolic" : "not 1", "; only a fixed size-1 dimension can become the symbolic '", size.name(), "'");
  Shape shape = s.shape;
  shape[a] = size.value();
  std::vector<UOp> vars = s.vars.empty() ? std::vector<UOp>(s.shape.size()) : s.vars;
  vars[a] = size.uop();
  check_size(shape, dtype(), "expand");
  return shaped(*this, Ops::EXPAND, shape, vars);
}

std::optional<BoundVariable> Tensor::symbolic_dim(int axis) const {
  const StateView s = st(*this);
  UOp v = var_of(s, norm_axis(axis, s.shape, "symbolic_dim"));
  if (!v) return std::nullopt;
  return BoundVariable(v);
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

// squeeze and unsqueeze know where each dimension goes: they place symbolic dimensions themselves
// (reshape's guess is ambiguous when a variable is bound to 1).
Tensor Tensor::squeeze(int axis) const {
  const StateView s = st(*this);
  int a = norm_axis(axis, s.shape, "squeeze");
  if (var_of(s, a))
    fail(ErrorCode::invalid_argument, "squeeze: dimension ", a, " of ", shape_str(s.shape), " is the symbolic '", var_name(var_of(s, a)),
         "' (bound to ", s.shape[a], "), which is not always 1");
  if (s.shape[a] != 1) fail(ErrorCode::invalid_argument, "squeeze: dimension ", a, " of ", shape_str(s.shape), " is not 1");
  Shape out = s.shape;
  out.erase(out.begin() + a);
  if (s.vars.empty()) return reshape(out);
  std::vector<UOp> vars = s.vars;
  vars.erase(vars.begin() + a);
  return shaped(*this, Ops::RESHAPE, out, vars);
}

Tensor Tensor::unsqueeze(int axis) const {
  const StateView s = st(*this);
  int a = norm_axis(axis, s.shape, "unsqueeze", true);
  Shape out = s.shape;
  out.insert(out.begin() + a, 1);
  if (s.vars.empty()) return reshape(out);
  std::vector<UOp> vars = s.vars;
  vars.insert(vars.begin() + a, UOp());
  return shaped(*this, Ops::RESHAPE, out, vars);
}

}  // namespace kiln
