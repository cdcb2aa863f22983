// ops_reduce_linalg.cpp - ONNX operators: MatMul, Gemm, Einsum, Det, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (contractions and reductions with more than one operand).
#include <cmath>
#include <optional>

#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {

// t * v in t's dtype: integers stay exact for integral factors; otherwise the product is formed in
// float64 and cast back (truncating, as the reference's astype).
Tensor scaled(const Tensor& t, double v) {
  if (v == 1) return t;
  if (t.dtype().is_float()) return t * Tensor::full({}, v, t.dtype(), t.device());
  if (v == std::trunc(v) && std::abs(v) < 9.0e15) return t * scalar_like(t, static_cast<int64_t>(v));
  return (t.cast(dtypes::float64) * Tensor::full({}, v, dtypes::float64, t.device())).cast(t.dtype());
}

std::vector<Tensor> matmul(const Node& n) {
  // numpy's matmul: 1-D operands gain and lose a unit axis, batch axes broadcast
  const Tensor& a = n.in(0);
  return {a.matmul(n.in(1)).cast(a.dtype())};
}

std::vector<Tensor> gemm(const Node& n) {
  const Tensor& a = n.in(0);
  const Tensor& b = n.in(1);
  if (a.ndim() != 2 || b.ndim() != 2)
    n.fail("A and B must be matrices, got ranks " + std::to_string(a.ndim()) + " and " + std::to_string(b.ndim()),
           ErrorCode::invalid_argument);
  const Tensor A = n.attr_int("transA", 0) != 0 ? a.transpose(0, 1) : a;
  const Tensor B = n.attr_int("transB", 0) != 0 ? b.transpose(0, 1) : b;
  Tensor y = scaled(A.matmul(B).cast(a.dtype()), n.attr_float("alpha", 1.0));
  const std::optional<Tensor> c = n.opt(2);
  const double beta = n.attr_float("beta", 1.0);
  if (!c || beta == 0) return {y};
  // C broadcasts one way, to (M, N): before opset 7 only with broadcast = 1, else it is (M, N) itself
  const bool may_broadcast = n.opset() >= 7 || n.attr_int("broadcast", 0) != 0;
  bool fits = c->ndim() <= 2;
  for (int i = 1; fits && i <= c->ndim(); ++i) {
    const int64_t have = c->shape()[static_cast<size_t>(c->ndim() - i)], want = y.shape()[static_cast<size_t>(2 - i)];
    fits = have == want || (may_broadcast && have == 1);
  }
  if (!fits || (!may_broadcast && c->ndim() != 2)) {
    std::string cs;
    for (int64_t d : c->shape()) cs += (cs.empty() ? "" : ", ") + std::to_string(d);
    n.fail("C of shape (" + cs + ") does not " + (may_broadcast ? "broadcast to" : "match") + " the product's shape (" +
               std::to_string(y.shape()[0]) + ", " + std::to_string(y.shape()[1]) + ")",
           ErrorCode::invalid_argument);
  }
  return {y + scaled(c->cast(a.dtype()), beta)};
}

std::vector<Tensor> einsum(const Node& n) {
  std::string equation;
  for (char ch : n.attr_string("equation", ""))
    if (ch != ' ') equation += ch;  // ONNX allows spaces anywhere
  if (equation.empty()) n.fail("attribute 'equation' is required", ErrorCode::invalid_argument);
  std::vector<Tensor> operands;
  for (size_t i = 0; i < n.num_inputs(); ++i) operands.push_back(n.in(i));
  if (operands.empty()) n.fail("Einsum needs at least one input", ErrorCode::invalid_argument);
  return {Tensor::einsum(equation, operands).cast(operands[0].dtype())};
}

// The determinant of each matrix in the last two axes, by Gaussian elimination with partial
// pivoting: step k swaps the row with the largest |value| in column k (at or below k) into place,
// multiplies the determinant by the pivot (and -1 per swap) and clears the column below it. A zero
// pivot means the column is zero from k down: the determinant is 0 and the step divides by 1
// instead, so no NaN reaches it. The graph has one step per row, each materialized (contiguous)
// so that its many readers do not recompute the chain: meant for the small matrices models hold.
Tensor determinant(const Node& n, const Tensor& x) {
  const int r = x.ndim();
  if (r < 2 || x.shape()[static_cast<size_t>(r - 1)] != x.shape()[static_cast<size_t>(r - 2)])
    n.fail("the input must be square matrices in its last two axes", ErrorCode::invalid_argument);
  const int64_t m = x.shape().back();
  constexpr int64_t kMaxSize = 64;  // each row is one step of the graph: a bound on its depth
  if (m > kMaxSize)
    n.fail("matrices of size " + std::to_string(m) + " are not supported (kiln eliminates row by row, up to " +
           std::to_string(kMaxSize) + ")");
  const Shape batch(x.shape().begin(), x.shape().end() - 2);
  Tensor det = Tensor::ones(batch, x.dtype(), x.device());
  Tensor a = x;
  const Tensor rows = Tensor::arange(0, static_cast<double>(m), 1, dtypes::int32, x.device());  // (m)
  const Tensor rows_col = rows.reshape({m, 1});
  using I = Tensor::Index;
  for (int64_t k = 0; k < m; ++k) {
    // the pivot row: the first largest |a[i, k]| with i >= k
    Tensor col = a.getitem({I::ellipsis(), I::slice(), I::integer(k)});  // (..., m)
    Tensor cand = Tensor::where(rows.ge(scalar_like(rows, k)), col.abs(), Tensor::full({}, -1, col.dtype(), x.device()));
    Tensor p = cand.argmax(-1, true);  // (..., 1) int32
    Shape row_shape = a.shape();
    row_shape[static_cast<size_t>(r - 2)] = 1;
    Tensor row_k = a.getitem({I::ellipsis(), I::slice(k, k + 1), I::slice()});                 // (..., 1, m)
    Tensor row_p = a.gather(r - 2, p.unsqueeze(-1).expand(row_shape));                         // (..., 1, m)
    Tensor is_k = rows_col.eq(scalar_like(rows_col, k));                                        // (m, 1)
    Tensor is_p = rows_col.eq(p.unsqueeze(-1));                                                 // (..., m, 1)
    a = Tensor::where(is_k, row_p, Tensor::where(is_p, row_k, a));
    Tensor p_flat = p.squeeze(-1);
    Tensor swapped = p_flat.ne(scalar_like(p_flat, k));
    Tensor pivot = a.getitem({I::ellipsis(), I::integer(k), I::integer(k)});                   // (...)
    det = Tensor::where(swapped, -det, det) * pivot;
    Tensor safe = Tensor::where(pivot.eq(Tensor::full({}, 0, pivot.dtype(), x.device())),
                                Tensor::full({}, 1, pivot.dtype(), x.device()), pivot);
    Tensor below = rows_col.gt(scalar_like(rows_col, k));                                       // (m, 1)
    Tensor factor = a.getitem({I::ellipsis(), I::slice(), I::slice(k, k + 1)}) / safe.unsqueeze(-1).unsqueeze(-1);
    factor = Tensor::where(below, factor, Tensor::full({}, 0, factor.dtype(), x.device()));   // (..., m, 1)
    a = (a - factor * a.getitem({I::ellipsis(), I::slice(k, k + 1), I::slice()})).contiguous();
    det = det.contiguous();
  }
  return det;
}

std::vector<Tensor> det(const Node& n) {
  const Tensor& x = n.in(0);
  if (!x.dtype().is_float()) n.fail("Det takes float tensors, got " + x.dtype().name(), ErrorCode::invalid_argument);
  return {determinant(n, widened(x)).cast(x.dtype())};
}

// ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ----

// The loss of log-probabilities `logp` (N, C, d...) against class labels `target` (N, d...):
// l = -logp[n, target, d...] * w[target], with w = weight (input 2) or 1, and l = w = 0 where the
// target is ignore_index (which may lie outside [0, C)). Reduced as "none", "sum" or "mean"
// (sum(l) / sum(w): the mean over the samples not ignored, weighted). In logp's dtype.
Tensor nll(const Node& n, const Tensor& logp, const Tensor& target) {
  if (logp.ndim() < 2) n.fail("the input must be (N, C, d1, ...), of rank 2 or more", ErrorCode::invalid_argument);
  Shape want{logp.shape()[0]};
  want.insert(want.end(), logp.shape().begin() + 2, logp.shape().end());
  if (target.shape() != want) n.fail("the target's shape must be the input's without the class axis", ErrorCode::invalid_argument);
  if (!target.dtype().is_int()) n.fail("the target must hold integer class labels", ErrorCode::invalid_argument);
  const std::string reduction = n.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    n.fail("reduction '" + reduction + "' is not one of none, sum, mean", ErrorCode::invalid_argument);

  std::optional<Tensor> keep;  // bool (N, d...): the samples that count
  Tensor label = target;
  if (n.has_attr("ignore_index")) {
    keep = target.ne(scalar_like(target, n.attr_int("ignore_index", 0)));
    label = Tensor::where(*keep, target, scalar_like(target, 0));  // an ignored label reads class 0, then weighs 0
  }
  const Tensor zero = Tensor::full({}, 0, logp.dtype(), logp.device());
  Tensor picked = logp.gather(1, label.unsqueeze(1)).squeeze(1);  // (N, d...)
  Tensor w = Tensor::ones(want, logp.dtype(), logp.device());
  if (auto weight = n.opt(2)) w = weight->cast(logp.dtype()).getitem({Tensor::Index::tensor(label)});
  if (keep) w = Tensor::where(*keep, w, zero);
  Tensor loss = -picked * w;
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.sum() / w.sum();
}

std::vector<Tensor> nll_loss(const Node& n) {
  const Tensor& x = n.in(0);
  return {nll(n, widened(x), n.in(1)).cast(x.dtype())};
}

std::vector<Tensor> softmax_cross_entropy(const Node& n) {
  const Tensor& scores = n.in(0);
  if (scores.ndim() < 2) n.fail("the scores must be (N, C, d1, ...), of rank 2 or more", ErrorCode::invalid_argument);
  Tensor log_prob = widened(scores).log_softmax(1);
  return {nll(n, log_prob, n.in(1)).cast(scores.dtype()), log_prob.cast(scores.dtype())};
}

}  // namespace

void linalg_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"MatMul", 1, {}, matmul},
      {"Gemm", 1, {"alpha", "beta", "broadcast", "transA", "transB"}, gemm},
      {"Einsum", 12, {"equation"}, einsum},
      {"Det", 11, {}, det},
      {"NegativeLogLikelihoodLoss", 12, {"ignore_index", "reduction"}, nll_loss},
      {"SoftmaxCrossEntropyLoss", 12, {"ignore_index", "reduction"}, softmax_cross_entropy},
  });
}

}  // namespace kiln::onnx::detail
