"""kiln.nn.optim: tinygrad's optimizers over kiln's C++ ones (kiln/optim.hpp).

    opt = SGD(get_parameters(model), lr=0.01, momentum=0.9)
    opt.zero_grad(); loss.backward(); opt.step()      # or loss.realize(*opt.schedule_step())

As in tinygrad, step() needs Tensor.training (RuntimeError otherwise), the tensors given are made
to require grad, and buffers (BatchNorm's running statistics) are skipped. `lr` is a float here
(tinygrad's is a Tensor): setting it changes the rate of the next steps, also of a TinyJit that
replays them, without recompiling.
"""
from __future__ import annotations

from kiln import _kiln
from kiln._kiln import Tensor
from kiln.nn.state import _is_buffer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class Optimizer:
    def __init__(self, impl_type, params: list[Tensor], lr: float, **kwargs):
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        seen: set[int] = set()
        self.params: list[Tensor] = []
        self.buffers: list[Tensor] = []
        for t in params:
            if not isinstance(t, Tensor):
                raise TypeError(f"optimizer params must be Tensors, got {type(t).__name__}")
            if id(t) in seen:
                continue
            seen.add(id(t))
            (self.buffers if _is_buffer(t) else self.params).append(t)
        if not self.params:
            raise ValueError("optimizer must have at least one param")
        for t in self.params:
            if not t.requires_grad:
                t.requires_grad = True
        self._impl = impl_type(self.params, lr=lr, **kwargs)

    @property
    def lr(self) -> float:
        return self._impl.lr

    @lr.setter
    def lr(self, value: float) -> None:
        if value < 0:
            raise ValueError(f"Invalid learning rate: {value}")
        self._impl.lr = value

    def zero_grad(self) -> None:
        """Forgets every parameter's gradient (the next backward starts from none)."""
        self._impl.zero_grad()

    def _check_training(self) -> None:
        if not Tensor.training:
            raise RuntimeError("Tensor.training is False; it must be True to use the optimizer "
                               "(set Tensor.training = True, or use `with Tensor.train():`)")

    def schedule_step(self) -> list[Tensor]:
        """The lazy updates of one step (parameters and optimizer state), to realize with the loss:
        loss.realize(*opt.schedule_step())."""
        self._check_training()
        return list(self._impl.schedule_step()) + self.buffers

    def step(self) -> None:
        """One step: every parameter with a gradient is updated (one schedule)."""
        self._check_training()
        self._impl.step()
        if self.buffers:
            self.buffers[0].realize(*self.buffers[1:])


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (classic: lr applied before the momentum
    buffer), Nesterov momentum and (coupled) weight decay."""

    def __init__(self, params: list[Tensor], lr: float = 0.001, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, classic: bool = False):
        if momentum < 0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(_kiln._optim.SGD, params, lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov,
                         classic=classic)


class AdamW(Optimizer):
    """Adam with decoupled weight decay (tinygrad's default weight_decay=0.01)."""

    def __init__(self, params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                 weight_decay: float = 0.01):
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(_kiln._optim.Adam, params, lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay)


class Adam(AdamW):
    """Adam (no weight decay)."""

    def __init__(self, params: list[Tensor], lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        super().__init__(params, lr, b1, b2, eps, 0.0)
