// kiln/uop.hpp - the UOp IR: one interned, immutable node type for every level of kiln.
//
// A UOp is (op, dtype, src, arg, tag). Nodes are created only through UOp::make, which interns
// them: the same structure always yields the same node, so pointer equality is structural
// equality. UOp is a reference-counted handle; the intern table holds weak entries and a node is
// freed (and leaves the table) when its last handle dies. Creation and release are thread-safe.
//
// Two hashes exist. hash() is the per-process identity hash (over op, dtype, arg, tag and the
// children's ids); key() is the stable 128-bit structural fingerprint (over op, dtype, arg, tag
// and the children's keys), independent of ids and addresses, for persistent caches.
#pragma once
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "kiln/dtype.hpp"
#include "kiln/key.hpp"

namespace kiln {

enum class Ops : uint8_t {
#define KILN_OP(name, kind, lir, doc) name,
#include "kiln/ops.def"
};
inline constexpr int kNumOps = 0
#define KILN_OP(name, kind, lir, doc) +1
#include "kiln/ops.def"
    ;
// The base group every op belongs to (KILN_OP_KIND in ops.def).
enum class OpKind : uint8_t {
#define KILN_OP_KIND(kind, doc) kind,
#include "kiln/ops.def"
};
inline constexpr OpKind kOpKinds[] = {
#define KILN_OP(name, kind, lir, doc) OpKind::kind,
#include "kiln/ops.def"
};
const char* op_name(Ops op);

// A set of ops (128 bits; kNumOps fits).
struct OpMask {
  uint64_t w[2] = {0, 0};
  constexpr OpMask() = default;
  constexpr OpMask(std::initializer_list<Ops> ops) {
    for (Ops o : ops) w[static_cast<int>(o) >> 6] |= uint64_t{1} << (static_cast<int>(o) & 63);
  }
  constexpr bool has(Ops o) const { return (w[static_cast<int>(o) >> 6] >> (static_cast<int>(o) & 63)) & 1; }
  constexpr OpMask& add(Ops o) {
    w[static_cast<int>(o) >> 6] |= uint64_t{1} << (static_cast<int>(o) & 63);
    return *this;
  }
  constexpr OpMask operator|(const OpMask& o) const { OpMask r; r.w[0] = w[0] | o.w[0]; r.w[1] = w[1] | o.w[1]; return r; }
  constexpr OpMask operator&(const OpMask& o) const { OpMask r; r.w[0] = w[0] & o.w[0]; r.w[1] = w[1] & o.w[1]; return r; }
  constexpr OpMask operator~() const { OpMask r; r.w[0] = ~w[0]; r.w[1] = ~w[1]; return r; }
  constexpr bool empty() const { return (w[0] | w[1]) == 0; }
  constexpr bool subset_of(const OpMask& o) const { return ((w[0] & ~o.w[0]) | (w[1] & ~o.w[1])) == 0; }
  constexpr int size() const { return __builtin_popcountll(w[0]) + __builtin_popcountll(w[1]); }
  friend constexpr bool operator==(const OpMask&, const OpMask&) = default;
};

namespace groups {
namespace detail {
constexpr OpMask of_kind(OpKind k) {
  OpMask m;
  for (int i = 0; i < kNumOps; ++i)
    if (kOpKinds[i] == k) m.add(static_cast<Ops>(i));
  return m;
}
constexpr OpMask as_mask(Ops o) { return OpMask{o}; }
constexpr OpMask as_mask(const OpMask& m) { return m; }
template <typename... Parts>
constexpr OpMask join(const Parts&... parts) { return (OpMask{} | ... | as_mask(parts)); }
}  // namespace detail
// One group per kind, then the named unions and properties of ops.def.
#define KILN_OP_KIND(kind, doc) inline constexpr OpMask kind = detail::of_kind(OpKind::kind);
#include "kiln/ops.def"
#define KILN_OP_GROUP(gname, ...) inline constexpr OpMask gname = [] { using enum Ops; return detail::join(__VA_ARGS__); }();
#include "kiln/ops.def"
inline constexpr OpMask All = [] {
  OpMask m;
  for (int i = 0; i < kNumOps; ++i) m.add(static_cast<Ops>(i));
  return m;
}();
}  // namespace groups
inline bool in(Ops op, const OpMask& m) { return m.has(op); }

// How a RANGE is used, set by the optimiser (codegen/opt). BLOCK: a reduce's loop over blocks,
// run outside the output loops (each block adds its partial sums into the output).
enum class AxisType : uint8_t { LOOP, GLOBAL, LOCAL, REDUCE, UPCAST, UNROLL, GROUP_REDUCE, THREAD, BLOCK };
const char* axis_type_name(AxisType t);

// A float argument compared and hashed by its bits: -0.0 != 0.0, and every NaN is canonicalised
// to one quiet NaN so NaN constants intern.
struct Float {
  double v;
  explicit Float(double x);
  uint64_t bits() const;
  friend bool operator==(const Float& a, const Float& b) { return a.bits() == b.bits(); }
};

// A string with a list of integers (DEFINE_VAR: name, min, max).
struct NamedInts {
  std::string name;
  std::vector<int64_t> ints;
  friend bool operator==(const NamedInts&, const NamedInts&) = default;
};

// The op-specific payload. Each op allows one alternative (checked by verify()).
using Arg = std::variant<std::monostate, int64_t, Float, bool, std::string, std::vector<int64_t>, NamedInts>;
uint64_t arg_hash(const Arg& a);
std::string arg_str(const Arg& a);

struct UOpNode;

class UOp {
 public:
  UOp() = default;
  UOp(const UOp& o) noexcept : n_(o.n_) { retain(); }
  UOp(UOp&& o) noexcept : n_(o.n_) { o.n_ = nullptr; }
  UOp& operator=(const UOp& o) noexcept {
    UOpNode* old = n_;
    n_ = o.n_;
    retain();
    if (old) release(old);
    return *this;
  }
  UOp& operator=(UOp&& o) noexcept {
    if (this != &o) {
      UOpNode* old = n_;
      n_ = o.n_;
      o.n_ = nullptr;
      if (old) release(old);
    }
    return *this;
  }
  ~UOp() {
    if (n_) release(n_);
  }

  // The only factory. Interns: returns the existing node when the structure exists.
  static UOp make(Ops op, DType dtype, std::span<const UOp> src = {}, Arg arg = {}, int32_t tag = 0);
  static UOp make(Ops op, DType dtype, std::initializer_list<UOp> src, Arg arg = {}, int32_t tag = 0) {
    return make(op, dtype, std::span<const UOp>(src.begin(), src.size()), std::move(arg), tag);
  }

  explicit operator bool() const { return n_ != nullptr; }
  const UOpNode* node() const { return n_; }
  Ops op() const;
  DType dtype() const;
  std::span<const UOp> src() const;
  const UOp& src(size_t i) const;
  size_t nsrc() const;
  const Arg& arg() const;
  int32_t tag() const;
  uint64_t hash() const;
  uint64_t id() const;          // process-unique, never reused
  OpMask src_ops() const;       // ops among the direct children
  Key128 key() const;           // stable structural fingerprint (cached per node)

  // Typed views of arg; each throws kiln::Error(internal) on the wrong alternative.
  int64_t arg_int() const;
  double arg_float() const;
  bool arg_bool() const;
  const std::string& arg_string() const;
  const std::vector<int64_t>& arg_ints() const;

  friend bool operator==(const UOp& a, const UOp& b) { return a.n_ == b.n_; }
  friend bool operator<(const UOp& a, const UOp& b) { return a.n_ < b.n_; }

  // ---- building helpers (all go through make) ----
  UOp replace_src(std::span<const UOp> src) const;
  UOp replace_src(std::initializer_list<UOp> src) const { return replace_src(std::span<const UOp>(src.begin(), src.size())); }
  UOp replace_dtype(DType d) const;
  UOp replace_arg(Arg a) const;
  UOp replace_tag(int32_t t) const;

  // Constants. A vector dtype gives a splat constant.
  static UOp cint(DType d, int64_t v);
  static UOp cindex(int64_t v) { return cint(dtypes::index, v); }  // shapes, offsets, loop bounds
  static UOp cfloat(DType d, double v);
  static UOp cbool(bool v, int count = 1);
  static UOp cvalue(DType d, double v);  // int/bool/float by dtype, value converted
  UOp const_like(int64_t v) const;       // same dtype as this
  UOp const_like_f(double v) const;
  bool is_const() const { return n_ && op() == Ops::CONST; }

  // ALU construction with dtype inference: comparisons give bool (same lane count), WHERE takes
  // its value dtype from src[1], everything else from src[0].
  static UOp alu(Ops op, std::initializer_list<UOp> src);
  static UOp alu(Ops op, std::span<const UOp> src);
  UOp cast(DType d) const;
  UOp bitcast(DType d) const;
  UOp where(const UOp& t, const UOp& f) const { return alu(Ops::WHERE, {*this, t, f}); }
  UOp maximum(const UOp& o) const { return alu(Ops::MAX, {*this, o}); }
  UOp minimum(const UOp& o) const;
  UOp lt(const UOp& o) const { return alu(Ops::CMPLT, {*this, o}); }
  UOp ne(const UOp& o) const { return alu(Ops::CMPNE, {*this, o}); }
  UOp eq(const UOp& o) const { return alu(Ops::CMPEQ, {*this, o}); }
  UOp logical_not() const;
  UOp neg() const;  // integers: x * -1 (the symbolic normal form); floats: NEG
  UOp idiv(const UOp& o) const { return alu(Ops::IDIV, {*this, o}); }
  UOp mod(const UOp& o) const { return alu(Ops::MOD, {*this, o}); }
  UOp idiv(int64_t c) const { return idiv(const_like(c)); }
  UOp mod(int64_t c) const { return mod(const_like(c)); }

  // Scalar helpers.
  static UOp range(int64_t size, int64_t axis, AxisType type = AxisType::LOOP);
  static UOp range(const UOp& size, int64_t axis, AxisType type = AxisType::LOOP);
  static UOp variable(const std::string& name, int64_t min, int64_t max, DType d = dtypes::index);
  static UOp sink(std::span<const UOp> src, Arg arg = {});
  static UOp sink(std::initializer_list<UOp> src, Arg arg = {}) { return sink(std::span<const UOp>(src.begin(), src.size()), std::move(arg)); }

  // Low-level access for the symbolic module's cached bounds (see symbolic/bounds.hpp).
  UOpNode* mutable_node() const { return n_; }

 private:
  explicit UOp(UOpNode* n) : n_(n) {}  // adopts one reference
  void retain() const;
  static void release(UOpNode* n);
  friend struct UOpAccess;
  UOpNode* n_ = nullptr;
};

// UOp arithmetic (dtype of the left operand; an int64/double operand becomes a constant of the
// other side's dtype).
UOp operator+(const UOp& a, const UOp& b);
UOp operator-(const UOp& a, const UOp& b);
UOp operator*(const UOp& a, const UOp& b);
UOp operator+(const UOp& a, int64_t b);
UOp operator-(const UOp& a, int64_t b);
UOp operator*(const UOp& a, int64_t b);
UOp operator-(const UOp& a);
UOp operator&(const UOp& a, const UOp& b);
UOp operator|(const UOp& a, const UOp& b);
UOp operator^(const UOp& a, const UOp& b);

// The node behind a handle. Fields are immutable after interning, except the lazily computed
// caches at the end (each guarded by an atomic flag; computations are deterministic, so racing
// writers store identical values).
struct UOpNode {
  std::atomic<uint32_t> refs;
  Ops op;
  uint32_t nsrc;
  int32_t tag;
  DType dtype;
  uint64_t hash;
  uint64_t id;
  OpMask src_ops;
  Arg arg;
  // caches
  mutable std::atomic<uint8_t> cache_flags{0};  // bit0 key, bit1 bounds, bit2 tree_size
  mutable uint32_t tree_size = 0;               // (fits the padding after cache_flags)
  mutable uint64_t key_hi = 0, key_lo = 0;
  mutable int64_t vmin = 0, vmax = 0;
  // sources follow the node in the same allocation
  const UOp* srcs() const { return reinterpret_cast<const UOp*>(this + 1); }
  UOp* srcs() { return reinterpret_cast<UOp*>(this + 1); }
};
static_assert(sizeof(UOp) == sizeof(void*));

inline Ops UOp::op() const { return n_->op; }
inline DType UOp::dtype() const { return n_->dtype; }
inline std::span<const UOp> UOp::src() const { return {n_->srcs(), n_->nsrc}; }
inline const UOp& UOp::src(size_t i) const { return n_->srcs()[i]; }
inline size_t UOp::nsrc() const { return n_->nsrc; }
inline const Arg& UOp::arg() const { return n_->arg; }
inline int32_t UOp::tag() const { return n_->tag; }
inline uint64_t UOp::hash() const { return n_->hash; }
inline uint64_t UOp::id() const { return n_->id; }
inline OpMask UOp::src_ops() const { return n_->src_ops; }
inline void UOp::retain() const {
  if (n_) n_->refs.fetch_add(1, std::memory_order_relaxed);
}

// Host scalars reach kernels as variables named kScalarVarPrefix + k (schedule/create_schedule.cpp
// lifts them; no Variable may take such a name). Their values are a dtype's bits, not sizes.
inline constexpr std::string_view kScalarVarPrefix = "__scalar";
inline bool is_scalar_var(const UOp& def) {
  const auto* n = std::get_if<NamedInts>(&def.arg());
  return def.op() == Ops::DEFINE_VAR && n && std::string_view(n->name).substr(0, kScalarVarPrefix.size()) == kScalarVarPrefix;
}

// Number of live interned nodes (for tests and leak checks).
size_t intern_table_size();

// Registers a function called when a node of `op` is destroyed (after it left the intern table,
// before its memory is freed). Owners of side data keyed by node id (buffer storage for BUFFER)
// release it here. The hook must not create or destroy UOps. One hook per op; set once at start-up.
using DestroyHook = void (*)(const UOpNode* node);
void set_destroy_hook(Ops op, DestroyHook hook);

struct UOpHash {
  size_t operator()(const UOp& u) const { return u.node() ? u.hash() : 0; }
};

}  // namespace kiln
