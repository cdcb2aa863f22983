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
  // ---- math (tinygrad/torch semantics; integer inputs to float functions compute in float32) ----
  // rounding: integers are returned as they are; round is half to even (torch). No gradient (0).
  Tensor trunc() const; Tensor floor() const; Tensor ceil() const; Tensor round() const;
  // bool results; integers are never inf or nan
  Tensor isinf(bool detect_positive = true, bool detect_negative = true) const;
  Tensor isnan() const; Tensor isfinite() const;
  // inverse trig and hyperbolic functions (NaN outside the domain, as torch; gradients are torch's
  // closed forms), log10, erf (|error| < 2e-7, exact derivative)
  Tensor asin() const; Tensor acos() const; Tensor atan() const;
  Tensor sinh() const; Tensor cosh() const; Tensor asinh() const; Tensor acosh() const; Tensor atanh() const;
  Tensor log10() const; Tensor erf() const;
  // activations (torch.nn.functional's definitions and gradients at the kinks; stable for |x| large)
  Tensor softsign() const; Tensor logsigmoid() const;
  Tensor hardsigmoid(double alpha = 1.0 / 6, double beta = 0.5) const;  // clip(alpha x + beta, 0, 1)
  Tensor softplus(double beta = 1) const;                                // log(1 + exp(beta x)) / beta
  Tensor gelu(const std::string& approximate) const;  // "tanh" (= gelu()) or "none" (erf); else invalid_argument
  Tensor quick_gelu() const;                          // x sigmoid(1.702 x)
  Tensor elu(double alpha = 1) const; Tensor celu(double alpha = 1) const;
  Tensor selu(double alpha = 1.6732632423543772, double gamma = 1.0507009873554805) const;  // gamma elu(alpha)
  Tensor relu6() const; Tensor hardswish() const; Tensor mish() const;
  Tensor hardtanh(double min_val = -1, double max_val = 1) const;  // gradient 0 at and beyond the bounds
  Tensor leaky_relu(double neg_slope = 0.01) const;
  Tensor swish() const;                   // = silu()
  Tensor softmin(int axis = -1) const;    // softmax(-x)
  Tensor square() const;                  // x * x (integers stay integers)
  Tensor bitwise_not() const;             // ~x for integers, logical_not for bool; floats: invalid_argument
  // binary, broadcasting and promoting as the arithmetic operators
  Tensor lerp(const Tensor& end, const Tensor& weight) const;  // this + (end - this) * weight
  Tensor copysign(const Tensor& sign) const;  // |this| with sign's sign bit (-0.0 counts as negative)
  Tensor logaddexp(const Tensor& other) const;  // log(exp(a) + exp(b)), stable
  // clamp (torch): min first, then max; no gradient at or beyond a bound; both nullopt is invalid_argument
  Tensor clip(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const;
  // |a - b| <= atol + rtol |b| for finite values, equal infinities, NaN with NaN only if equal_nan
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;  // isclose().all(), 0-d bool
  Tensor fmod(const Tensor& other) const;  // C remainder (sign of the dividend), any dtype
  // torch.div: rounding_mode "" (true division), "trunc" or "floor" (integers stay integers);
  // any other mode is invalid_argument
  Tensor div(const Tensor& other, const std::string& rounding_mode) const;
  Tensor floordiv(const Tensor& other) const;   // Python // : div(other, "floor")
  Tensor remainder(const Tensor& other) const;  // Python % (torch.remainder): the sign of the divisor
  Tensor lshift(const Tensor& bits) const; Tensor rshift(const Tensor& bits) const;  // integers only
  // reductions
  Tensor any(const std::vector<int>& axes = {}, bool keepdim = false) const;  // bool; false over nothing
  Tensor all(const std::vector<int>& axes = {}, bool keepdim = false) const;  // bool; true over nothing
  Tensor logsumexp(const std::vector<int>& axes = {}, bool keepdim = false) const;
  // x / max(||x||_p along dim, eps) (F.normalize; p = 0 counts the nonzero elements)
  Tensor normalize(double p = 2, int dim = 1, double eps = 1e-12) const;
  // losses (reduction "mean", "sum" or "none", else invalid_argument) and attention
  // cross_entropy: logits with classes on axis 1 (axis 0 for 1-D); Y class indices (the shape
  // without the class axis) or probabilities (the same shape); label_smoothing in [0, 1]
  Tensor cross_entropy(const Tensor& Y, const std::string& reduction = "mean", double label_smoothing = 0) const;
  // logits with classes on the last axis; Y integer labels; ignore_index -1 ignores nothing (tinygrad)
  Tensor sparse_categorical_crossentropy(const Tensor& Y, int64_t ignore_index = -1, double label_smoothing = 0,
                                         const std::string& reduction = "mean") const;
  Tensor binary_crossentropy(const Tensor& Y, const std::string& reduction = "mean") const;  // log clamped at -100 (torch)
  Tensor binary_crossentropy_logits(const Tensor& Y, const std::string& reduction = "mean",
                                    const std::optional<Tensor>& pos_weight = std::nullopt) const;
  // log-probabilities (N, C, d...) or (C); Y labels (N, d...) or (); weight per class
  Tensor nll_loss(const Tensor& Y, const std::optional<Tensor>& weight = std::nullopt,
                  std::optional<int64_t> ignore_index = std::nullopt, const std::string& reduction = "mean") const;
  // softmax(q k^T / sqrt(d) + mask) v over (..., heads, L, d); a bool mask keeps where true;
  // is_causal with a mask, dropout_p != 0, or (enable_gqa) heads that do not divide are invalid_argument
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask = std::nullopt,
                                      double dropout_p = 0, bool is_causal = false, bool enable_gqa = false) const;

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
