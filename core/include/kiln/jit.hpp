// kiln/jit.hpp - capture a function's kernels once, replay them with new inputs.
//
// Call 1 runs fn and realizes its outputs (warm-up: kernels compile, and with KILN_BEAM set their
// actions are searched). Call 2 runs fn again and records every item it runs, on every device, as
// one plan. Later calls do not run fn: they replay the plan with this call's input buffers and
// variable values swapped in (no graph, schedule or allocation).
//
// Contract (docs/architecture.md, "The JIT", says why):
//  - Inputs are realized first. After capture, a call whose inputs differ in count, shape, dtype or
//    device, whose inputs alias one another differently, or whose variables differ in count, name
//    or range throws kiln::Error naming the input and both values.
//  - Except a symbolic view of a buffer (buf.shrink(axis, n) and reshapes or fixed shrinks of one)
//    whose variables are all in `vars`: it stays a view, and later calls may pass any buffer of
//    the same size seen the same way, with the variables bound to new values (a different view is
//    a kiln::Error naming both). Without its variables in `vars` it is realized like any input.
//  - Buffers fn reads but was not given (weights) are captured by reference: an assign to them
//    between calls is seen once it is realized (an optimizer's step realizes its updates). An
//    input fn writes in place (assign) is written on every replay. An input may be a buffer the
//    plan holds (the previous call's output passed back, `h = f({h})[0]`): the kernels read a copy.
//    Pass a weight either as an input or by reference, not both on the capture call: its reads
//    would all become the input's.
//  - The outputs of a call view the plan's output buffers: they stay valid until the next call of
//    the same Jit, which overwrites them (keep a copy with `out.clone()`, which copies at once, or
//    read it). An output that is an input unchanged is this call's input.
//  - A function that runs no kernel or copy cannot be captured: call 2 throws kiln::Error.
//  - A BoundVariable passed in `vars` is re-bound on every replay: launch sizes and kernel
//    arguments follow its value, and outputs whose shape uses it take the new size (also an
//    output fn realized itself, though realize gives the tensor fn saw a fixed size).
//  - Not replayed: what fn does on the host (reading values with to_vector/item, branching on
//    them, printing), and rand/randn inside fn, which draw their numbers when the graph is built:
//    every replay repeats the capture call's numbers (pass random tensors in as inputs instead).
//  - Calls are serialised with realizes (one at a time in the process), and calls of one Jit from
//    several threads one after another; several Jits may be alive and used in any order. fn must
//    not call the Jit that runs it (that throws kiln::Error); another Jit called inside fn while fn
//    is being captured runs its function, so the outer plan holds its kernels.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs,
                                               const std::vector<BoundVariable>& vars)>;
  explicit Jit(Fn fn);
  ~Jit();
  Jit(Jit&&) noexcept;
  Jit& operator=(Jit&&) noexcept;

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs,
                                 const std::vector<BoundVariable>& vars = {});
  bool captured() const;        // true once a plan exists (from the end of call 2)
  size_t kernel_count() const;  // items (kernels and copies) in the captured plan; 0 before
  void reset();                 // forget the plan; the next call starts again at call 1

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
