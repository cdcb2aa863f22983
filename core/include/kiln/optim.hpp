// kiln/optim.hpp - optimizers: each step() builds the updates of every parameter (assign in place)
// and of its own state, and realizes them in one schedule. State lives on the parameters' devices,
// and so does every quantity that changes from step to step (the learning rate, Adam's bias
// corrections): a step is the same kernels every time, and a Jit that replays it computes what the
// eager steps compute, bit for bit.
// The formulas are torch's (SGD with momentum, dampening 0, optional Nesterov; Adam, decoupled
// weight decay (AdamW) when weight_decay > 0).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::optim {

class Optimizer {
 public:
  virtual ~Optimizer();
  virtual void step() = 0;
  void zero_grad();  // forgets every parameter's gradient (the next backward starts from none)
  const std::vector<Tensor>& params() const;
  // (addition) The lazy assigns of one step, for realizing together with other tensors (the loss)
  // in one schedule: Tensor::realize_all. step() is realize_all(step_tensors()). A parameter
  // without a gradient is left as it is.
  virtual std::vector<Tensor> step_tensors();
  // (addition) The learning rate, for a schedule that changes it between steps: it lives in a
  // device tensor per parameter that every step reads, so a step replayed by a Jit sees the new
  // value and no kernel is compiled again. Throws unless lr is a number >= 0.
  void set_lr(double lr);
  double lr() const;

 protected:
  Optimizer(std::vector<Tensor> params, double lr);
  void realize_step();  // realize_all(step_tensors())
  std::vector<Tensor> params_;
  // Per parameter, on its device(s): the learning rate as a 0-d tensor of the parameter's dtype.
  std::vector<Tensor> lr_;
  double lr_value_;
};

class SGD : public Optimizer {
 public:
  // classic (tinygrad's flag): the learning rate scales the gradient before it enters the momentum
  // buffer (buf = momentum * buf + lr * g, the update is buf), instead of scaling the update (torch's
  // buf = momentum * buf + g, update lr * buf). The same steps while lr is constant.
  SGD(std::vector<Tensor> params, double lr = 1e-3, double momentum = 0, double weight_decay = 0,
      bool nesterov = false, bool classic = false);
  void step() override;
  std::vector<Tensor> step_tensors() override;

 private:
  double momentum_, weight_decay_;
  bool nesterov_, classic_;
  std::vector<Tensor> buf_;         // momentum buffers (when momentum != 0), zero before the first step
};

class Adam : public Optimizer {  // weight_decay > 0 is decoupled (AdamW)
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0);
  void step() override;
  std::vector<Tensor> step_tensors() override;

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  std::vector<Tensor> m_, v_;
  // per parameter, 0-d on its device(s): beta1^t and beta2^t after its t-th step (each parameter
  // counts its own steps, as torch does: one without a gradient is not a step for it)
  std::vector<Tensor> beta1_t_, beta2_t_;
};

}  // namespace kiln::optim
