// kiln/optim.hpp - optimizers: each step() builds the updates of every parameter (assign in place)
// and of its own state, and realizes them in one schedule. State lives on the parameters' devices.
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

 protected:
  explicit Optimizer(std::vector<Tensor> params);
  void realize_step();  // realize_all(step_tensors())
  std::vector<Tensor> params_;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr = 1e-3, double momentum = 0, double weight_decay = 0,
      bool nesterov = false);
  void step() override;
  std::vector<Tensor> step_tensors() override;

 private:
  double lr_, momentum_, weight_decay_;
  bool nesterov_;
  std::vector<Tensor> buf_;         // momentum buffers (when momentum != 0)
  std::vector<bool> started_;       // per parameter: its buffer holds a value
};

class Adam : public Optimizer {  // weight_decay > 0 is decoupled (AdamW)
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0);
  void step() override;
  std::vector<Tensor> step_tensors() override;

 private:
  double lr_, beta1_, beta2_, eps_, weight_decay_;
  std::vector<int64_t> t_;  // steps taken, per parameter
  std::vector<Tensor> m_, v_;
};

}  // namespace kiln::optim
