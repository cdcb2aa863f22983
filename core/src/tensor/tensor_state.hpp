// tensor/tensor_state.hpp - what a Tensor handle points at, and the graph-building helpers every
// frontend file shares (shapes, broadcasting, axis normalisation, constants).
//
// Tensor-level graph conventions (what the scheduler expects):
//  - Every tensor node has a shape; ALU and CAST nodes have sources of identical shape (the
//    frontend inserts RESHAPE/EXPAND for broadcasting).
//  - Constants are CONST nodes of shape () with the DEVICE as their only source; IOTA has the
//    DEVICE as its source too; realized data is BUFFER(DEVICE) with shape (size,).
//  - Movement args hold the shape; a symbolic dimension is stored as -1-k, meaning "source 1+k",
//    a BIND node (RESHAPE/EXPAND dims, SHRINK ends).
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"
#include "support/check.hpp"

namespace kiln::detail {

// The graph behind a tensor: replaced when the tensor is realized or assigned, and when a graph
// it reads is realized (possibly by another thread), so it is only read as a copy.
struct TensorGraph {
  UOp uop;
  std::vector<UOp> vars;  // empty, or one entry per dimension: the BIND of a symbolic dimension
  // Set by realize only: the `vars` the graph had before it became a buffer of the bound size.
  // Nothing builds on them (the tensor is fixed now); a kiln::Jit whose function returned the
  // tensor realized replays it at each call's size from them, as it does an unrealized output.
  std::vector<UOp> realized_vars = {};
};

// A tensor on several devices (tensor/multi.hpp): one single-device tensor per device, in shard
// order. Sharded: the parts are contiguous pieces along `axis`; replicated (no axis): each part is
// the whole tensor.
struct Multi {
  std::vector<Tensor> parts;
  std::optional<int> axis;
  std::vector<std::string> devices;  // parts[i].device()
};

// Shared by every handle of one tensor, and by several threads: shape, dtype and device never
// change; the graph is guarded by the state's own lock (a realize on one thread rewrites the
// states of lazy tensors other threads are building on). A multi-device tensor's state holds its
// parts; its graph is MSTACK of the parts' graphs, read afresh (the parts are realized and
// assigned through their own states).
class TensorState {
 public:
  TensorState(TensorGraph g, Shape shape, std::string device)
      : shape(std::move(shape)), device(std::move(device)), dtype(g.uop.dtype()), g_(std::move(g)) {}
  TensorState(std::shared_ptr<const Multi> m, Shape shape, std::string placement, DType dtype)
      : shape(std::move(shape)), device(std::move(placement)), dtype(dtype), multi(std::move(m)) {}
  const Shape shape;         // concrete sizes (a symbolic dimension shows its bound value)
  const std::string device;  // canonical device name; for a multi-device tensor the placement, joined by ','
  const DType dtype;
  const std::shared_ptr<const Multi> multi;  // null for a tensor on one device
  // autograd (tensor/gradient.cpp): a leaf's flag and its accumulated gradient
  std::atomic<bool> requires_grad{false};
  std::mutex grad_mu;
  std::optional<Tensor> grad;

  TensorGraph graph() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (multi) g_ = {mstack(), {}};
    return g_;
  }
  UOp uop() const { return graph().uop; }
  // Applies f to the graph under the lock: a change that depends on the current graph (assign
  // reads it; realize replaces it only if no other thread changed it since it was read).
  template <typename F>
  void update(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(g_);
  }
  // Tensor::uop() hands out a reference; valid until the graph is next replaced.
  const UOp& uop_ref() const {
    if (multi) graph();
    return g_.uop;
  }

 private:
  UOp mstack() const;
  mutable std::mutex mu_;
  mutable TensorGraph g_;
};

// A consistent copy of a tensor's graph with its (immutable) shape and device, for building on.
struct StateView {
  UOp uop;
  std::vector<UOp> vars;
  const Shape& shape;
  const std::string& device;
};

Tensor make(UOp uop, Shape shape, std::string device, std::vector<UOp> vars = {});
// Records a state so that realize can redirect lazy graphs to new buffers (done by make).
void register_state(const std::shared_ptr<TensorState>& s);
// The view of `t`; it refers to t's shape and device, so `t` must outlive it.
inline StateView st(const Tensor& t) {
  const TensorState& s = *t.state();
  TensorGraph g = s.graph();
  return {std::move(g.uop), std::move(g.vars), s.shape, s.device};
}

// A tensor whose graph is a BUFFER seen whole from its element 0 (RESHAPE, SHRINK from 0): its
// value is in memory, and view_buffer() is that BUFFER; buffer_view() makes such a view of a buffer
// whose first numel_of(shape) elements hold the value.
bool is_view(const UOp& u);
const UOp& view_buffer(const UOp& u);
UOp buffer_view(const UOp& buffer, const Shape& shape);

// A tensor of its own buffer that x's value is written into when it is realized (lazily, as a copy
// to another device is): shard() gives the part on x's own device this way, so that no part shares
// storage with x or a view of it (an assign to one would show through the other).
Tensor own_copy(const Tensor& x);

// Realizes run one at a time (and Jit replays with them): two threads reading one lazy tensor must
// not both schedule it, and the rewrite of live graphs after a realize must see every buffer it made.
std::mutex& realize_mutex();

// Canonical device name for a user string ("" = default device); throws for unknown devices.
std::string canonical_device(const std::string& device);

UOp device_node(const std::string& device);
// A scalar constant broadcast to `shape` on `device`.
Tensor const_tensor(double value, DType dtype, const Shape& shape, const std::string& device);
// float16 or bfloat16. Composites over one (matmul and convolution: sum_of_products; softmax,
// log_softmax, logsumexp, layernorm) compute in float32 and round once at the end, as torch's
// kernels for them do: more accurate than rounding each step, and 2-3x faster (each rounding is a
// conversion there and back).
inline bool is_half_float(DType d) { return d.scalar() == Scalar::float16 || d.scalar() == Scalar::bfloat16; }

Tensor const_like(const Tensor& like, double value, DType dtype);
Tensor const_like(const Tensor& like, double value);

std::string shape_str(const Shape& s);
// The element count of a shape that check_size accepted (every tensor's shape is).
int64_t numel_of(const Shape& s);
// Throws, naming `op`, when a dimension of `shape` is negative or its element count or its size
// in bytes (elements of `dtype`) does not fit in int64: numel() and every index would wrap.
void check_size(const Shape& shape, DType dtype, const char* op);
// a * b, or an error naming `op` when it does not fit in int64 (sizes computed on the way to a shape).
int64_t checked_mul(int64_t a, int64_t b, const char* op);
int64_t checked_add(int64_t a, int64_t b, const char* op);
// Normalises a possibly negative axis of a tensor of `shape` (`insert`: a position among
// shape.size() + 1, as unsqueeze and stack take); throws naming `op`, the axis and the shape.
int norm_axis(int axis, const Shape& shape, const char* op, bool insert = false);
std::string ints_str(const std::vector<int>& v);

// A movement op with its arg built from `dims` (symbolic entries from `vars`).
Tensor movement(const Tensor& x, Ops op, const std::vector<int64_t>& arg, const Shape& new_shape,
                const std::vector<UOp>& new_vars, const std::vector<UOp>& arg_vars = {});
// RESHAPE or EXPAND to `dims`, where vars[i] (if set) makes dimension i symbolic.
Tensor shaped(const Tensor& x, Ops op, const Shape& dims, const std::vector<UOp>& vars);
// Elementwise op over same-shaped, same-device operands (after broadcast/promotion).
Tensor alu(Ops op, const std::vector<Tensor>& srcs, DType out);
// REDUCE_AXIS of `op` over `axes` (normalised, sorted); the reduced dimensions stay, as size 1.
Tensor reduce_axis(const Tensor& x, Ops op, const std::vector<int>& axes);
// Broadcasts a and b to a common shape (numpy rules); throws naming `op`.
std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, const char* op);
// Brings a and b to a common dtype (least_upper_dtype) and shape.
std::pair<Tensor, Tensor> promote(const Tensor& a, const Tensor& b, const char* op);

// A composite's own gradient (tensor/gradient.cpp). `out` is what the composite built from
// `inputs`; a backward pass that reaches out's node gives the inputs the gradients `fn` returns
// (one per input, in order, from out's gradient) instead of differentiating the ops inside it.
// The composite's value is unchanged. Single-device tensors only (others keep their own rules).
// Exact: an identical graph built any other way is the same node and has the same gradient.
using CompositeGradient = std::function<std::vector<Tensor>(const Tensor& g)>;
void set_gradient(const Tensor& out, const std::vector<Tensor>& inputs, CompositeGradient fn);
// How many composites the table holds (tests: entries no graph can reach are dropped).
size_t composite_gradients();
// The ops with a gradient rule, elementwise or not (tests: every tensor-level op has one, or is in
// ops.def's NotDifferentiable group, or is a leaf).
OpMask gradient_rule_ops();

// An elementwise node being differentiated: its gradient, its sources and itself as tensors.
struct GradArgs {
  const Tensor& g;
  std::function<Tensor(size_t)> src;
  std::function<Tensor()> self;
};
using Grads = std::vector<std::optional<Tensor>>;  // per source; nullopt: that source takes none
using ElementwiseGradient = Grads (*)(const GradArgs&);
// The derivative of an elementwise op, written beside its forward forms (tensor/elementwise.cpp);
// nullptr for the ops that pass none (ops.def's NotDifferentiable). The other ops' rules are in
// tensor/gradient.cpp.
ElementwiseGradient elementwise_gradient(Ops op);

template <typename T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtypes::bool_;
  else if constexpr (std::is_same_v<T, int8_t>) return dtypes::int8;
  else if constexpr (std::is_same_v<T, int16_t>) return dtypes::int16;
  else if constexpr (std::is_same_v<T, int32_t>) return dtypes::int32;
  else if constexpr (std::is_same_v<T, int64_t>) return dtypes::int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return dtypes::uint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return dtypes::uint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return dtypes::uint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return dtypes::uint64;
  else if constexpr (std::is_same_v<T, float>) return dtypes::float32;
  else return dtypes::float64;
}

}  // namespace kiln::detail
