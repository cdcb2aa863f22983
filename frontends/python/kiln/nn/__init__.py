"""kiln.nn: tinygrad's layers (same constructors, initializations and calls) on kiln's Tensor.

    from kiln import Tensor, nn
    layer = nn.Linear(784, 10)
    opt = nn.optim.Adam(nn.state.get_parameters(layer))

Each layer is plain Python over Tensor methods (kiln's C++): its tensors are attributes, so
nn.state.get_state_dict finds them by name ("weight", "bias", "running_mean", ...).
"""
from __future__ import annotations

import math

from kiln._kiln import Tensor
from kiln.nn import optim, state  # noqa: F401
from kiln.nn.state import _mark_buffer

__all__ = ["Linear", "Conv2d", "BatchNorm", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "LayerNorm2d", "GroupNorm",
           "InstanceNorm", "RMSNorm", "Embedding", "optim", "state"]


def _tuple(x, n: int) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n


def _uniform(*shape: int, low: float, high: float) -> Tensor:
    # uniform on [low, high) (Tensor.uniform where this kiln has it)
    if hasattr(Tensor, "uniform"):
        return Tensor.uniform(*shape, low=low, high=high)
    return Tensor.rand(*shape) * (high - low) + low


class BatchNorm:
    """Batch normalization over axis 1 (channels) of a 2D or higher input.

    In training (Tensor.training) it normalizes with the batch's statistics and updates the running
    ones (momentum; the variance unbiased); otherwise it uses the running statistics."""

    def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True,
                 momentum: float = 0.1):
        self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
        self.weight: Tensor | None = Tensor.ones(sz) if affine else None
        self.bias: Tensor | None = Tensor.zeros(sz) if affine else None
        self.num_batches_tracked = _mark_buffer(Tensor.zeros((), dtype="int64").contiguous())
        if track_running_stats:
            self.running_mean = _mark_buffer(Tensor.zeros(sz).contiguous())
            self.running_var = _mark_buffer(Tensor.ones(sz).contiguous())

    def calc_stats(self, x: Tensor) -> tuple[Tensor, Tensor]:
        shape_mask = [1, -1, *([1] * (x.ndim - 2))]
        if self.track_running_stats and not Tensor.training:
            return self.running_mean, self.running_var.reshape(shape_mask)
        reduce_axes = tuple(a for a in range(x.ndim) if a != 1)
        batch_mean = x.mean(axis=reduce_axes)
        y = x - batch_mean.detach().reshape(shape_mask)  # d(var)/d(mean) = 0
        batch_var = (y * y).mean(axis=reduce_axes)
        return batch_mean, batch_var

    def __call__(self, x: Tensor) -> Tensor:
        batch_mean, batch_var = self.calc_stats(x)
        if self.track_running_stats and Tensor.training:
            n, c = x.numel(), x.shape[1]
            self.running_mean.assign((1 - self.momentum) * self.running_mean + self.momentum * batch_mean.detach())
            self.running_var.assign((1 - self.momentum) * self.running_var
                                    + self.momentum * n / (n - c) * batch_var.detach())
            self.num_batches_tracked.assign(self.num_batches_tracked + 1)
        return x.batchnorm(self.weight, self.bias, batch_mean, (batch_var + self.eps).rsqrt())


BatchNorm2d = BatchNorm3d = BatchNorm


class Conv2d:
    """2D convolution (NCHW, weight OIHW); weight and bias uniform on +-1/sqrt(fan_in) as tinygrad."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias: bool = True):
        self.kernel_size = _tuple(kernel_size, 2)
        if isinstance(padding, str):
            if padding.lower() != "same":
                raise ValueError(f"Invalid padding string {padding!r}, only 'same' is supported")
            if stride != 1:
                raise ValueError("padding='same' is not supported for strided convolutions")
            d = _tuple(dilation, 2)
            pads = [d[i] * (k - 1) for i, k in enumerate(self.kernel_size)]
            if any(p % 2 for p in pads) or pads[0] != pads[1]:
                raise ValueError(f"padding='same' with kernel {self.kernel_size} needs uneven padding, which kiln's conv2d "
                                 "does not take yet")
            padding = pads[0] // 2
        self.stride, self.dilation, self.groups, self.padding = stride, dilation, groups, padding
        scale = 1 / math.sqrt(in_channels * math.prod(self.kernel_size))
        self.weight = _uniform(out_channels, in_channels // groups, *self.kernel_size, low=-scale, high=scale)
        self.bias: Tensor | None = _uniform(out_channels, low=-scale, high=scale) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding)


class Linear:
    """x @ weight.T + bias, weight (out_features, in_features); uniform on +-1/sqrt(in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        bound = 1 / math.sqrt(in_features)
        self.weight = _uniform(out_features, in_features, low=-bound, high=bound)
        self.bias: Tensor | None = _uniform(out_features, low=-bound, high=bound) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        y = x.matmul(self.weight.transpose(0, 1))
        return y if self.bias is None else y + self.bias


class GroupNorm:
    """Group normalization: channels in num_groups groups, each normalized over its channels and
    positions; affine per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight: Tensor | None = Tensor.ones(num_channels) if affine else None
        self.bias: Tensor | None = Tensor.zeros(num_channels) if affine else None

    def __call__(self, x: Tensor) -> Tensor:
        x = x.reshape(x.shape[0], self.num_groups, -1).layernorm(eps=self.eps).reshape(x.shape)
        if self.weight is None or self.bias is None:
            return x
        shape = (1, -1, *([1] * (x.ndim - 2)))
        return x * self.weight.reshape(shape) + self.bias.reshape(shape)


class InstanceNorm:
    """Instance normalization: each channel of each sample over its positions; affine per channel."""

    def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
        self.num_features, self.eps = num_features, eps
        self.weight: Tensor | None = Tensor.ones(num_features) if affine else None
        self.bias: Tensor | None = Tensor.zeros(num_features) if affine else None

    def __call__(self, x: Tensor) -> Tensor:
        x = x.reshape(x.shape[0], self.num_features, -1).layernorm(eps=self.eps).reshape(x.shape)
        if self.weight is None or self.bias is None:
            return x
        shape = (1, -1, *([1] * (x.ndim - 2)))
        return x * self.weight.reshape(shape) + self.bias.reshape(shape)


class LayerNorm:
    """Layer normalization over the last len(normalized_shape) dimensions, then weight and bias."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True):
        self.normalized_shape: tuple[int, ...] = _tuple(normalized_shape, 1)
        self.axis, self.eps = tuple(-1 - i for i in range(len(self.normalized_shape))), eps
        self.weight: Tensor | None = Tensor.ones(*self.normalized_shape) if elementwise_affine else None
        self.bias: Tensor | None = Tensor.zeros(*self.normalized_shape) if elementwise_affine else None

    def __call__(self, x: Tensor) -> Tensor:
        if tuple(x.shape[-len(self.normalized_shape):]) != self.normalized_shape:
            raise ValueError(f"LayerNorm: the last dimensions of {x.shape} must be {self.normalized_shape}")
        x = x.layernorm(eps=self.eps, axis=self.axis)
        if self.weight is None or self.bias is None:
            return x
        return x * self.weight + self.bias


class LayerNorm2d(LayerNorm):
    """LayerNorm over the channels of an NCHW input."""

    def __call__(self, x: Tensor) -> Tensor:
        return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class RMSNorm:
    """x * rsqrt(mean(x^2, last axis) + eps) (in float32), times weight."""

    def __init__(self, dim: int, eps: float = 1e-6, elementwise_affine: bool = True):
        self.eps = eps
        self.weight = Tensor.ones(dim) if elementwise_affine else None

    def _norm(self, x: Tensor) -> Tensor:
        return x * ((x * x).mean(-1, keepdim=True) + self.eps).rsqrt()

    def __call__(self, x: Tensor) -> Tensor:
        x = self._norm(x.float()).cast(x.dtype)
        return x if self.weight is None else x * self.weight


class Embedding:
    """A lookup table: weight[idx] for an integer tensor idx (weight glorot_uniform, vocab x embed)."""

    def __init__(self, vocab_size: int, embed_size: int):
        self.vocab_sz, self.embed_sz = vocab_size, embed_size
        bound = math.sqrt(6 / (vocab_size + embed_size))  # glorot_uniform, as tinygrad
        self.weight = _uniform(vocab_size, embed_size, low=-bound, high=bound)

    def __call__(self, idx: Tensor) -> Tensor:
        if not idx.dtype.is_int():
            raise TypeError(f"Expected integer dtype for index in embedding, got {idx.dtype}")
        # one-hot rows summed: a gather whose gradient (a sum per row) comes from the ops
        vocab = Tensor.arange(self.vocab_sz, device=self.weight.device).reshape(self.vocab_sz, 1)
        hot = vocab == idx.reshape(*idx.shape, 1, 1)  # (*idx, vocab, 1)
        return hot.where(self.weight, 0.0).sum(-2)
