// ir/build.cpp - UOp construction helpers: constants, ALU with dtype inference, replace, ranges.
#include <cmath>

#include "kiln/uop.hpp"
#include "support/check.hpp"

namespace kiln {

std::string arg_str(const Arg& a) {
  switch (a.index()) {
    case 0: return "";
    case 1: return std::to_string(std::get<int64_t>(a));
    case 2: {
      double v = std::get<Float>(a).v;
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      std::string s = cat(v);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      if (v == 0 && std::signbit(v)) s = "-0.0";
      return s;
    }
    case 3: return std::get<bool>(a) ? "True" : "False";
    case 4: return cat('"', std::get<std::string>(a), '"');
    case 5: {
      std::string s = "(";
      const auto& v = std::get<std::vector<int64_t>>(a);
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + (v.size() == 1 ? ",)" : ")");
    }
    case 6: {  // (uop.cpp asserts that NamedInts is the last alternative)
      const auto& n = std::get<NamedInts>(a);
      std::string s = cat("(\"", n.name, '"');
      for (int64_t x : n.ints) s += ", " + std::to_string(x);
      return s + ")";
    }
  }
  KILN_UNREACHABLE("arg_str: Arg alternative ", a.index());
}

UOp UOp::replace_src(std::span<const UOp> src) const { return make(op(), dtype(), src, arg(), tag()); }
UOp UOp::replace_dtype(DType d) const { return make(op(), d, src(), arg(), tag()); }
UOp UOp::replace_arg(Arg a) const { return make(op(), dtype(), src(), std::move(a), tag()); }
UOp UOp::replace_tag(int32_t t) const { return make(op(), dtype(), src(), arg(), t); }

UOp UOp::cint(DType d, int64_t v) {
  if (d.is_float()) return cfloat(d, static_cast<double>(v));
  if (d.is_bool()) return make(Ops::CONST, d, {}, Arg{v != 0});
  return make(Ops::CONST, d, {}, Arg{v});
}
UOp UOp::cfloat(DType d, double v) {
  if (!d.is_float()) return cvalue(d, v);
  return make(Ops::CONST, d, {}, Arg{Float(v)});
}
UOp UOp::cbool(bool v, int count) { return make(Ops::CONST, dtypes::bool_.vec(count), {}, Arg{v}); }
UOp UOp::cvalue(DType d, double v) {
  if (d.is_float()) return make(Ops::CONST, d, {}, Arg{Float(v)});
  if (d.is_bool()) return make(Ops::CONST, d, {}, Arg{v != 0});
  KILN_CHECK(std::isfinite(v), "non-finite constant ", v, " for integer dtype ", d.name());
  return make(Ops::CONST, d, {}, Arg{static_cast<int64_t>(v)});
}
UOp UOp::const_like(int64_t v) const { return cint(dtype(), v); }
UOp UOp::const_like_f(double v) const { return cvalue(dtype(), v); }

static DType infer_alu_dtype(Ops op, std::span<const UOp> src) {
  KILN_CHECK(!src.empty(), "ALU op ", op_name(op), " without sources");
  if (groups::Comparison.has(op)) return dtypes::bool_.vec(src[0].dtype().count());
  if (op == Ops::WHERE) return src[1].dtype();
  if (op == Ops::THREEFRY) return dtypes::uint64.vec(src[0].dtype().count());
  return src[0].dtype();
}

UOp UOp::alu(Ops op, std::span<const UOp> src) { return make(op, infer_alu_dtype(op, src), src); }
UOp UOp::alu(Ops op, std::initializer_list<UOp> src) { return alu(op, std::span<const UOp>(src.begin(), src.size())); }
UOp UOp::cast(DType d) const { return make(Ops::CAST, d, {*this}); }
UOp UOp::bitcast(DType d) const { return make(Ops::BITCAST, d, {*this}); }
UOp UOp::neg() const {
  // integer negation is x*-1, the normal form the symbolic rules work in
  if (dtype().is_int()) return alu(Ops::MUL, {*this, const_like(-1)});
  return alu(Ops::NEG, {*this});
}
UOp UOp::minimum(const UOp& o) const { return (neg().maximum(o.neg())).neg(); }
UOp UOp::logical_not() const { return ne(cbool(true, dtype().count())); }

UOp UOp::range(int64_t size, int64_t axis, AxisType type) { return range(cint(dtypes::index, size), axis, type); }
UOp UOp::range(const UOp& size, int64_t axis, AxisType type) {
  return make(Ops::RANGE, dtypes::index, {size}, Arg{std::vector<int64_t>{axis, static_cast<int64_t>(type)}});
}
UOp UOp::variable(const std::string& name, int64_t min, int64_t max, DType d) {
  return make(Ops::DEFINE_VAR, d, {}, Arg{NamedInts{name, {min, max}}});
}
UOp UOp::sink(std::span<const UOp> src, Arg arg) { return make(Ops::SINK, dtypes::void_, src, std::move(arg)); }

UOp operator+(const UOp& a, const UOp& b) { return UOp::alu(Ops::ADD, {a, b}); }
UOp operator-(const UOp& a, const UOp& b) { return UOp::alu(Ops::ADD, {a, b.neg()}); }
UOp operator*(const UOp& a, const UOp& b) { return UOp::alu(Ops::MUL, {a, b}); }
UOp operator+(const UOp& a, int64_t b) { return a + a.const_like(b); }
UOp operator-(const UOp& a, int64_t b) { return a + a.const_like(-b); }
UOp operator*(const UOp& a, int64_t b) { return a * a.const_like(b); }
UOp operator-(const UOp& a) { return a.neg(); }
UOp operator&(const UOp& a, const UOp& b) { return UOp::alu(Ops::AND, {a, b}); }
UOp operator|(const UOp& a, const UOp& b) { return UOp::alu(Ops::OR, {a, b}); }
UOp operator^(const UOp& a, const UOp& b) { return UOp::alu(Ops::XOR, {a, b}); }

}  // namespace kiln
