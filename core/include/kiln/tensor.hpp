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
  const std::string& name() const;  // the variable's name and range, as Variable was made
  int64_t min() const;
  int64_t max() const;
  // The same variable (name and range), whatever value each is bound to.
  bool same_variable(const BoundVariable& other) const;
  const UOp& uop() const { return bind_; }  // BIND(DEFINE_VAR, CONST)

 private:
  friend class Variable;
  friend class Tensor;
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
  // Memory shared with other libraries (DLPack, numpy), row-major numel(shape) elements at `data`:
  // without a copy when the device's buffers are host memory (cpu) and it can use the address
  // (the cpu plugin: 64-byte aligned), so writes through either side show in the other; else one
  // copy, as from_bytes. `owner` keeps the memory alive while kiln uses it (released with the last
  // tensor over it). `shared`, when given, tells which of the two happened.
  static Tensor from_blob(void* data, DType, const Shape&, std::shared_ptr<void> owner, const std::string& device = "",
                          bool* shared = nullptr);
  // `steps` evenly spaced values from start to stop, both included (steps 1: [start]; 0: empty),
  // computed in float32 then cast (tinygrad); steps < 0 or a bool dtype is invalid_argument.
  static Tensor linspace(double start, double stop, int64_t steps, DType = dtypes::float32, const std::string& device = "");
  // n x m (no m: n x n) with ones on the diagonal; a negative size is invalid_argument.
  static Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, DType = dtypes::float32, const std::string& device = "");
  // Random numbers from rand/randn's stream (manual_seed): uniform over [low, high) (low < high),
  // normal(mean, std) (std >= 0), integers uniform over [low, high) of an integer dtype, and the
  // initializers of torch.nn.init / Keras (fan-in = product of shape[1:], fan-out = shape[0]):
  // scaled_uniform +-numel^-1/2, glorot_uniform, kaiming_uniform/normal with leaky-relu slope a.
  static Tensor uniform(const Shape&, double low = 0, double high = 1, DType = dtypes::float32, const std::string& device = "");
  static Tensor normal(const Shape&, double mean = 0, double std = 1, DType = dtypes::float32, const std::string& device = "");
  static Tensor randint(const Shape&, int64_t low = 0, int64_t high = 10, DType = dtypes::int32, const std::string& device = "");
  static Tensor scaled_uniform(const Shape&, DType = dtypes::float32, const std::string& device = "");
  static Tensor glorot_uniform(const Shape&, DType = dtypes::float32, const std::string& device = "");
  static Tensor kaiming_uniform(const Shape&, double a = 0.01, DType = dtypes::float32, const std::string& device = "");
  static Tensor kaiming_normal(const Shape&, double a = 0.01, DType = dtypes::float32, const std::string& device = "");

  // movement: views, nothing is copied until realized
  Tensor reshape(const Shape&) const;  // one -1 allowed
  // reshape with the symbolic dimensions placed explicitly: dims[i] (when set) makes output
  // dimension i that variable (shape[i] must be its value or -1). Every symbolic dimension of this
  // tensor must be placed, in order, each as its own dimension (the sizes between two symbolic
  // dimensions multiply to the same on both sides); else kiln::Error naming the variable. Plain
  // reshape guesses the placement, which is ambiguous when a variable is bound to 1 among other
  // 1s: (1, n=1) -> (1, 1, 1) could put n anywhere, and a Jit replays whichever it picked.
  Tensor reshape(const Shape& shape, const std::vector<std::optional<BoundVariable>>& dims) const;
  Tensor permute(const std::vector<int>& order) const;
  Tensor expand(const Shape&) const;   // -1 keeps a dimension; a symbolic one cannot be expanded
  // The size-1 dimension `axis` broadcast to the symbolic size `size` (as shrink(axis, BoundVariable)
  // makes a symbolic dimension of a buffer): kiln::Error when that dimension is not a fixed 1.
  Tensor expand(int axis, const BoundVariable& size) const;
  Tensor pad(const Pads& before_after, double value = 0.0) const;
  Tensor shrink(const Pads& start_end) const;
  Tensor shrink(int axis, const BoundVariable& end) const;  // [0, end) along axis: a symbolic dimension
  Tensor flip(const std::vector<int>& axes) const;
  Tensor transpose(int a = -2, int b = -1) const;
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor squeeze(int axis) const;      // a symbolic dimension is never squeezed (even bound to 1)
  Tensor unsqueeze(int axis) const;    // symbolic dimensions keep their place
  // The variable of dimension `axis` (negative counts from the end) when it is symbolic - made by
  // shrink(axis, BoundVariable) or expand(axis, BoundVariable) and kept by every op that keeps that
  // dimension - bound to the value shape()[axis] reports; nullopt for a fixed size. An axis out of
  // range is a kiln::Error. A symbolic dimension meets (broadcasts with) only the same variable or
  // a fixed 1, even while bound to 1: a fixed size, even an equal one, is a kiln::Error.
  std::optional<BoundVariable> symbolic_dim(int axis) const;

  // structural ops (tinygrad/torch semantics; tensor/scan.cpp, einsum.cpp, structure.cpp). Axes may be
  // negative; an axis out of range, a bad size or count is a kiln::Error naming the op and values.
  // Running reductions along `axis` (a 0-d tensor accepts axis 0/-1 and is returned as is). They
  // compare every pair of positions: O(n^2) work and memory per row of length n along the axis.
  Tensor cumsum(int axis = 0) const;   // running sum (small ints accumulate in int32, as sum)
  Tensor cumprod(int axis = 0) const;  // running product
  // running max and its int32 index (the last index of the running max among ties, as torch);
  // the values are read at that index, so their gradient goes to the chosen elements
  std::pair<Tensor, Tensor> cummax(int axis = 0) const;
  std::pair<Tensor, Tensor> cummin(int axis = 0) const;  // as cummax, for the running min
  Tensor logcumsumexp(int axis = 0) const;  // log(cumsum(exp(x))), shifted by the running max (no overflow)
  Tensor argmin(int axis, bool keepdim = false) const;  // int32; the first minimum (as argmax)
  // stable sort along axis: (values, int32 indices); values are read at the indices (gradient to the
  // chosen elements). Ranks by counting comparisons: O(n^2) per row of length n.
  std::pair<Tensor, Tensor> sort(int axis = -1, bool descending = false) const;
  Tensor argsort(int axis = -1, bool descending = false) const;
  // the k largest (smallest) along axis, in sorted order, ties by first index; k > size is an error
  std::pair<Tensor, Tensor> topk(int64_t k, int axis = -1, bool largest = true, bool sorted = true) const;
  // torch.einsum: letters, one "..." per operand (broadcast across operands), repeated letters take
  // diagonals, "->" optional (then: "..." dims, then letters used once, sorted). Errors: operand
  // count, subscript length, a letter's sizes that differ (and are not 1), bad characters.
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands);
  Tensor tril(int64_t diagonal = 0) const;  // zeros above the diagonal of the last two axes (ndim >= 2)
  Tensor triu(int64_t diagonal = 0) const;  // zeros below it
  Tensor one_hot(int64_t num_classes) const;  // integer tensor -> int32 (..., num_classes); num_classes >= 0
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;  // where(mask, value, this)
  Tensor masked_fill(const Tensor& mask, double value) const;         // value in this tensor's dtype
  // The elements where the bool `mask` (broadcast to this shape) is true, row-major, as a 1-d tensor.
  // size nullopt: as many as there are (realizes the mask's count: a data-dependent shape); size n:
  // the first n, padded with fill_value. O(numel * result size) comparisons.
  Tensor masked_select(const Tensor& mask, std::optional<int64_t> size = std::nullopt, double fill_value = 0) const;
  // int32 (count, ndim): the coordinates of the non-zero elements, row-major; size as masked_select
  Tensor nonzero(std::optional<int64_t> size = std::nullopt, double fill_value = 0) const;
  // torch.scatter: this with src[p] written at index[p] along axis (the last write wins for repeated
  // indices); reduce "" (replace), "add" or "multiply". index: integer, same ndim, index.shape <= src.shape
  // everywhere and <= this.shape off the axis; src's dtype must be this dtype.
  Tensor scatter(int axis, const Tensor& index, const Tensor& src, const std::string& reduce = "") const;
  Tensor scatter(int axis, const Tensor& index, double src, const std::string& reduce = "") const;
  // torch.scatter_reduce: reduce "sum", "prod", "mean", "amax" or "amin"; include_self adds this's value
  Tensor scatter_reduce(int axis, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  Tensor repeat(const std::vector<int64_t>& repeats) const;  // torch.repeat (tile); repeats.size() >= ndim
  Tensor repeat_interleave(int64_t repeats, std::optional<int> axis = std::nullopt) const;  // nullopt: flattened
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int axis = 0) const;  // sizes sum to the axis size
  std::vector<Tensor> split_size(int64_t size, int axis = 0) const;  // pieces of `size` (the last may be shorter)
  std::vector<Tensor> chunk(int64_t chunks, int axis = 0) const;     // pieces of ceil(n / chunks)
  Tensor unfold(int axis, int64_t size, int64_t step) const;  // windows along axis as a new last axis; step > 0
  static std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");  // or "xy"
  Tensor diag() const;  // a 1-d tensor -> the square matrix with it on the diagonal
  Tensor diagonal(int64_t offset = 0, int dim1 = 0, int dim2 = 1) const;  // the diagonal as the last axis
  Tensor roll(const std::vector<int64_t>& shifts, const std::vector<int>& axes) const;  // axes {}: flattened, one shift
  Tensor unflatten(int axis, const Shape& sizes) const;  // axis split into sizes (one -1 allowed)
  // torch's F.pad per axis (before, after): negative amounts crop; mode "constant" (value), "reflect"
  // (amount < size), "replicate" or "circular" (amount <= size)
  Tensor pad(const Pads& before_after, const std::string& mode, double value = 0.0) const;
  // torch's interpolate over the last size.size() axes: "linear" (bi/trilinear for 2/3 axes),
  // "nearest" or "nearest-exact"; align_corners only with "linear". Result in this dtype.
  Tensor interpolate(const Shape& size, const std::string& mode = "linear", bool align_corners = false) const;

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
  // softmax(q k^T / sqrt(d) + mask) v over (..., heads, L, d); a bool mask keeps where true; the
  // weights go through dropout(dropout_p) (active only while training()); is_causal with a mask,
  // a dropout_p outside [0, 1], or (enable_gqa) heads that do not divide are invalid_argument
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
  // ---- normalization and dropout (tinygrad's semantics) ----
  // (x - mean) * rsqrt(var + eps) over `axes` (negative count from the end; biased variance, as
  // tinygrad/torch's layer_norm). Throws kiln::Error for an axis out of range or given twice.
  Tensor layernorm(const std::vector<int>& axes = {-1}, double eps = 1e-5) const;
  // (x - mean) * weight * invstd + bias, each of mean/weight/bias/invstd shaped like the `axes`
  // dimensions of x (default: channels, axis 1) and broadcast along the others; an invstd of
  // another rank multiplies as it is (tinygrad). Throws kiln::Error naming the operand whose
  // element count does not match the axes' sizes.
  Tensor batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean,
                   const Tensor& invstd, const std::vector<int>& axes = {1}) const;
  // Zeroes each element with probability p and scales the rest by 1/(1-p), only while training()
  // is on (otherwise, and for p == 0, x itself); p == 1 gives zeros. The mask is drawn from rand
  // (manual_seed makes it repeatable; a Jit replays its capture call's mask, as any rand). Throws kiln::Error unless 0 <= p <= 1.
  Tensor dropout(double p = 0.5) const;
  // The process-wide training flag (tinygrad's Tensor.training): off at start.
  static bool training();
  static void set_training(bool on);

  // linear algebra and nn (NCHW; weight OIHW)
  Tensor matmul(const Tensor&) const;  // numpy matmul semantics, batched broadcast
  Tensor dot(const Tensor&) const;
  Tensor linear(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt) const;  // x @ weight.T + bias
  Tensor conv2d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, int stride = 1, int padding = 0,
                int dilation = 1, int groups = 1) const;
  Tensor max_pool2d(int kernel = 2, int stride = 0, int padding = 0) const;  // stride 0 = kernel
  Tensor avg_pool2d(int kernel = 2, int stride = 0, int padding = 0) const;
  // ---- N-d convolutions and pools (tinygrad's/torch's semantics; tensor/conv.cpp) ----
  // Over the last K dimensions of an input (N, C, *spatial) (pools: any leading dimensions), K from
  // the weight's (O, C/groups, *k) or the pool's kernel. Per-axis vectors take one entry for all K
  // axes or one per axis; `padding` is (before, after) per spatial axis in axis order (one pair:
  // every axis), negative amounts crop. Pass the options explicitly: conv2d(w, b, {.stride = {2}}).
  struct ConvOptions {
    int groups = 1;
    std::vector<int64_t> stride{1}, dilation{1};
    Pads padding{};
    std::vector<int64_t> output_padding{0};  // conv_transpose2d only
    std::optional<DType> dtype{};            // conv2d only: the products summed in it, the result's (tinygrad's dtype=)
  };
  struct PoolOptions {
    std::vector<int64_t> kernel{2, 2};
    std::vector<int64_t> stride{};  // empty: the kernel
    std::vector<int64_t> dilation{1};
    Pads padding{};
    bool ceil_mode = false;          // torch's output size: a last window that starts in the input or left padding counts
    bool count_include_pad = true;   // avg_pool2d: padding counts in the divisor (never ceil_mode's extra)
  };
  // torch.nn.functional.conv1d/2d/3d for any K >= 1 (weight (Cout, Cin/groups, *k), bias (Cout,)).
  // kiln::Error when the ranks, channels, groups or bias do not match, an entry is < 1 (stride,
  // dilation, groups) or the dilated kernel is larger than the padded input.
  Tensor conv2d(const Tensor& weight, const std::optional<Tensor>& bias, const ConvOptions& options) const;
  // torch's conv_transpose1d/2d/3d (weight (Cin, Cout/groups, *k)): the convolution of the input
  // spread `stride` apart with the flipped weight. kiln::Error as conv2d, and when output_padding is
  // not below max(stride, dilation) on its axis or the output would be empty.
  Tensor conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias, const ConvOptions& options) const;
  // torch's max_pool1d/2d/3d (padding with the dtype's lowest value). Gradient as torch: each window's
  // to its first maximum (row-major), summed where windows overlap. kiln::Error for a kernel, stride
  // or dilation entry < 1, a count that is neither 1 nor K, or a window larger than the padded input.
  Tensor max_pool2d(const PoolOptions& options) const;
  // max_pool2d and torch's return_indices: each window's first maximum as a flat index into its
  // plane of the unpadded input (int32, the values' shape).
  std::pair<Tensor, Tensor> max_pool2d_with_indices(const PoolOptions& options) const;
  // torch's avg_pool1d/2d/3d: ceil_mode and count_include_pad as torch. Errors as max_pool2d.
  Tensor avg_pool2d(const PoolOptions& options) const;
  // torch's max_unpool (input (N, C, *spatial) and the indices max_pool2d_with_indices gave): each
  // value written at its flat index of a zero (N, C, *output_size) plane. output_size: the last K
  // entries count; empty: torch's default (I-1)*stride - padding + dilation*(k-1) + 1. kiln::Error
  // when the indices' shape differs from the input's.
  Tensor max_unpool2d(const Tensor& indices, const PoolOptions& options, const Shape& output_size = {}) const;
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
  // broadcast or on another device: kiln::Error. A symbolic axis (symbolic_dim) takes only the
  // whole-axis slice (start 0, stop none or >= the variable's max, step 1): anything else would be
  // resolved from the bound value and kept for other values; kiln::Error. Gradients flow to this tensor (not to the indices).
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
  // The address of this tensor's elements in host memory, shared, not copied: realizes it (a view
  // that is not contiguous becomes a buffer of its own), waits for its device, and returns its
  // buffer's address on a device whose memory is host memory (cpu, ref); nullptr on a device with
  // memory of its own or for a sharded tensor. Valid while this tensor's buffer lives.
  void* host_data();
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
