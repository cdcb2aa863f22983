# Convolutions and pools with tinygrad's arguments (bind_conv.cpp): conv2d over 1-3 spatial axes,
# conv_transpose2d, max/avg pools (ceil_mode, count_include_pad, dilation, return_indices) and
# max_unpool2d against numpy references written here; tinygrad's padding forms; the errors.
import itertools

import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes


def rand(*shape):
    return np.random.uniform(-2, 2, shape).astype(np.float32)


def pad_crop(x, pads, value=0.0):
    """pads: (before, after) per trailing axis; negative amounts crop."""
    lead = x.ndim - len(pads)
    grow = [(0, 0)] * lead + [(max(b, 0), max(a, 0)) for b, a in pads]
    x = np.pad(x, grow, constant_values=value)
    cut = [slice(None)] * lead + [slice(max(-b, 0), x.shape[lead + i] - max(-a, 0)) for i, (b, a) in enumerate(pads)]
    return x[tuple(cut)]


def np_conv(x, w, stride, dilation, pads, groups=1):
    k = w.ndim - 2
    xp = pad_crop(x.astype(np.float64), pads)
    n, cin = x.shape[:2]
    cout, cg = w.shape[:2]
    og = cout // groups
    out = [(xp.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(k)]
    y = np.zeros((n, groups, og, *out))
    for tap in itertools.product(*[range(s) for s in w.shape[2:]]):
        sl = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i]) for i in range(k))
        xs = xp[(slice(None), slice(None)) + sl].reshape(n, groups, cg, -1)
        wt = w[(slice(None), slice(None)) + tap].reshape(groups, og, cg)
        y += np.einsum("ngcp,goc->ngop", xs, wt).reshape(y.shape)
    return y.reshape(n, cout, *out)


def np_conv_transpose(x, w, stride, dilation, pads, output_padding, groups=1):
    k = w.ndim - 2
    n, cin = x.shape[:2]
    cg, og = cin // groups, w.shape[1]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (w.shape[2 + i] - 1) + 1 + output_padding[i] for i in range(k)]
    y = np.zeros((n, groups, og, *full))
    for tap in itertools.product(*[range(s) for s in w.shape[2:]]):
        sl = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (x.shape[2 + i] - 1) * stride[i] + 1, stride[i]) for i in range(k))
        wt = w[(slice(None), slice(None)) + tap].reshape(groups, cg, og)
        y[(slice(None), slice(None), slice(None)) + sl] += np.einsum("ngc...,gco->ngo...", x.reshape(n, groups, cg, *x.shape[2:]), wt)
    y = y.reshape(n, groups * og, *full)
    return y[(slice(None), slice(None)) + tuple(slice(b, full[i] - a) for i, (b, a) in enumerate(pads))]


def np_pool(x, kernel, stride, dilation, pads, ceil_mode, mode, count_include_pad=True):
    k = len(kernel)
    spatial = x.shape[-k:]
    out, extra = [], []
    for i in range(k):
        span, padded = dilation[i] * (kernel[i] - 1) + 1, spatial[i] + pads[i][0] + pads[i][1]
        o = (padded - span + (stride[i] - 1 if ceil_mode else 0)) // stride[i] + 1
        if ceil_mode and (o - 1) * stride[i] >= spatial[i] + pads[i][0]:
            o -= 1
        out.append(o)
        extra.append(max(0, (o - 1) * stride[i] + span - padded))
    full = [(b, a + e) for (b, a), e in zip(pads, extra)]
    xp = pad_crop(x.astype(np.float64), full, -np.inf if mode == "max" else 0.0)
    ones = pad_crop(pad_crop(np.ones(spatial), pads, 1.0 if count_include_pad else 0.0), [(0, e) for e in extra])
    taps = []
    for tap in itertools.product(*[range(s) for s in kernel]):
        sl = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i]) for i in range(k))
        taps.append((xp[(Ellipsis,) + sl], ones[sl]))
    if mode == "max":
        return np.max([t for t, _ in taps], axis=0)
    return np.sum([t for t, _ in taps], axis=0) / np.sum([c for _, c in taps], axis=0)


@pytest.mark.parametrize(
    "xs,ws,kw,stride,dilation,pads,groups",
    [
        ((2, 3, 11), (6, 3, 3), {}, (1,), (1,), [(0, 0)], 1),
        ((2, 3, 11), (6, 1, 5), {"groups": 3}, (1,), (1,), [(0, 0)], 3),
        ((2, 1, 9), (2, 1, 3), {"stride": 2, "padding": (2, 1)}, (2,), (1,), [(2, 1)], 1),  # flat: (left, right)
        ((1, 2, 7, 9), (4, 2, 3, 2), {"stride": (2, 1), "dilation": (1, 2), "padding": (1, 2)}, (2, 1), (1, 2), [(1, 1), (2, 2)], 1),
        ((1, 2, 7, 9), (2, 2, 2, 2), {"padding": (0, 1, 2, 0)}, (1, 1), (1, 1), [(2, 0), (0, 1)], 1),  # flat: W first
        ((1, 1, 8, 8), (1, 1, 3, 3), {"padding": -1}, (1, 1), (1, 1), [(-1, -1), (-1, -1)], 1),
        ((1, 1, 8, 8), (1, 1, 3, 3), {"padding": (-1, 0, -1, 0)}, (1, 1), (1, 1), [(-1, 0), (-1, 0)], 1),
        ((1, 4, 5, 5), (4, 1, 3, 3), {"groups": 4, "padding": 1}, (1, 1), (1, 1), [(1, 1), (1, 1)], 4),  # depthwise
        ((1, 2, 5, 4, 4), (3, 2, 3, 2, 2), {"padding": [1, 0, 1, 0, 1, 1]}, (1, 1, 1), (1, 1, 1), [(1, 1), (1, 0), (1, 0)], 1),
    ],
)
def test_conv2d_matches_numpy(xs, ws, kw, stride, dilation, pads, groups):
    x, w = rand(*xs), rand(*ws)
    got = Tensor(x).conv2d(Tensor(w), **kw).numpy()
    np.testing.assert_allclose(got, np_conv(x, w, stride, dilation, pads, groups), rtol=1e-4, atol=1e-4)


def test_conv2d_bias_and_positional_arguments():
    x, w, b = rand(2, 4, 6, 6), rand(4, 2, 3, 3), rand(4)
    got = Tensor(x).conv2d(Tensor(w), Tensor(b), 2, 1, 1, 1).numpy()  # bias, groups, stride, dilation, padding
    want = np_conv(x, w, (1, 1), (1, 1), [(1, 1), (1, 1)], 2) + b.reshape(1, 4, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_dtype_is_the_sums_and_the_results():
    x, w = rand(1, 3, 5, 5), rand(2, 3, 3, 3)
    got = Tensor(x).half().conv2d(Tensor(w).half(), padding=1, dtype=dtypes.float32)
    assert got.dtype == dtypes.float32
    np.testing.assert_allclose(got.numpy(), np_conv(x, w, (1, 1), (1, 1), [(1, 1)] * 2), rtol=1e-2, atol=2e-2)
    assert Tensor(x).half().conv2d(Tensor(w).half(), padding=1, dtype="float16").dtype == dtypes.float16


@pytest.mark.parametrize(
    "xs,ws,kw",
    [
        ((2, 4, 5, 5), (4, 2, 3, 3), {}),
        ((2, 4, 5, 5), (4, 2, 3, 3), {"groups": 2, "stride": (2, 1), "padding": (1, 2)}),
        ((1, 2, 4, 5), (2, 3, 3, 3), {"stride": (2, 3), "output_padding": (1, 2), "dilation": (2, 1)}),
        ((1, 2, 6), (2, 2, 3), {"stride": 3, "padding": 1, "output_padding": 2}),
        ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), {"stride": 2}),
    ],
)
def test_conv_transpose2d_matches_numpy(xs, ws, kw):
    x, w = rand(*xs), rand(*ws)
    k = len(xs) - 2
    tup = lambda v, d: tuple(v) if isinstance(v, tuple) else (v,) * k if v is not None else (d,) * k  # noqa: E731
    p = tup(kw.get("padding"), 0)
    want = np_conv_transpose(x, w, tup(kw.get("stride"), 1), tup(kw.get("dilation"), 1), [(q, q) for q in p],
                             tup(kw.get("output_padding"), 0), kw.get("groups", 1))
    np.testing.assert_allclose(Tensor(x).conv_transpose2d(Tensor(w), **kw).numpy(), want, rtol=1e-4, atol=1e-4)


def test_conv_transpose2d_gradient_is_the_convolution():
    # <conv_transpose(x, w), y> = <x, conv(y, w)>: the input's gradient is the strided convolution
    x, w, y = rand(1, 4, 4, 5), rand(4, 2, 3, 3), rand(1, 2, 7, 9)
    t = Tensor(x, requires_grad=True)
    (t.conv_transpose2d(Tensor(w), stride=2, padding=1) * Tensor(y)).sum().backward()
    want = np_conv(y, w, (2, 2), (1, 1), [(1, 1), (1, 1)])
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-4, atol=1e-4)


POOLS = [
    ({"kernel_size": (2, 2)}, (2, 2), None, (1, 1), [(0, 0)] * 2, False),
    ({"kernel_size": 3, "stride": 2, "padding": 1}, (3, 3), (2, 2), (1, 1), [(1, 1)] * 2, False),
    ({"kernel_size": (3, 2), "stride": (2, 3), "dilation": (2, 1), "padding": (1, 0)}, (3, 2), (2, 3), (2, 1), [(1, 1), (0, 0)], False),
    ({"kernel_size": (5, 5), "padding": (0, 1, 2, 1)}, (5, 5), None, (1, 1), [(2, 1), (0, 1)], False),
    ({"kernel_size": (3, 3), "stride": 3, "padding": 1, "ceil_mode": True}, (3, 3), (3, 3), (1, 1), [(1, 1)] * 2, True),
    ({"kernel_size": (3, 2), "stride": 3, "padding": 1, "ceil_mode": True}, (3, 2), (3, 3), (1, 1), [(1, 1)] * 2, True),
    ({"kernel_size": (3, 3, 2), "stride": 2, "padding": 1}, (3, 3, 2), (2, 2, 2), (1, 1, 1), [(1, 1)] * 3, False),
]


@pytest.mark.parametrize("kw,kernel,stride,dilation,pads,ceil", POOLS)
@pytest.mark.parametrize("shape", [(2, 3, 7, 11), (1, 1, 5, 5), (1, 2, 6, 7, 5)])
def test_pools_match_numpy(shape, kw, kernel, stride, dilation, pads, ceil):
    x = rand(*shape)
    stride = stride or kernel
    np.testing.assert_allclose(Tensor(x).max_pool2d(**kw).numpy(), np_pool(x, kernel, stride, dilation, pads, ceil, "max"), rtol=1e-6)
    for include in (True, False):
        got = Tensor(x).avg_pool2d(**kw, count_include_pad=include).numpy()
        np.testing.assert_allclose(got, np_pool(x, kernel, stride, dilation, pads, ceil, "avg", include), rtol=1e-5, atol=1e-6)


def test_max_pool2d_int_dtype_pads_with_its_lowest_value():
    x = np.random.randint(-100, 100, (1, 2, 5, 6)).astype(np.int32)
    got = Tensor(x).max_pool2d(kernel_size=(2, 2), padding=1)
    assert got.dtype == dtypes.int32
    want = np_pool(x, (2, 2), (2, 2), (1, 1), [(1, 1)] * 2, False, "max")
    np.testing.assert_array_equal(got.numpy(), want.astype(np.int32))


def test_max_pool2d_return_indices_are_torchs():
    x = rand(2, 3, 7, 7)
    values, indices = Tensor(x).max_pool2d(kernel_size=(3, 2), stride=2, padding=1, return_indices=True)
    assert indices.dtype == dtypes.int32 and indices.shape == values.shape
    # torch: each window's first maximum, as a flat index into the unpadded plane
    flat = x.reshape(2, 3, 49)
    np.testing.assert_array_equal(np.take_along_axis(flat, indices.numpy().reshape(2, 3, -1), 2).reshape(values.shape), values.numpy())
    ones = Tensor.ones(1, 1, 4, 4)
    _, idx = ones.max_pool2d(kernel_size=(3, 3), stride=1, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), [[[[0, 1], [4, 5]]]])


def test_max_pool2d_gradient_goes_to_each_windows_first_maximum():
    t = Tensor(np.ones((1, 1, 3, 4), np.float32), requires_grad=True)
    t.max_pool2d(kernel_size=(2, 2), stride=1).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [[[[1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0]]]])


def test_max_unpool2d_inverts_the_pool():
    x = rand(2, 3, 8, 7)
    values, indices = Tensor(x).max_pool2d(kernel_size=(3, 3), stride=(3, 2), padding=1, return_indices=True)
    back = Tensor.max_unpool2d(values, indices, kernel_size=(3, 3), stride=(3, 2), padding=1, output_size=(99, 99, 8, 7)).numpy()
    want = np.zeros((2, 3, 56), np.float32)
    np.put_along_axis(want, indices.numpy().reshape(2, 3, -1), values.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_array_equal(back, want.reshape(2, 3, 8, 7))
    # the default size: (I - 1) * stride - padding + kernel
    v, i = Tensor(x).max_pool2d(return_indices=True)
    assert v.max_unpool2d(i).shape == (2, 3, 8, 6)


def test_padding_forms_and_argument_errors():
    x, w = Tensor(rand(1, 1, 6, 6)), Tensor(rand(1, 1, 3, 3))
    for fn in (lambda p: x.conv2d(w, padding=p), lambda p: x.max_pool2d(padding=p), lambda p: x.avg_pool2d(padding=p),
               lambda p: x.conv_transpose2d(w, padding=p)):
        with pytest.raises(ValueError, match="padding must be an int or a sequence of length 2 or 4"):
            fn((1, 1, 1))
        with pytest.raises(TypeError, match="padding"):
            fn(1.5)
    with pytest.raises(TypeError, match="stride"):
        x.conv2d(w, stride="2")
    with pytest.raises(TypeError, match="kernel_size"):
        x.max_pool2d(kernel_size=None)


def test_kiln_errors():
    with pytest.raises(kiln.Error, match="larger than the padded input"):
        Tensor.ones(2, 16, 2, 2).conv2d(Tensor.ones(32, 16, 3, 3))
    with pytest.raises(RuntimeError, match="spans 7"):
        Tensor.ones(1, 1, 6, 7).conv2d(Tensor.ones(6, 1, 3, 3), dilation=3)
    with pytest.raises(kiln.Error, match="groups"):
        Tensor.ones(1, 4, 5, 5).conv2d(Tensor.ones(4, 4, 3, 3), groups=2)
    with pytest.raises(kiln.Error, match="output_padding"):
        Tensor.ones(1, 4, 5, 5).conv_transpose2d(Tensor.ones(4, 4, 3, 3), stride=2, output_padding=2)
    with pytest.raises(kiln.Error, match="larger than its padded size"):
        Tensor.ones(1, 1, 2, 2).max_pool2d(kernel_size=(3, 3))
