// kiln/tensor.hpp - the lazy Tensor API.
//
// A Tensor is a handle to a node of a lazy graph: operations only build graph nodes; realize()
// (or to_vector/item) schedules the graph into fused kernels and runs them on the tensor's device.
// Copies of a Tensor share their state: realizing one realizes all copies. Semantics follow numpy
// (broadcasting, matmul, take_along_axis, bool results of comparisons); misuse throws kiln::Error
// naming the operation, the shapes and what was expected.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/dtype.hpp"
#include "kiln/error.hpp"
#include "kiln/uop.hpp"

namespace kiln {

using Shape = std::vector<int64_t>;
using Pads = std::vector<std::pair<int64_t, int64_t>>;

std::string default_device();      // resolved as in docs/devices.md, e.g. "cpu:0"
std::vector<std::string> devices(); // every usable device
void manual_seed(uint64_t seed);    // seeds rand/randn and resets their counter

// A symbolic integer (a dimension that varies between calls, e.g. a batch size).
class Variable {
 public:
  Variable(const std::string& name, int64_t min, int64_t max);
  // This variable with a value; throws kiln::Error when value is outside [min, max].
  class BoundVariable bind(int64_t value) const;
  const UOp& uop() const { return var_; }

 private:
  UOp var_;
};

class BoundVariable {
 public:
  int64_t value() const;
  const UOp& uop() const { return bind_; }  // BIND(DEFINE_VAR, CONST)

 private:
  friend class Variable;
  explicit BoundVariable(UOp bind) : bind_(std::move(bind)) {}
  UOp bind_;
};


// One step of a schedule: a kernel launch or a copy.
struct ExecItem {
  bool is_copy = false;
  std::string name;                 // kernel name ("E_4096_1024", "r_256_65536") or "copy N bytes"
  std::string device;               // where it runs
  UOp ast;                          // the kernel AST (SINK of END(STORE)) or the COPY node
  std::vector<UOp> buffers;         // BUFFER nodes, in parameter order (the outputs first)
  std::vector<std::pair<std::string, int64_t>> var_vals;  // variable values for this launch
};

namespace detail {
struct TensorState;
}

class Tensor {
 public:
  // creation; device "" means the default device
  // empty: an allocated buffer whose contents are unspecified until written (like numpy.empty);
  // reading it (to_vector, realize, views, kernels, copies) is valid and returns whatever the
  // memory holds. Use zeros() when the values matter.
  static Tensor empty(const Shape&, DType = dtypes::float32, const std::string& device = "");
  static Tensor zeros(const Shape&, DType = dtypes::float32, const std::string& device = "");
  static Tensor ones(const Shape&, DType = dtypes::float32, const std::string& device = "");
  static Tensor full(const Shape&, double value, DType = dtypes::float32, const std::string& device = "");
  static Tensor arange(double start, double stop, double step = 1, DType = dtypes::float32,
                       const std::string& device = "");
  static Tensor rand(const Shape&, DType = dtypes::float32, const std::string& device = "");
  static Tensor randn(const Shape&, DType = dtypes::float32, const std::string& device = "");
  template <typename T>  // T: bool, int8..int64, uint8..uint64, float, double
  static Tensor from_vector(const std::vector<T>& data, const Shape&, const std::string& device = "");
  // Raw element bytes of any scalar dtype (float16 and bfloat16 included), row-major: `nbytes` must
  // be numel(shape) * itemsize (bool: one byte, 0 or 1). Copied at once; `data` may be freed after.
  static Tensor from_bytes(const void* data, uint64_t nbytes, DType, const Shape&, const std::string& device = "");

  // movement: views, nothing is copied until realized
  Tensor reshape(const Shape&) const;  // one -1 allowed
  Tensor permute(const std::vector<int>& order) const;
  Tensor expand(const Shape&) const;   // -1 keeps a dimension
  Tensor pad(const Pads& before_after, double value = 0.0) const;
  Tensor shrink(const Pads& start_end) const;
  Tensor shrink(int axis, const BoundVariable& end) const;  // [0, end) along axis: a symbolic dimension
  Tensor flip(const std::vector<int>& axes) const;
  Tensor transpose(int a = -2, int b = -1) const;
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;

  // elementwise; numpy broadcasting and dtype promotion
  Tensor operator+(const Tensor&) const;
  Tensor operator-(const Tensor&) const;
  Tensor operator*(const Tensor&) const;
  Tensor operator/(const Tensor&) const;  // true division (integers divide as float32)
  Tensor operator-() const;
  Tensor exp() const; Tensor log() const; Tensor exp2() const; Tensor log2() const;
  Tensor sqrt() const; Tensor rsqrt() const; Tensor sin() const; Tensor cos() const;
  Tensor tan() const; Tensor abs() const; Tensor sign() const; Tensor reciprocal() const;
  Tensor relu() const; Tensor sigmoid() const; Tensor tanh() const; Tensor gelu() const;
  Tensor silu() const;
  Tensor maximum(const Tensor&) const; Tensor minimum(const Tensor&) const;
  Tensor pow(const Tensor&) const; Tensor pow(double) const;
  static Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
  Tensor lt(const Tensor&) const; Tensor gt(const Tensor&) const; Tensor le(const Tensor&) const;
  Tensor ge(const Tensor&) const; Tensor eq(const Tensor&) const; Tensor ne(const Tensor&) const;
  Tensor cast(DType) const;
  // integer division truncating toward zero and the matching remainder (C semantics; integers only).
  // Where C is undefined kiln defines one result on every backend, keeping x == idiv*y + mod:
  // x idiv 0 = 0 and x mod 0 = x; MIN idiv -1 wraps to MIN (two's complement) and MIN mod -1 = 0.
  Tensor idiv(const Tensor&) const;
  Tensor mod(const Tensor&) const;
  Tensor logical_not() const;  // for bool tensors

  // reductions; empty axes = all; negative axes count from the end
  Tensor sum(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor max(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor min(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor mean(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor var(const std::vector<int>& axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor std(const std::vector<int>& axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor prod(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor argmax(int axis, bool keepdim = false) const;  // int32 result
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;

  // linear algebra and nn (NCHW; weight OIHW)
  Tensor matmul(const Tensor&) const;  // numpy matmul semantics, batched broadcast
  Tensor dot(const Tensor&) const;
  Tensor linear(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt) const;  // x @ weight.T + bias
  Tensor conv2d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, int stride = 1, int padding = 0,
                int dilation = 1, int groups = 1) const;
  Tensor max_pool2d(int kernel = 2, int stride = 0, int padding = 0) const;  // stride 0 = kernel
  Tensor avg_pool2d(int kernel = 2, int stride = 0, int padding = 0) const;
  static Tensor cat(const std::vector<Tensor>&, int axis = 0);
  static Tensor stack(const std::vector<Tensor>&, int axis = 0);
  // numpy take_along_axis; a negative index counts from the end. An index outside [-n, n) (n =
  // shape()[axis]) gives 0 (the kernels never read out of bounds); with KILN_CHECK_BOUNDS=1 the
  // index tensor is realized and checked first, and an out-of-range index is a kiln::Error
  // (out_of_range) naming the op, the index, its position and the valid range.
  Tensor gather(int axis, const Tensor& index) const;
  // numpy/torch indexing (Python's x[...]): one Index per entry of the subscript.
  //   integer  - selects one position and drops the axis; negative counts from the end; outside
  //              [-n, n): kiln::Error (out_of_range) naming the index, the axis and its size
  //   slice    - start/stop/step, each optional, as Python slices: ends clamp to the axis, steps
  //              may be negative (a step of 0: kiln::Error invalid_argument)
  //   none     - a new axis of size 1; ellipsis - every axis not otherwise indexed (at most one)
  //   tensor   - an integer tensor (advanced indexing): all index tensors broadcast together and
  //              their shape replaces the indexed axes where those are adjacent, else it leads (torch);
  //              negative entries count from the end, entries out of range select 0 (as gather)
  // More indices than axes, a second ellipsis, a non-integer index tensor, index tensors that do not
  // broadcast or on another device: kiln::Error. Gradients flow to this tensor (not to the indices).
  struct Index {
    enum class Kind { integer, slice, none, ellipsis, tensor };
    Kind kind = Kind::ellipsis;
    int64_t value = 0;                                  // Kind::integer
    std::optional<int64_t> start, stop, step;           // Kind::slice (nullopt: Python's None)
    std::shared_ptr<detail::TensorState> index;         // Kind::tensor (a Tensor's state())
    static Index integer(int64_t i);
    static Index slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
                       std::optional<int64_t> step = std::nullopt);
    static Index none();
    static Index ellipsis();
    static Index tensor(const Tensor& index);
  };
  Tensor getitem(const std::vector<Index>& indices) const;  // x[indices]; a view unless an index is a tensor
  // x[indices] = value: value broadcasts to getitem(indices)'s shape and is cast to this dtype; the
  // result is written with assign() (the buffer is updated at the next realize). Where advanced
  // indices repeat a position the last write wins (numpy). Errors as getitem, and kiln::Error
  // (invalid_argument) when value does not broadcast to the indexed shape.
  Tensor& setitem(const std::vector<Index>& indices, const Tensor& value);
  // torch.std_mean / var_mean: {std (or var), mean} over axes (empty = all), as std()/var() and mean().
  std::pair<Tensor, Tensor> std_mean(const std::vector<int>& axes = {}, bool keepdim = false, double correction = 1) const;
  std::pair<Tensor, Tensor> var_mean(const std::vector<int>& axes = {}, bool keepdim = false, double correction = 1) const;
  // The same bytes read as another dtype of the same size (torch's view(dtype), tinygrad's bitcast);
  // a different size or bool on either side is a kiln::Error. No gradient flows through it.
  Tensor bitcast(DType) const;

  // execution
  std::vector<ExecItem> schedule() const;  // what realize() would run, without running it
  static std::vector<ExecItem> schedule_all(const std::vector<Tensor>& outputs);  // one schedule for all
  Tensor& realize();
  static void realize_all(std::vector<Tensor>& tensors);
  Tensor contiguous() const;
  // A new buffer with a copy of the value (contiguous() of a buffer is itself). A snapshot: the
  // copy of a realized tensor (a Jit's output, a buffer assigned later) is made now, so later
  // writes to the source do not show through; a lazy tensor's copy is its graph's value, made with
  // its next realize. A tensor that requires grad is copied lazily (the copy passes gradients).
  Tensor clone() const;
  Tensor to(const std::string& device) const;  // a placement "cpu:0,cpu:1" replicates; a sharded tensor is gathered

  // multi-device: one logical tensor whose data lives on several devices. Operations on tensors of
  // one placement run on each device; a replicated operand mixes with a sharded one; a reduction
  // over the shard axis combines the devices' partial results (all-reduce) into a replicated
  // tensor. device() of such a tensor is its placement joined by ','; to(device) and to_vector
  // gather it. Mixing placements that cannot combine throws kiln::Error naming both.
  // axis: split along it into contiguous parts, one per device in order (a size that does not
  // divide evenly gives the first n % devices parts one more row, as torch.tensor_split; fewer
  // rows than devices is an error); nullopt: a full copy on each device. One device: to(device).
  Tensor shard(const std::vector<std::string>& devices, std::optional<int> axis = std::nullopt) const;
  std::vector<std::string> placement() const;  // devices holding it, in shard order (one for a plain tensor)
  std::optional<int> shard_axis() const;       // nullopt when replicated or on one device

  // autograd (reverse mode over the lazy graph; the backward pass fuses like any other graph).
  // Only float tensors take gradients. Take gradients before realizing the loss: a realized
  // tensor's graph is gone (realize the loss and the gradients together).
  Tensor& requires_grad_(bool on = true);      // mark a leaf; backward() accumulates into its grad
  bool requires_grad() const;
  Tensor& backward();                          // this must have one element (a loss)
  std::optional<Tensor> grad() const;          // the accumulated gradient of a leaf, if any
  std::vector<Tensor> gradient(const std::vector<Tensor>& wrt) const;  // d(this)/d(each), no accumulation
  Tensor detach() const;                       // the same value, through which no gradient flows

  // Writes value (broadcast and cast to this tensor's shape and dtype) into this tensor's buffer
  // when realized; readers scheduled before see the old contents.
  Tensor& assign(const Tensor& value);
  template <typename T>
  std::vector<T> to_vector() const;  // realizes, copies to host
  // Realizes and copies the elements to `dst` in this tensor's own dtype, row-major, without a
  // cast; `nbytes` must be numel() * dtype().itemsize().
  void to_bytes(void* dst, uint64_t nbytes) const;
  template <typename T>
  T item() const;  // for one-element tensors
  const Shape& shape() const;
  DType dtype() const;
  const std::string& device() const;
  int64_t numel() const;
  int ndim() const { return static_cast<int>(shape().size()); }

  // The graph node behind this tensor (for tools and tests), and the shared state (library use).
  // The reference is valid until the tensor's graph is next replaced: when it, or a graph it
  // reads, is realized or assigned; so it is for single-threaded tools. Every other method may be
  // called from several threads on one tensor (realizes run one at a time).
  const UOp& uop() const;
  explicit Tensor(std::shared_ptr<detail::TensorState> state) : s_(std::move(state)) {}
  const std::shared_ptr<detail::TensorState>& state() const { return s_; }

 private:
  std::shared_ptr<detail::TensorState> s_;
};

// bitwise (integers) or logical (bool) operations, broadcasting
Tensor operator&(const Tensor&, const Tensor&);
Tensor operator|(const Tensor&, const Tensor&);
Tensor operator^(const Tensor&, const Tensor&);

Tensor operator+(double, const Tensor&);
Tensor operator-(double, const Tensor&);
Tensor operator*(double, const Tensor&);
Tensor operator/(double, const Tensor&);
Tensor operator+(const Tensor&, double);
Tensor operator-(const Tensor&, double);
Tensor operator*(const Tensor&, double);
Tensor operator/(const Tensor&, double);

// Integer scalars keep an integer tensor's dtype (a double scalar makes it float32, as in numpy's
// "weak" Python scalars): t + 1 stays int32 for an int32 t, t + 1.0 is float32.
Tensor scalar_like(const Tensor& like, int64_t value);
template <typename I>
  requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tensor operator+(const Tensor& t, I v) { return t + scalar_like(t, static_cast<int64_t>(v)); }
template <typename I>
  requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tensor operator-(const Tensor& t, I v) { return t - scalar_like(t, static_cast<int64_t>(v)); }
template <typename I>
  requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tensor operator*(const Tensor& t, I v) { return t * scalar_like(t, static_cast<int64_t>(v)); }
template <typename I>
  requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tensor operator+(I v, const Tensor& t) { return scalar_like(t, static_cast<int64_t>(v)) + t; }
template <typename I>
  requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tensor operator-(I v, const Tensor& t) { return scalar_like(t, static_cast<int64_t>(v)) - t; }
template <typename I>
  requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tensor operator*(I v, const Tensor& t) { return scalar_like(t, static_cast<int64_t>(v)) * t; }

}  // namespace kiln
