// tensor/loss.cpp - the losses of tinygrad's Tensor (torch.nn.functional's definitions: cross
// entropy with class indices or probabilities and label smoothing, nll_loss with class weights and
// an ignored label, binary cross entropy on probabilities or logits) and scaled dot-product
// attention. Compositions of Tensor ops (log_softmax, gather, matmul, softmax), so their gradients
// are autograd's.
#include <cmath>
#include <limits>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

Tensor reduce(const Tensor& t, const std::string& reduction, const char* op) {
  if (reduction == "none") return t;
  if (reduction == "sum") return t.sum();
  if (reduction == "mean") return t.mean();
  fail(ErrorCode::invalid_argument, op, ": reduction must be one of 'mean', 'sum', 'none', got '", reduction, "'");
}

void check_reduction(const std::string& reduction, const char* op) {
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    fail(ErrorCode::invalid_argument, op, ": reduction must be one of 'mean', 'sum', 'none', got '", reduction, "'");
}

void check_smoothing(double ls, const char* op) {
  if (!(ls >= 0 && ls <= 1)) fail(ErrorCode::invalid_argument, op, ": label_smoothing must be in [0, 1], got ", ls);
}

// Integer labels Y as one-hot values of `dtype` along a new axis `axis` of size n (a label outside
// [0, n) matches no class). Not named one_hot: inside Tensor's members, Tensor::one_hot would hide it.
Tensor labels_one_hot(const Tensor& Y, int64_t n, int axis, DType dtype, const char* op) {
  if (!Y.dtype().is_int())
    fail(ErrorCode::invalid_argument, op, ": class labels must be an integer tensor, got ", Y.dtype().name());
  Tensor y = Y.unsqueeze(axis);
  Shape s(static_cast<size_t>(y.ndim()), 1);
  s[static_cast<size_t>(norm_axis(axis, y.shape(), op))] = n;
  Tensor classes = Tensor::arange(0, static_cast<double>(n), 1, Y.dtype(), Y.device()).reshape(s);
  return y.eq(classes).cast(dtype);
}

}  // namespace

Tensor Tensor::cross_entropy(const Tensor& Y, const std::string& reduction, double label_smoothing) const {
  check_reduction(reduction, "cross_entropy");
  check_smoothing(label_smoothing, "cross_entropy");
  if (ndim() == 0) fail(ErrorCode::invalid_argument, "cross_entropy: the logits need a class axis, got a 0-d tensor");
  int cd = ndim() == 1 ? 0 : 1;
  int64_t n = shape()[static_cast<size_t>(cd)];
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor y = Y;
  if (Y.shape() != shape()) {
    Shape want = shape();
    want.erase(want.begin() + cd);
    if (Y.shape() != want)
      fail(ErrorCode::invalid_argument, "cross_entropy: the target must be class indices of shape ", shape_str(want),
           " or probabilities of shape ", shape_str(shape()), ", got ", shape_str(Y.shape()));
    y = labels_one_hot(Y, n, cd, x.dtype(), "cross_entropy");
  }
  y = y * (1.0 - label_smoothing) + label_smoothing / static_cast<double>(n);
  return reduce(-(x.log_softmax(cd) * y).sum({cd}), reduction, "cross_entropy");
}

Tensor Tensor::sparse_categorical_crossentropy(const Tensor& Y, int64_t ignore_index, double label_smoothing,
                                               const std::string& reduction) const {
  const char* op = "sparse_categorical_crossentropy";
  check_reduction(reduction, op);
  check_smoothing(label_smoothing, op);
  if (ndim() == 0 || Y.ndim() + 1 != ndim() || !std::equal(Y.shape().begin(), Y.shape().end(), shape().begin()))
    fail(ErrorCode::invalid_argument, op, ": logits ", shape_str(shape()), " need labels of their shape without the last (class) axis, got ",
         shape_str(Y.shape()));
  Tensor log_probs = (dtype().is_float() ? *this : cast(dtypes::default_float)).log_softmax(-1);
  Tensor mask = ignore_index != -1 ? Y.ne(scalar_like(Y, ignore_index)) : Y.eq(Y);
  Tensor fmask = mask.cast(log_probs.dtype());
  Tensor y = labels_one_hot(Y, shape().back(), -1, log_probs.dtype(), op) * fmask.unsqueeze(-1);
  Tensor unreduced = (log_probs * y).sum({-1}) * (1.0 - label_smoothing) + log_probs.mean({-1}) * fmask * label_smoothing;
  if (reduction == "mean") return -unreduced.sum() / fmask.sum();
  return reduce(-unreduced, reduction, op);
}

Tensor Tensor::binary_crossentropy(const Tensor& Y, const std::string& reduction) const {
  check_reduction(reduction, "binary_crossentropy");
  // torch clamps each log at -100, so that a probability of exactly 0 or 1 gives a finite loss
  Tensor lo = const_like(*this, -100.0, dtype().is_float() ? dtype() : dtypes::default_float);
  Tensor l = (-(Y * log().maximum(lo) + (1.0 - Y) * (1.0 - *this).log().maximum(lo)));
  return reduce(l, reduction, "binary_crossentropy");
}

Tensor Tensor::binary_crossentropy_logits(const Tensor& Y, const std::string& reduction, const std::optional<Tensor>& pos_weight) const {
  check_reduction(reduction, "binary_crossentropy_logits");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor pos = Y * x.logsigmoid();
  if (pos_weight) pos = *pos_weight * pos;
  return reduce(-(pos + (1.0 - Y) * (-x).logsigmoid()), reduction, "binary_crossentropy_logits");
}

Tensor Tensor::nll_loss(const Tensor& Y, const std::optional<Tensor>& weight, std::optional<int64_t> ignore_index,
                        const std::string& reduction) const {
  const char* op = "nll_loss";
  check_reduction(reduction, op);
  if (ndim() == 0) fail(ErrorCode::invalid_argument, op, ": the input needs a class axis, got a 0-d tensor");
  int cd = ndim() == 1 ? 0 : 1;
  Shape want = shape();
  want.erase(want.begin() + cd);
  if (Y.shape() != want)
    fail(ErrorCode::invalid_argument, op, ": input ", shape_str(shape()), " needs targets of shape ", shape_str(want), ", got ",
         shape_str(Y.shape()));
  if (!Y.dtype().is_int()) fail(ErrorCode::invalid_argument, op, ": targets must be an integer tensor, got ", Y.dtype().name());
  int64_t n = shape()[static_cast<size_t>(cd)];
  if (weight && (weight->ndim() != 1 || weight->shape()[0] != n))
    fail(ErrorCode::invalid_argument, op, ": weight must have shape (", n, ",), one per class, got ", shape_str(weight->shape()));
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  // ignored targets read class 0 (any class would do: their weight is 0)
  Tensor keep = ignore_index ? Y.ne(scalar_like(Y, *ignore_index)) : Y.eq(Y);
  Tensor y = ignore_index ? where(keep, Y, scalar_like(Y, 0)) : Y;
  Tensor w = weight ? weight->cast(x.dtype()).gather(0, y.flatten()).reshape(Y.shape()) : const_like(Y, 1.0, x.dtype());
  w = w * keep.cast(x.dtype());
  Tensor nll = -x.gather(cd, y.unsqueeze(cd)).squeeze(cd) * w;
  if (reduction == "mean") return nll.sum() / w.sum();
  return reduce(nll, reduction, op);
}

Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask,
                                            double dropout_p, bool is_causal, bool enable_gqa) const {
  const char* op = "scaled_dot_product_attention";
  if (ndim() < 2 || key.ndim() < 2 || value.ndim() < 2)
    fail(ErrorCode::invalid_argument, op, ": query, key and value need at least 2 dimensions (..., L, E), got ", shape_str(shape()), ", ",
         shape_str(key.shape()), ", ", shape_str(value.shape()));
  if (is_causal && attn_mask) fail(ErrorCode::invalid_argument, op, ": cannot set attn_mask when is_causal=True");
  Tensor k = key, v = value;
  if (enable_gqa) {
    if (ndim() < 3 || k.ndim() < 3 || v.ndim() < 3)
      fail(ErrorCode::invalid_argument, op, ": enable_gqa needs a head axis (..., H, L, E), got ", shape_str(shape()));
    // each key/value head serves a group of consecutive query heads (torch's repeat_interleave)
    auto repeat = [&](const Tensor& t, const char* name) {
      int64_t hq = shape()[shape().size() - 3], hk = t.shape()[t.shape().size() - 3];
      if (hk == 0 || hq % hk != 0)
        fail(ErrorCode::invalid_argument, op, ": the query's ", hq, " heads must be a multiple of the ", name, "'s ", hk, " heads");
      Shape s = t.shape();
      Tensor u = t.unsqueeze(-3);
      Shape e = u.shape();
      e[e.size() - 3] = hq / hk;
      s[s.size() - 3] = hq;
      return u.expand(e).reshape(s);
    };
    k = repeat(k, "key");
    v = repeat(v, "value");
  }
  Tensor q = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor qk = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(shape().back())));
  std::optional<Tensor> mask = attn_mask;
  if (is_causal) {
    int64_t lq = qk.shape()[qk.shape().size() - 2], lk = qk.shape().back();
    Tensor rows = Tensor::arange(0, static_cast<double>(lq), 1, dtypes::int32, qk.device()).reshape({lq, 1});
    Tensor cols = Tensor::arange(0, static_cast<double>(lk), 1, dtypes::int32, qk.device()).reshape({1, lk});
    mask = cols.le(rows);
  }
  if (mask) {
    if (mask->dtype().is_bool())
      qk = qk + where(*mask, const_like(qk, 0), const_like(qk, -std::numeric_limits<double>::infinity()));
    else
      qk = qk + *mask;
  }
  // attention dropout is dropout() of the weights: active only while training() (tinygrad)
  return qk.softmax(-1).dropout(dropout_p).matmul(v);
}

}  // namespace kiln
