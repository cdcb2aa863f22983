"""Tensor math in tinygrad's Python form: unary math and activations, Python's // % << >> ** with
scalars on either side (tinygrad's dtypes), clip, isclose, the math reductions, the losses and
attention; numpy (and math) as the oracle."""
import math

import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes

rng = np.random.default_rng(0)
erf = np.vectorize(math.erf)


def close(t, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(t.numpy(), want, rtol=rtol, atol=atol)


def softplus(x, beta=1.0):
    return np.logaddexp(beta * x, 0) / beta


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "asin": (np.arcsin, -0.95, 0.95), "acos": (np.arccos, -0.95, 0.95), "atan": (np.arctan, -5, 5),
    "sinh": (np.sinh, -3, 3), "cosh": (np.cosh, -3, 3), "asinh": (np.arcsinh, -300, 300),
    "acosh": (np.arccosh, 1.01, 300), "atanh": (np.arctanh, -0.9, 0.9), "log10": (np.log10, 0.01, 100),
    "erf": (erf, -4, 4), "softsign": (lambda x: x / (1 + abs(x)), -3, 3), "logsigmoid": (lambda x: -softplus(-x), -30, 30),
    "quick_gelu": (lambda x: x * sigmoid(1.702 * x), -3, 3), "relu6": (lambda x: np.clip(x, 0, 6), -3, 9),
    "hardswish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, -5, 5), "mish": (lambda x: x * np.tanh(softplus(x)), -3, 3),
    "swish": (lambda x: x * sigmoid(x), -3, 3), "selu": (lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)), -3, 3),
    "trunc": (np.trunc, -5, 5), "floor": (np.floor, -5, 5), "ceil": (np.ceil, -5, 5), "round": (np.round, -5, 5),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_numpy(name):
    f, lo, hi = UNARY[name]
    x = rng.uniform(lo, hi, (4, 5)).astype(np.float32)
    t = Tensor(x)
    assert getattr(t, name)().dtype == dtypes.float32
    close(getattr(t, name)(), f(x.astype(np.float64)), rtol=1e-4, atol=2e-6)
    close(getattr(Tensor(x[0, 0]), name)(), f(np.float64(x[0, 0])), rtol=1e-4, atol=2e-6)


def test_activations_with_arguments():
    x = rng.uniform(-4, 4, (3, 7)).astype(np.float32)
    t = Tensor(x)
    close(t.softplus(beta=3), softplus(x.astype(np.float64), 3), rtol=1e-5)
    close(t.hardsigmoid(), np.clip(x / 6 + 0.5, 0, 1))
    close(t.hardsigmoid(alpha=0.2, beta=0.4), np.clip(0.2 * x + 0.4, 0, 1))
    close(t.elu(alpha=0.5), np.where(x > 0, x, 0.5 * np.expm1(x)))
    close(t.celu(alpha=2.0), np.where(x > 0, x, 2 * np.expm1(x / 2)))
    close(t.hardtanh(-2, 2.5), np.clip(x, -2, 2.5))
    close(t.hardtanh(min_val=-0.5), np.clip(x, -0.5, 1))
    close(t.leaky_relu(), np.where(x > 0, x, 0.01 * x))
    close(t.leaky_relu(neg_slope=0.3), np.where(x > 0, x, 0.3 * x))
    close(t.gelu(approximate="none"), 0.5 * x * (1 + erf(x / math.sqrt(2))), rtol=1e-4, atol=1e-6)
    close(t.gelu(), 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), rtol=1e-4, atol=1e-6)
    e = np.exp(-x - (-x).max(axis=0, keepdims=True))
    close(t.softmin(axis=0), e / e.sum(axis=0, keepdims=True))
    with pytest.raises(kiln.Error, match="approximate must be 'tanh' or 'none'"):
        t.gelu(approximate="fast")


def test_extreme_inputs_stay_finite():
    big = Tensor([-400.0, 400.0])
    np.testing.assert_allclose(big.softplus().numpy(), [0, 400])
    np.testing.assert_allclose(big.logsigmoid().numpy(), [-400, 0])
    np.testing.assert_allclose(big.erf().numpy(), [-1, 1])
    np.testing.assert_allclose(big.quick_gelu().numpy(), [0, 400])
    x = Tensor([-400.0, 400.0], requires_grad=True)
    x.softplus().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 1])


def test_round_is_half_to_even_and_classification():
    v = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1.499, -2.501]
    np.testing.assert_array_equal(Tensor(v).round().numpy(), np.round(np.float32(v)))
    v = [-math.inf, 0.0, math.inf, math.nan, 1.1]
    np.testing.assert_array_equal(Tensor(v).isinf().numpy(), np.isinf(v))
    np.testing.assert_array_equal(Tensor(v).isinf(detect_positive=False).numpy(), [True, False, False, False, False])
    np.testing.assert_array_equal(Tensor(v).isinf(detect_negative=False).numpy(), [False, False, True, False, False])
    np.testing.assert_array_equal(Tensor(v).isnan().numpy(), np.isnan(v))
    np.testing.assert_array_equal(Tensor(v).isfinite().numpy(), np.isfinite(v))


A = [-4, 7, 5, 4, -7, 8, -9, 0]
B = [2, -3, 8, -2, 3, 5, -5, 3]


@pytest.mark.parametrize("fa,fb", [(False, False), (False, True), (True, False), (True, True)])
def test_floordiv_and_mod_follow_python(fa, fb):
    a = np.array(A, np.float32 if fa else np.int32)
    b = np.array(B, np.float32 if fb else np.int32)
    for got, want in [(Tensor(a) // Tensor(b), a // b), (Tensor(a) % Tensor(b), a % b), (Tensor(a).mod(Tensor(b)), a % b),
                      (Tensor(a) // 3, a // 3), (Tensor(a) % 3, a % 3), (100 // Tensor(b), 100 // b), (100 % Tensor(b), 100 % b),
                      (Tensor(a).div(Tensor(b), rounding_mode="floor"), a // b)]:
        assert got.dtype == (dtypes.float32 if np.issubdtype(want.dtype, np.floating) else dtypes.int32)
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_allclose((Tensor(a) % 3.5).numpy(), a % np.float32(3.5))
    np.testing.assert_allclose((100.5 % Tensor(b)).numpy(), np.float32(100.5) % b)
    np.testing.assert_array_equal(Tensor(a).fmod(Tensor(b)).numpy(), np.fmod(a, b))
    np.testing.assert_array_equal(Tensor(a).div(Tensor(b), rounding_mode="trunc").numpy(), np.trunc(a / b).astype(a.dtype if not fb else np.float32))
    assert Tensor(a).div(Tensor(b)).dtype == dtypes.float32


def test_div_rounding_mode_errors_and_uint64():
    with pytest.raises(kiln.Error, match="rounding_mode must be None, 'trunc' or 'floor', got 'typo'"):
        Tensor([5]).div(Tensor([2]), rounding_mode="typo")
    with pytest.raises(TypeError, match="rounding_mode"):
        Tensor([5]).div(2, rounding_mode=1)
    assert Tensor(2**64 - 1, dtype=dtypes.uint64).div(1, rounding_mode="trunc").item() == 2**64 - 1
    assert Tensor(-5).div(2, rounding_mode="trunc").item() == -2 and Tensor(-1).contiguous().div(4, rounding_mode="trunc").item() == 0


def test_shifts():
    d = np.array([[-1, -3, 1, 7], [0, -2147483648, 2147483647, -1]], np.int32)
    for s in (0, 2, 8, 31):
        np.testing.assert_array_equal((Tensor(d) << s).numpy(), d << s)
        np.testing.assert_array_equal((Tensor(d) >> s).numpy(), d >> s)
    sh = np.array([0, 2, 8, 31], np.int32)
    np.testing.assert_array_equal((Tensor(d) << Tensor(sh)).numpy(), d << sh)
    np.testing.assert_array_equal(Tensor(d).rshift(Tensor(sh)).numpy(), d >> sh)
    np.testing.assert_array_equal((1 << Tensor(sh[:3])).numpy(), 1 << sh[:3])
    u = np.array([1, 2, 1 << 30], np.uint32)
    assert (Tensor(u) << 1).dtype == dtypes.uint32
    np.testing.assert_array_equal(Tensor(u).lshift(2).numpy(), u << 2)
    with pytest.raises(kiln.Error, match="lshift: needs integer tensors"):
        Tensor([1.0]) << 2
    with pytest.raises(kiln.Error):
        Tensor(u) << 1.0


def test_int_pow_stays_int():
    x = np.array([-2, 0, 2], np.int32)
    for e in (0, 1, 2, 29):
        got = Tensor(x) ** e
        assert got.dtype == dtypes.int32
        np.testing.assert_array_equal(got.numpy(), x**e)
    assert (Tensor([11, 12, 13]) ** 7).tolist() == [11**7, 12**7, 13**7]
    assert (Tensor(11) ** Tensor(7)).item() == 11**7
    with pytest.raises(kiln.Error, match="negative integer powers"):
        Tensor(x) ** -2
    assert (Tensor([1, 2, 3]) ** 0.5).dtype == dtypes.float32
    np.testing.assert_allclose((0.7 ** Tensor([-2, -1, 0, 1, 2, 3])).numpy(), 0.7 ** np.arange(-2, 4, dtype=np.float32), rtol=1e-6)
    np.testing.assert_allclose((Tensor([-math.inf]) ** 0.3).numpy(), [math.inf])
    np.testing.assert_allclose(((-2.0) ** Tensor([-2.0, -1, 0, 1, 2, 3])).numpy(), (-2.0) ** np.arange(-2, 4))


def test_bitwise_not():
    d = np.array([[1, -8, 1], [32, 1, 6]], np.int32)
    np.testing.assert_array_equal(Tensor(d).bitwise_not().numpy(), ~d)
    np.testing.assert_array_equal((~Tensor(d)).numpy(), ~d)
    np.testing.assert_array_equal(Tensor(np.array([0, 7, 255], np.uint8)).bitwise_not().numpy(), [255, 248, 0])
    np.testing.assert_array_equal(Tensor([True, False]).bitwise_not().numpy(), [False, True])


def test_clip_lerp_copysign_logaddexp_isclose():
    x = rng.uniform(-3, 3, (5, 6)).astype(np.float32)
    t = Tensor(x)
    close(t.clip(-1.5, 1.2), np.clip(x, -1.5, 1.2))
    close(t.clamp(min_=0), np.maximum(x, 0))
    close(t.clip(None, 0), np.minimum(x, 0))
    close(t.clip(3, 0), np.zeros_like(x))
    close(t.clip(Tensor(x[0]), None), np.maximum(x, x[0]))
    with pytest.raises(kiln.Error, match="at least one of min and max"):
        t.clip(None, None)
    g = Tensor([-3.0, -2.5, 0.0, 1.5, 2.0], requires_grad=True)
    g.clip(-2.5, 1.5).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), [0, 0, 1, 0, 0])  # torch: no gradient at a reached bound
    y = rng.uniform(-3, 3, (5, 6)).astype(np.float32)
    close(t.lerp(Tensor(y), 0.25), x + (y - x) * 0.25)
    close(t.lerp(Tensor(y), Tensor(x)), x + (y - x) * x)
    close(t.copysign(Tensor(y)), np.copysign(x, y))
    close(Tensor([1.0, 2.0]).copysign(Tensor([-0.0, 0.0])), [-1.0, 2.0])
    close(t.copysign(-1), -np.abs(x))
    close(t.logaddexp(Tensor(y)), np.logaddexp(x, y))
    close(Tensor([1.0, 2000, 30000]).logaddexp(Tensor([-1.0, 2, 3])), np.logaddexp([1.0, 2000, 30000], [-1.0, 2, 3]))
    vals = [math.inf, -math.inf, math.nan, 0.0, 1e-7, 1.0]
    a, b = np.array(vals * 6, np.float32), np.repeat(np.array(vals, np.float32), 6)
    np.testing.assert_array_equal(Tensor(a).isclose(Tensor(b)).numpy(), np.isclose(a, b))
    np.testing.assert_array_equal(Tensor(a).isclose(Tensor(b), equal_nan=True).numpy(), np.isclose(a, b, equal_nan=True))
    np.testing.assert_array_equal(Tensor(a).isclose(1.0, rtol=0.01, atol=0.0).numpy(), np.isclose(a, 1.0, rtol=0.01, atol=0.0))
    assert Tensor(a).allclose(Tensor(b)).item() is False and Tensor(x).allclose(Tensor(x + 1e-7)).item() is True
    assert Tensor([-3, 4]).square().tolist() == [9, 16] and Tensor([-3, 4]).square().dtype == dtypes.int32


def test_reductions():
    x = rng.uniform(-1, 1, (3, 4, 5)) > 0.7
    for axis in (None, 0, (1, 2), -1):
        np.testing.assert_array_equal(Tensor(x).any(axis=axis).numpy(), x.any(axis=axis))
        np.testing.assert_array_equal(Tensor(x).all(axis=axis, keepdim=True).numpy(), x.all(axis=axis, keepdims=True))
    z = np.zeros((1, 0, 3, 0, 5), np.float32)
    np.testing.assert_array_equal(Tensor(z).any(axis=(1, 3)).numpy(), z.any(axis=(1, 3)))
    np.testing.assert_array_equal(Tensor(z).all(axis=(1, 3)).numpy(), z.all(axis=(1, 3)))
    assert Tensor.ones(2**16).bool().all().item() is True
    f = rng.uniform(-30, 30, (4, 6)).astype(np.float32)
    for axis, keep in ((0, False), (1, True), (None, False)):
        m = f.max(axis=axis, keepdims=True)
        want = np.log(np.exp(f - m).sum(axis=axis, keepdims=True)) + m
        close(Tensor(f).logsumexp(axis, keep), want if keep else want.squeeze(), rtol=1e-5)
    close(Tensor(2.5).logsumexp(0), 2.5)
    close(Tensor(f).normalize(), f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12), rtol=1e-5)
    close(Tensor(f).normalize(p=1, dim=0), f / np.abs(f).sum(axis=0, keepdims=True), rtol=1e-5)


def log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def test_cross_entropy_and_sparse():
    x = rng.uniform(-2, 2, (8, 5)).astype(np.float32)
    y = rng.integers(0, 5, 8).astype(np.int32)
    onehot = np.eye(5, dtype=np.float32)[y]
    for ls in (0.0, 0.3):
        target = onehot * (1 - ls) + ls / 5
        per = -(log_softmax(x.astype(np.float64), 1) * target).sum(1)
        close(Tensor(x).cross_entropy(Tensor(y), reduction="none", label_smoothing=ls), per, rtol=1e-5)
        close(Tensor(x).cross_entropy(Tensor(onehot), label_smoothing=ls), per.mean(), rtol=1e-5)
        close(Tensor(x).sparse_categorical_crossentropy(Tensor(y), label_smoothing=ls, reduction="sum"), per.sum(), rtol=1e-5)
    keep = y != y[0]
    per = -(log_softmax(x.astype(np.float64), 1) * onehot).sum(1)
    close(Tensor(x).sparse_categorical_crossentropy(Tensor(y), ignore_index=int(y[0])), per[keep].sum() / keep.sum(), rtol=1e-5)
    x3 = rng.uniform(-2, 2, (2, 3, 5)).astype(np.float32)
    y3 = rng.integers(0, 5, (2, 3)).astype(np.int32)
    want = -(log_softmax(x3.astype(np.float64), -1) * np.eye(5)[y3]).sum(-1).mean()
    close(Tensor(x3).sparse_categorical_crossentropy(Tensor(y3)), want, rtol=1e-5)
    with pytest.raises(ValueError, match="reduction='typo'"):
        Tensor(x).cross_entropy(Tensor(y), reduction="typo")
    with pytest.raises(RuntimeError, match="class indices of shape"):
        Tensor(x).cross_entropy(Tensor(np.zeros((8, 1), np.float32)))


def test_nll_loss():
    x = log_softmax(rng.uniform(-2, 2, (4, 3, 2, 2)), 1).astype(np.float32)
    y = rng.integers(0, 3, (4, 2, 2)).astype(np.int32)
    w = np.array([0.5, 2.0, 1.5], np.float32)
    picked = -np.take_along_axis(x, y[:, None], 1)[:, 0]
    wt = w[y]
    close(Tensor(x).nll_loss(Tensor(y)), picked.mean(), rtol=1e-5)
    close(Tensor(x).nll_loss(Tensor(y), Tensor(w), reduction="none"), picked * wt, rtol=1e-5)
    close(Tensor(x).nll_loss(Tensor(y), Tensor(w)), (picked * wt).sum() / wt.sum(), rtol=1e-5)
    keep = (y != 1).astype(np.float32)
    close(Tensor(x).nll_loss(Tensor(y), ignore_index=1, reduction="sum"), (picked * keep).sum(), rtol=1e-5)
    close(Tensor(x).nll_loss(Tensor(y), ignore_index=1), (picked * keep).sum() / keep.sum(), rtol=1e-5)
    with pytest.raises(ValueError):
        Tensor(x).nll_loss(Tensor(y), reduction="typo")
    with pytest.raises(TypeError, match="weight must be a Tensor or None"):
        Tensor(x).nll_loss(Tensor(y), weight=[1, 2, 3])


def test_binary_crossentropy():
    z = rng.uniform(-3, 3, (6, 4)).astype(np.float32)
    t = rng.uniform(0, 1, (6, 4)).astype(np.float32)
    p = sigmoid(z.astype(np.float64))
    per = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    close(Tensor(z).sigmoid().binary_crossentropy(Tensor(t)), per.mean(), rtol=1e-4)
    close(Tensor(z).binary_crossentropy_logits(Tensor(t), reduction="none"), per, rtol=1e-4, atol=1e-5)
    pw = np.array([0.5, 1, 2, 3], np.float32)
    want = -(pw * t * np.log(p) + (1 - t) * np.log(1 - p))
    close(Tensor(z).binary_crossentropy_logits(Tensor(t), reduction="sum", pos_weight=Tensor(pw)), want.sum(), rtol=1e-4)


def sdpa_ref(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def test_scaled_dot_product_attention():
    q, k, v = (rng.uniform(-1, 1, (2, 4, 3, 8)).astype(np.float32) for _ in range(3))
    k5, v5 = (rng.uniform(-1, 1, (2, 4, 5, 8)).astype(np.float32) for _ in range(2))
    close(Tensor(q).scaled_dot_product_attention(Tensor(k5), Tensor(v5)), sdpa_ref(q, k5, v5), rtol=1e-4, atol=1e-5)
    causal = np.tril(np.ones((3, 3), bool))
    close(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), is_causal=True), sdpa_ref(q, k, v, causal), rtol=1e-4, atol=1e-5)
    m = rng.uniform(-1, 1, (2, 4, 3, 3)).astype(np.float32)
    close(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(m)), sdpa_ref(q, k, v, m), rtol=1e-4, atol=1e-5)
    kg, vg = k[:, :2], v[:, :2]
    want = sdpa_ref(q, np.repeat(kg, 2, axis=1), np.repeat(vg, 2, axis=1))
    close(Tensor(q).scaled_dot_product_attention(Tensor(kg), Tensor(vg), enable_gqa=True), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="cannot set attn_mask when is_causal=True"):
        Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(m), is_causal=True)
    with pytest.raises(RuntimeError, match="multiple of the key's 3 heads"):
        Tensor(q).scaled_dot_product_attention(Tensor(k[:, :3]), Tensor(v[:, :3]), enable_gqa=True)


def test_attention_dropout_only_while_training():
    q = Tensor(rng.uniform(-1, 1, (1, 2, 3, 4)).astype(np.float32))
    close(q.scaled_dot_product_attention(q, q, dropout_p=0.5), q.scaled_dot_product_attention(q, q).numpy())
    Tensor.training = True
    try:
        assert (q.scaled_dot_product_attention(q, q, dropout_p=1.0).numpy() == 0).all()
        kept = q.scaled_dot_product_attention(q, q, dropout_p=0.5).numpy()
        assert np.isfinite(kept).all() and not np.allclose(kept, q.scaled_dot_product_attention(q, q).numpy())
    finally:
        Tensor.training = False
