// runtime/reference.cpp - the kernel AST interpreter.
#include "runtime/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/alu.hpp"
#include "ir/traverse.hpp"
#include "support/check.hpp"
#include "support/flat_map.hpp"
#include "support/half.hpp"

namespace kiln::runtime {

namespace {

Value read_elem(const void* base, DType d, int64_t i) {
  const char* p = static_cast<const char*>(base) + i * d.itemsize();
  switch (d.scalar()) {
    case Scalar::bool_: return Value{*reinterpret_cast<const uint8_t*>(p) != 0};
    case Scalar::int8: return Value{int64_t{*reinterpret_cast<const int8_t*>(p)}};
    case Scalar::int16: { int16_t v; std::memcpy(&v, p, 2); return Value{int64_t{v}}; }
    case Scalar::int32: { int32_t v; std::memcpy(&v, p, 4); return Value{int64_t{v}}; }
    case Scalar::int64: { int64_t v; std::memcpy(&v, p, 8); return Value{v}; }
    case Scalar::uint8: return Value{int64_t{*reinterpret_cast<const uint8_t*>(p)}};
    case Scalar::uint16: { uint16_t v; std::memcpy(&v, p, 2); return Value{int64_t{v}}; }
    case Scalar::uint32: { uint32_t v; std::memcpy(&v, p, 4); return Value{int64_t{v}}; }
    case Scalar::uint64: { uint64_t v; std::memcpy(&v, p, 8); return Value{static_cast<int64_t>(v)}; }
    case Scalar::float16: { uint16_t v; std::memcpy(&v, p, 2); return Value{static_cast<double>(half_to_float(v))}; }
    case Scalar::bfloat16: { uint16_t v; std::memcpy(&v, p, 2); return Value{static_cast<double>(bf16_to_float(v))}; }
    case Scalar::float32: { float v; std::memcpy(&v, p, 4); return Value{static_cast<double>(v)}; }
    case Scalar::float64: { double v; std::memcpy(&v, p, 8); return Value{v}; }
    case Scalar::void_: case Scalar::index: break;
  }
  KILN_UNREACHABLE("reference executor: cannot load ", d.name());
}

void write_elem(void* base, DType d, int64_t i, const Value& val) {
  char* p = static_cast<char*>(base) + i * d.itemsize();
  Value v = normalize(d, val);
  switch (d.scalar()) {
    case Scalar::bool_: *reinterpret_cast<uint8_t*>(p) = std::get<bool>(v); break;
    case Scalar::int8: case Scalar::uint8: { uint8_t x = static_cast<uint8_t>(std::get<int64_t>(v)); std::memcpy(p, &x, 1); break; }
    case Scalar::int16: case Scalar::uint16: { uint16_t x = static_cast<uint16_t>(std::get<int64_t>(v)); std::memcpy(p, &x, 2); break; }
    case Scalar::int32: case Scalar::uint32: { uint32_t x = static_cast<uint32_t>(std::get<int64_t>(v)); std::memcpy(p, &x, 4); break; }
    case Scalar::int64: case Scalar::uint64: { int64_t x = std::get<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case Scalar::float16: { uint16_t x = float_to_half(static_cast<float>(std::get<double>(v))); std::memcpy(p, &x, 2); break; }
    case Scalar::bfloat16: { uint16_t x = float_to_bf16(static_cast<float>(std::get<double>(v))); std::memcpy(p, &x, 2); break; }
    case Scalar::float32: { float x = static_cast<float>(std::get<double>(v)); std::memcpy(p, &x, 4); break; }
    case Scalar::float64: { double x = std::get<double>(v); std::memcpy(p, &x, 8); break; }
    case Scalar::void_: case Scalar::index: KILN_UNREACHABLE("reference executor: cannot store ", d.name());
  }
}

Value identity(Ops op, DType d) {
  if (op == Ops::ADD) return normalize(d, Value{int64_t{0}});
  if (op == Ops::MUL) return normalize(d, Value{int64_t{1}});
  if (d.is_float()) return Value{-std::numeric_limits<double>::infinity()};
  if (d.is_bool()) return Value{false};
  return Value{d.imin()};
}

class Interp {
 public:
  Interp(const UOp& ast, const std::vector<HostBuffer>& bufs, const std::vector<std::pair<std::string, int64_t>>& vars)
      : name_(ast.op() == Ops::SINK && std::holds_alternative<std::string>(ast.arg()) ? ast.arg_string() : "kernel"),
        bufs_(bufs), vars_(vars) {
    for (const UOp& n : toposort(ast))
      if (n.op() == Ops::STORE && n.src(0).op() == Ops::INDEX && n.src(0).src(0).op() == Ops::PARAM)
        stored_.push_back(n.src(0).src(0).arg_int());
  }

  void run(const UOp& u) {
    switch (u.op()) {
      case Ops::SINK: case Ops::GROUP:
        for (const UOp& s : u.src()) run(s);
        return;
      case Ops::END: loop(u, 1, [&] { run(u.src(0)); }); return;
      case Ops::STORE: {
        const UOp& idx = u.src(0);
        if (u.nsrc() > 2 && !std::get<bool>(eval(u.src(2)))) return;
        auto [slot, i, ok] = address(idx);
        if (!ok) return;
        write_elem(bufs_[slot].data, idx.dtype().base(), i, eval(u.src(1)));
        return;
      }
      case Ops::NOOP: return;
      default: KILN_UNREACHABLE("reference executor: unexpected statement ", op_name(u.op()));
    }
  }

 private:
  // Runs body for every value of the RANGEs u.src(first..): outer ranges first.
  template <typename F>
  void loop(const UOp& u, size_t first, F&& body) {
    if (first == u.nsrc()) return body();
    const UOp& r = u.src(first);
    int64_t n = as_int(eval(r.src(0)));
    for (int64_t i = 0; i < n; ++i) {
      ranges_[r.node()] = i;
      ++stamp_;
      loop(u, first + 1, body);
    }
  }

  struct Addr {
    size_t slot;
    int64_t index;
    bool valid;
  };
  Addr address(const UOp& idx) {
    KILN_CHECK(idx.op() == Ops::INDEX && idx.src(0).op() == Ops::PARAM, "reference executor: address is ", op_name(idx.op()));
    size_t slot = static_cast<size_t>(idx.src(0).arg_int());
    KILN_CHECK(slot < bufs_.size(), "kernel ", name_, " uses buffer slot ", slot, " but ", bufs_.size(), " were given");
    if (idx.nsrc() > 2 && !std::get<bool>(eval(idx.src(2)))) return {slot, 0, false};
    int64_t i = as_int(eval(idx.src(1)));
    int64_t n = static_cast<int64_t>(bufs_[slot].bytes / idx.dtype().base().itemsize());
    if (i < 0 || i >= n)
      fail(ErrorCode::internal, "reference executor: kernel ", name_, " accesses buffer ", slot, " at element ", i,
           " (it has ", n, ")");
    return {slot, i, true};
  }

  const Value* cached(const UOp& u) {
    auto* slot = cache_.find(u.node());
    return slot && slot->first == stamp_ ? &slot->second : nullptr;
  }

  // Chains of ALU ops (a million deep after a long lazy chain) are evaluated bottom-up with an
  // explicit stack, so compute() finds their sources cached and never recurses through them.
  // Other nodes (LOAD, REDUCE, ...) evaluate their sources themselves, under their own gates and
  // loops; those sources are shallow index math or start a new iterative eval.
  Value eval(const UOp& u) {
    if (const Value* v = cached(u)) return *v;
    auto descends = [](const UOp& x) { return groups::ALU.has(x.op()) || x.op() == Ops::CAST || x.op() == Ops::BITCAST; };
    std::vector<std::pair<UOp, bool>> stack{{u, false}};
    while (!stack.empty()) {
      auto [x, expanded] = std::move(stack.back());
      stack.pop_back();
      if (cached(x)) continue;
      if (!expanded && descends(x)) {
        stack.push_back({x, true});
        for (const UOp& s : x.src())
          if (!cached(s)) stack.push_back({s, false});
        continue;
      }
      Value v = compute(x);
      auto& slot = *cache_.emplace(x.node()).first;  // compute may have grown the map
      slot.first = stamp_;
      slot.second = std::move(v);
    }
    return *cached(u);
  }

  Value compute(const UOp& u) {
    switch (u.op()) {
      case Ops::CONST: return normalize(u.dtype(), value_of(u));
      case Ops::RANGE: {
        const int64_t* v = ranges_.find(u.node());
        KILN_CHECK(v, "kernel ", name_, ": RANGE used outside its loop");
        return Value{*v};
      }
      case Ops::DEFINE_VAR: {
        const std::string& n = std::get<NamedInts>(u.arg()).name;
        for (const auto& [name, v] : vars_)
          if (name == n) return Value{v};
        fail(ErrorCode::invalid_argument, "kernel ", name_, " needs a value for variable '", n, "'");
      }
      case Ops::LOAD: {
        auto [slot, i, ok] = address(u.src(0));
        if (!ok) return u.nsrc() > 1 ? eval(u.src(1)) : normalize(u.dtype(), Value{int64_t{0}});
        return read_elem(bufs_[slot].data, u.src(0).dtype().base(), i);
      }
      case Ops::REDUCE: {
        // a reduce nested in a loop it does not depend on (softmax's row max, read for every
        // column of the row) is computed once per value of the ranges it does depend on: without
        // this a nested reduce cost its length again per element (a 256x128x128 softmax: minutes)
        ReduceMemo& memo = reduce_memo(u);
        std::vector<int64_t> key;
        if (memo.reusable) {
          for (const UOpNode* r : memo.free) key.push_back(*ranges_.find(r));
          if (memo.valid && key == memo.key) return memo.value;
        }
        Ops op = static_cast<Ops>(u.arg_ints()[0]);
        DType d = u.dtype();
        Value acc = identity(op, d);
        loop(u, 1, [&] {
          Value x = eval(u.src(0));
          Value pair[2] = {acc, x};
          acc = *exec_alu(op, d, d, std::span<const Value>(pair, 2));
        });
        if (memo.reusable) memo.key = std::move(key), memo.value = acc, memo.valid = true;
        return acc;
      }
      case Ops::CAST: {
        auto r = exec_cast(u.src(0).dtype().scalar_type(), u.dtype().scalar_type(), eval(u.src(0)));
        if (!r) fail(ErrorCode::out_of_range, "kernel ", name_, ": cast of an out-of-range value to ", u.dtype().name());
        return *r;
      }
      case Ops::BITCAST: return *exec_bitcast(u.src(0).dtype(), u.dtype(), eval(u.src(0)));
      default: break;
    }
    if (!groups::ALU.has(u.op())) fail(ErrorCode::internal, "reference executor: cannot run ", op_name(u.op()));
    Value vs[3];
    for (size_t i = 0; i < u.nsrc(); ++i) vs[i] = eval(u.src(i));
    DType in = u.op() == Ops::WHERE ? u.src(1).dtype() : u.src(0).dtype();
    auto r = exec_alu(u.op(), u.dtype().scalar_type(), in.scalar_type(), std::span<const Value>(vs, u.nsrc()));
    if (r.is_unimplemented())
      fail(ErrorCode::internal, "reference executor: kernel ", name_, ": ", op_name(u.op()), " is not implemented for ",
           in.scalar_type().name(), " (ir/alu.cpp gives it no semantics; the verifier should refuse it)");
    if (!r) fail(ErrorCode::out_of_range, "kernel ", name_, ": ", op_name(u.op()), " is undefined for these operands (",
                 "a shift by the operand's width or more)");
    return *r;
  }

  // What a REDUCE's value depends on: the ranges of the loops around it that its operand reads
  // (not its own, nor those of reduces inside it). It is reusable unless it loads a buffer this
  // kernel stores to (an in-place update: the stores may change what it reads).
  struct ReduceMemo {
    std::vector<const UOpNode*> free;
    bool reusable = true, valid = false;
    std::vector<int64_t> key;
    Value value;
  };
  ReduceMemo& reduce_memo(const UOp& u) {
    auto [m, fresh] = reduce_memo_.emplace(u.node());
    if (!fresh) return *m;
    std::vector<UOp> nodes = toposort(u);
    std::vector<const UOpNode*> bound;
    for (const UOp& n : nodes)
      if (n.op() == Ops::REDUCE)
        for (size_t i = 1; i < n.nsrc(); ++i) bound.push_back(n.src(i).node());
    for (const UOp& n : nodes) {
      if (n.op() == Ops::RANGE && std::find(bound.begin(), bound.end(), n.node()) == bound.end()) m->free.push_back(n.node());
      if (n.op() == Ops::LOAD && n.src(0).op() == Ops::INDEX && n.src(0).src(0).op() == Ops::PARAM &&
          std::find(stored_.begin(), stored_.end(), n.src(0).src(0).arg_int()) != stored_.end())
        m->reusable = false;
    }
    // a range not bound around this reduce right now (used outside its loop) is an error later
    for (const UOpNode* r : m->free)
      if (!ranges_.find(r)) m->reusable = false;
    return *m;
  }

  std::string name_;
  std::vector<int64_t> stored_;  // the buffer slots the kernel stores to
  PtrMap<ReduceMemo> reduce_memo_;
  const std::vector<HostBuffer>& bufs_;
  const std::vector<std::pair<std::string, int64_t>>& vars_;
  PtrMap<int64_t> ranges_;
  PtrMap<std::pair<uint64_t, Value>> cache_;
  uint64_t stamp_ = 1;
};

}  // namespace

void run_reference_kernel(const UOp& ast, const std::vector<HostBuffer>& bufs,
                          const std::vector<std::pair<std::string, int64_t>>& vars) {
  Interp(ast, bufs, vars).run(ast);
}

}  // namespace kiln::runtime
