// tensor/optim.cpp - SGD and Adam over lazy assigns (one schedule per step).
#include "kiln/optim.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/buffer.hpp"

#include "tensor/multi.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln::optim {

namespace {
// A zero-filled buffer shaped, typed and placed like p (optimizer state; a sharded parameter's is
// sharded the same way).
Tensor state_like(const Tensor& p) {
  if (detail::multi_of(p)) return detail::map_parts(p, state_like);
  return Tensor::zeros(p.shape(), p.dtype(), p.device()).contiguous().realize();
}
// The dtype of a parameter's scalar state (learning rate, bias corrections): float64 for a float64
// parameter, float32 for the others (a half-precision power of beta would lose the step count).
DType scalar_dtype(const Tensor& p) { return p.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32; }
// A 0-d buffer holding `value` on p's device (on each of a multi-device parameter's devices).
Tensor scalar_state(const Tensor& p, double value) {
  return Tensor::full({}, value, scalar_dtype(p), p.device()).contiguous().realize();
}
void check_lr(double lr, const char* who) {
  if (!(lr >= 0) || std::isinf(lr))
    fail(ErrorCode::invalid_argument, who, ": the learning rate must be a finite number >= 0 (got ", lr, ")");
}
// f(i, p, g, out) for each parameter p (index i) that has a gradient g; out collects the
// tensors the step writes.
template <class F>
std::vector<Tensor> for_each_gradient(std::vector<Tensor>& params, F f) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); ++i)
    if (std::optional<Tensor> grad = params[i].grad()) f(i, params[i], *grad, out);
  return out;
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : params_(std::move(params)), lr_value_(lr) {
  check_lr(lr, "optimizer");
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad())
      fail(ErrorCode::invalid_argument, "optimizer: parameter ", i, " of shape ", detail::shape_str(params_[i].shape()),
           " does not require grad; mark it with requires_grad_() (its gradient would never be set)");
    params_[i].realize();  // a buffer, so assigns update it in place
  }
  // Identical lazy values share one buffer when realized (zeros(...).contiguous() twice is one
  // computation); parameters updated separately must not, so a repeated buffer is copied and that
  // parameter's tensor re-pointed at its own copy.
  std::vector<const void*> seen;
  for (Tensor& p : params_) {
    if (detail::multi_of(p)) continue;
    const void* storage = runtime::storage_of(detail::view_buffer(p.state()->uop())).get();
    if (std::find(seen.begin(), seen.end(), storage) != seen.end()) {
      Tensor own = p.clone().realize();
      p.state()->update([&](detail::TensorGraph& g) { g = own.state()->graph(); });
      storage = runtime::storage_of(detail::view_buffer(p.state()->uop())).get();
    }
    seen.push_back(storage);
  }
  for (const Tensor& p : params_) lr_.push_back(scalar_state(p, lr));
}
Optimizer::~Optimizer() = default;

void Optimizer::zero_grad() {
  for (Tensor& p : params_) {
    std::lock_guard<std::mutex> lock(p.state()->grad_mu);
    p.state()->grad.reset();
  }
}

const std::vector<Tensor>& Optimizer::params() const { return params_; }

void Optimizer::set_lr(double lr) {
  check_lr(lr, "set_lr");
  for (size_t i = 0; i < lr_.size(); ++i) lr_[i].assign(scalar_state(params_[i], lr)).realize();
  lr_value_ = lr;
}
double Optimizer::lr() const { return lr_value_; }

void Optimizer::realize_step() {
  std::vector<Tensor> t = step_tensors();
  Tensor::realize_all(t);
}

std::vector<Tensor> Optimizer::step_tensors() {
  fail(ErrorCode::unimplemented, "optimizer: this optimizer has no step_tensors(); call step()");
}

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay, bool nesterov, bool classic)
    : Optimizer(std::move(params), lr), momentum_(momentum), weight_decay_(weight_decay), nesterov_(nesterov), classic_(classic) {
  if (!(momentum >= 0) || !(weight_decay >= 0) || std::isinf(momentum) || std::isinf(weight_decay))
    fail(ErrorCode::invalid_argument, "SGD: momentum and weight_decay must be finite numbers >= 0 (got ", momentum, ", ",
         weight_decay, ")");
  if (nesterov && momentum == 0) fail(ErrorCode::invalid_argument, "SGD: nesterov needs a momentum > 0");
  if (momentum_ != 0)
    for (const Tensor& p : params_) buf_.push_back(state_like(p));
}

std::vector<Tensor> SGD::step_tensors() {
  return for_each_gradient(params_, [&](size_t i, Tensor& p, Tensor g, std::vector<Tensor>& out) {
    if (weight_decay_ != 0) g = g + p * weight_decay_;
    if (classic_) g = g * lr_[i];  // (classic momentum: the buffer accumulates lr-scaled steps)
    if (momentum_ != 0) {
      // torch: the first step's buffer is the gradient; the buffer starts at zero, so the same
      // formula gives it (0 * momentum + g == g) and every step is the same kernels. The
      // parameter's update reads the buffer as assigned (not the expression again), so the buffer
      // is written before and no kernel has to read its old value after it changes.
      buf_[i].assign(buf_[i] * momentum_ + g);
      out.push_back(buf_[i]);
      g = nesterov_ ? g + buf_[i] * momentum_ : buf_[i];
    }
    p.assign(classic_ ? p - g : p - g * lr_[i]);
    out.push_back(p);
  });
}

void SGD::step() { realize_step(); }

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps, double weight_decay)
    : Optimizer(std::move(params), lr), beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay) {
  if (!(eps >= 0) || !(weight_decay >= 0) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || std::isinf(eps) ||
      std::isinf(weight_decay))
    fail(ErrorCode::invalid_argument, "Adam: needs finite eps, weight_decay >= 0 and 0 <= beta < 1 (got lr ", lr, ", betas ",
         beta1, ", ", beta2, ", eps ", eps, ", weight_decay ", weight_decay, ")");
  for (const Tensor& p : params_) {
    m_.push_back(state_like(p));
    v_.push_back(state_like(p));
    beta1_t_.push_back(scalar_state(p, 1));
    beta2_t_.push_back(scalar_state(p, 1));
  }
}

std::vector<Tensor> Adam::step_tensors() {
  return for_each_gradient(params_, [&](size_t i, Tensor& p, const Tensor& g, std::vector<Tensor>& out) {
    // the bias corrections 1 - beta^t come from the device (beta^t is multiplied by beta each step),
    // not from the host: the step is the same kernels at every t, replayed or not
    beta1_t_[i].assign(beta1_t_[i] * beta1_);
    beta2_t_[i].assign(beta2_t_[i] * beta2_);
    m_[i].assign(m_[i] * beta1_ + g * (1 - beta1_));  // (the update reads the moments as assigned, see SGD)
    v_[i].assign(v_[i] * beta2_ + g * g * (1 - beta2_));
    Tensor c1 = 1.0 - beta1_t_[i], c2 = 1.0 - beta2_t_[i];
    Tensor base = weight_decay_ != 0 ? p * (1.0 - lr_[i] * weight_decay_) : p;  // AdamW: decay decoupled from the gradient
    p.assign(base - (m_[i] / c1) / ((v_[i] / c2).sqrt() + eps_) * lr_[i]);
    out.insert(out.end(), {beta1_t_[i], beta2_t_[i], m_[i], v_[i], p});
  });
}

void Adam::step() { realize_step(); }

}  // namespace kiln::optim
