import operator

import numpy as np
import pytest

from kiln import Tensor, dtypes

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


def close(t, want, rtol=1e-5, atol=1e-6):
    got = t.numpy()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_tensor_tensor(op):
    a, b = np.random.uniform(0.5, 2, (3, 4)).astype(np.float32), np.random.uniform(0.5, 2, (4,)).astype(np.float32)
    close(op(Tensor(a), Tensor(b)), op(a, b), rtol=1e-5)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scalar", [2, 0.5, True], ids=["int", "float", "bool"])
def test_scalars_on_either_side_of_float(op, scalar):
    a = np.random.uniform(0.5, 2, (5,)).astype(np.float32)
    assert op(Tensor(a), scalar).dtype == dtypes.float32 and op(scalar, Tensor(a)).dtype == dtypes.float32
    close(op(Tensor(a), scalar), op(a, np.float32(scalar)), rtol=1e-5)
    close(op(scalar, Tensor(a)), op(np.float32(scalar), a), rtol=1e-5)


def test_scalar_dtypes_follow_tinygrad():
    i = Tensor([1, 2, 3])
    assert (i + 1).dtype == dtypes.int32 and (i + 1).tolist() == [2, 3, 4]
    assert (2 * i).dtype == dtypes.int32 and (10 - i).tolist() == [9, 8, 7]
    assert (i + 1.5).dtype == dtypes.float32 and (i + 1.5).tolist() == [2.5, 3.5, 4.5]
    assert (i / 2).dtype == dtypes.float32 and (i / 2).tolist() == [0.5, 1.0, 1.5]
    assert (Tensor([1, 2], dtype=dtypes.int8) + 1).dtype == dtypes.int8
    assert (Tensor([1.0], dtype=dtypes.float16) * 2.0).dtype == dtypes.float16
    assert (Tensor([True, False]) + 1).dtype == dtypes.int32
    assert (Tensor([1, 2], dtype=dtypes.int64) + Tensor([1.0, 2.0])).dtype == dtypes.float32


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne],
                         ids=lambda f: f.__name__)
def test_comparisons(op):
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([4, 2, 1, 4], np.float32)
    r = op(Tensor(a), Tensor(b))
    assert r.dtype == dtypes.bool
    np.testing.assert_array_equal(r.numpy(), op(a, b))
    np.testing.assert_array_equal(op(Tensor(a), 2).numpy(), op(a, 2))
    np.testing.assert_array_equal(op(2, Tensor(a)).numpy(), op(2, a))


def test_bitwise():
    a, b = np.array([12, 10, 7], np.int32), np.array([10, 6, 1], np.int32)
    for op in (operator.and_, operator.or_, operator.xor):
        np.testing.assert_array_equal(op(Tensor(a), Tensor(b)).numpy(), op(a, b))
        np.testing.assert_array_equal(op(Tensor(a), 3).numpy(), op(a, 3))
        np.testing.assert_array_equal(op(3, Tensor(a)).numpy(), op(3, a))
    p, q = np.array([True, True, False]), np.array([True, False, False])
    np.testing.assert_array_equal((Tensor(p) & Tensor(q)).numpy(), p & q)
    np.testing.assert_array_equal((Tensor(p) | q.tolist()[0]).numpy(), p | True)
    np.testing.assert_array_equal((~Tensor(p)).numpy(), ~p)
    np.testing.assert_array_equal((~Tensor(a)).numpy(), ~a)
    assert Tensor(a).bitwise_xor(1, reverse=True).tolist() == (1 ^ a).tolist()


def test_neg_and_methods():
    a = np.array([1.0, -2.0, 3.0], np.float32)
    close(-Tensor(a), -a)
    close(Tensor(a).neg(), -a)
    close(Tensor(a).sub(1, reverse=True), 1 - a)
    close(Tensor(a).maximum(0.5), np.maximum(a, 0.5))
    close(Tensor(a).minimum(Tensor([0.0, 0.0, 0.0])), np.minimum(a, 0))
    close((Tensor(a) > 0).where(Tensor(a), 0.0), np.where(a > 0, a, 0))
    close((Tensor(a) > 0).where(1.0, -1.0), np.where(a > 0, 1.0, -1.0))
    assert Tensor([1.5, 2.7]).cast(dtypes.int32).tolist() == [1, 2]
    assert Tensor([1, 0]).bool().tolist() == [True, False] and Tensor([1]).float().dtype == dtypes.float32
    assert Tensor([1.0]).half().dtype == dtypes.float16 and Tensor([1.9]).int().tolist() == [1]


UNARY = {
    "exp": np.exp, "log": np.log, "exp2": np.exp2, "log2": np.log2, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "abs": np.abs, "sign": np.sign, "reciprocal": lambda x: 1 / x,
    "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh,
    "silu": lambda x: x / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    lo = 0.1 if name in ("log", "log2", "sqrt", "rsqrt", "reciprocal") else -2.0
    a = np.random.uniform(lo, 2, (4, 5)).astype(np.float32)
    close(getattr(Tensor(a), name)(), UNARY[name](a), rtol=1e-4, atol=1e-5)


def test_reductions():
    a = np.random.uniform(-2, 2, (3, 4, 5)).astype(np.float32)
    t = Tensor(a)
    for name in ("sum", "max", "min", "mean", "prod"):
        f = getattr(np, name)
        close(getattr(t, name)(), f(a), rtol=1e-4, atol=1e-5)
        close(getattr(t, name)(axis=1), f(a, axis=1), rtol=1e-4, atol=1e-5)
        close(getattr(t, name)(axis=(0, 2), keepdim=True), f(a, axis=(0, 2), keepdims=True), rtol=1e-4, atol=1e-5)
        close(getattr(t, name)(-1), f(a, axis=-1), rtol=1e-4, atol=1e-5)
    assert t.sum(axis=()).shape == (3, 4, 5)
    close(t.var(), a.var(ddof=1), rtol=1e-4)
    close(t.std(axis=1, correction=0), a.std(axis=1), rtol=1e-4)
    assert t.argmax().item() == a.argmax()
    np.testing.assert_array_equal(t.argmax(axis=2).numpy(), a.argmax(axis=2))
    assert t.argmax(axis=1).dtype == dtypes.int32
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    close(t.softmax(), e / e.sum(axis=-1, keepdims=True), rtol=1e-4)
    close(t.log_softmax(axis=0), a - a.max(0) - np.log(np.exp(a - a.max(0)).sum(0)), rtol=1e-4, atol=1e-5)
    assert Tensor([1, 2, 3]).sum().dtype == dtypes.int32
    assert Tensor([100, 100], dtype=dtypes.int8).sum(dtype=dtypes.int32).item() == 200
    assert Tensor([1.5, 2.5]).prod(dtype=dtypes.float64).dtype == dtypes.float64
    assert t.softmax(dtype=dtypes.float64).dtype == dtypes.float64


def test_matmul():
    a = np.random.uniform(-1, 1, (4, 3)).astype(np.float32)
    b = np.random.uniform(-1, 1, (3, 5)).astype(np.float32)
    close(Tensor(a) @ Tensor(b), a @ b, rtol=1e-5)
    close(Tensor(a).matmul(Tensor(b)), a @ b, rtol=1e-5)
    close(Tensor(a).dot(Tensor(b)), a @ b, rtol=1e-5)
    close(Tensor(b).matmul(Tensor(a), reverse=True), a @ b, rtol=1e-5)
    v = np.random.uniform(-1, 1, (3,)).astype(np.float32)
    close(Tensor(a) @ Tensor(v), a @ v, rtol=1e-5)
    x = np.random.uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    close(Tensor(x) @ Tensor(b), x @ b, rtol=1e-5)


def test_movement():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = Tensor(a)
    np.testing.assert_array_equal(t.reshape(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(t.reshape((4, -1)).numpy(), a.reshape(4, -1))
    np.testing.assert_array_equal(t.reshape(None, 12).numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.permute((1, 0, 2)).numpy(), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(t.transpose().numpy(), a.swapaxes(1, 0))
    np.testing.assert_array_equal(t.transpose(-1, -2).numpy(), a.swapaxes(-1, -2))
    np.testing.assert_array_equal(Tensor(a[0]).T.numpy(), a[0].T)
    np.testing.assert_array_equal(t.flatten().numpy(), a.flatten())
    np.testing.assert_array_equal(t.flatten(1).numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), a[:, None])
    np.testing.assert_array_equal(t.reshape(2, 1, 12).squeeze(1).numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(t.reshape(1, 2, 1, 12).squeeze().numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(Tensor([[1], [2]]).expand(2, 3).numpy(), [[1] * 3, [2] * 3])
    np.testing.assert_array_equal(Tensor([[1], [2]]).expand(-1, 2).numpy(), [[1, 1], [2, 2]])
    np.testing.assert_array_equal(t.flip(0, 2).numpy(), a[::-1, :, ::-1])
    np.testing.assert_array_equal(t.pad(((0, 0), (1, 0), None)).numpy(), np.pad(a, ((0, 0), (1, 0), (0, 0))))
    np.testing.assert_array_equal(t.pad((1, 2)).numpy(), np.pad(a, ((0, 0), (0, 0), (1, 2))))
    np.testing.assert_array_equal(t.pad((1, 1), value=-1.0).numpy(), np.pad(a, ((0, 0), (0, 0), (1, 1)), constant_values=-1))
    np.testing.assert_array_equal(t.shrink(((0, 1), None, (1, 3))).numpy(), a[0:1, :, 1:3])
    b = Tensor(a + 100)
    np.testing.assert_array_equal(t.cat(b, dim=1).numpy(), np.concatenate([a, a + 100], axis=1))
    np.testing.assert_array_equal(Tensor.cat(t, b, t).numpy(), np.concatenate([a, a + 100, a]))
    np.testing.assert_array_equal(t.stack(b, dim=-1).numpy(), np.stack([a, a + 100], axis=-1))
    idx = np.array([[0, 2], [1, 0]], np.int32)
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(Tensor(m).gather(1, Tensor(idx)).numpy(), np.take_along_axis(m, idx, 1))


def test_nn():
    x = np.random.uniform(-1, 1, (1, 2, 6, 6)).astype(np.float32)
    w = np.random.uniform(-1, 1, (3, 2, 3, 3)).astype(np.float32)
    out = Tensor(x).conv2d(Tensor(w), padding=1).numpy()
    assert out.shape == (1, 3, 6, 6)
    ref = sum(x[0, c, 1:4, 1:4].ravel() @ w[o, c].ravel() for c in range(2) for o in [0])
    np.testing.assert_allclose(out[0, 0, 2, 2], ref, rtol=1e-4)
    mp = Tensor(x).max_pool2d().numpy()
    np.testing.assert_allclose(mp, x.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5)))
    ap = Tensor(x).avg_pool2d(kernel_size=(2, 2)).numpy()
    np.testing.assert_allclose(ap, x.reshape(1, 2, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)


def test_linear_takes_tinygrads_in_out_weight():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    b = np.ones(4, dtype=np.float32)
    np.testing.assert_allclose(Tensor(x).linear(Tensor(w), Tensor(b)).numpy(), x @ w + b, rtol=1e-6)
    np.testing.assert_allclose(Tensor(x).linear(Tensor(w)).numpy(), x @ w, rtol=1e-6)
    v = np.array([1, 2, 3], dtype=np.float32)
    np.testing.assert_allclose(Tensor(x).linear(Tensor(v)).numpy(), x * v)
