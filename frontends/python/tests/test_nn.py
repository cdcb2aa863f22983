# kiln.nn and the Tensor methods it stands on (layernorm, batchnorm, dropout), against numpy.
import math

import numpy as np
import pytest

from kiln import Tensor, nn


def np_layernorm(x, axis, eps):
    m = x.mean(axis=axis, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axis, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


@pytest.fixture
def training():
    prev = Tensor.training
    Tensor.training = True
    yield
    Tensor.training = prev


def test_layernorm_method_matches_numpy():
    x = np.random.randn(3, 4, 5).astype(np.float32) * 3 + 2
    np.testing.assert_allclose(Tensor(x).layernorm().numpy(), np_layernorm(x, -1, 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(Tensor(x).layernorm(axis=(0, 2), eps=0.1).numpy(), np_layernorm(x, (0, 2), 0.1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(Tensor(x).layernorm(1).numpy(), np_layernorm(x, 1, 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(Exception, match="layernorm"):
        Tensor(x).layernorm(axis=3)


def test_layernorm_gradient_of_the_sum_is_zero():
    # sum over the normalized axis of (x - mean) * s is 0 for every x: its gradient vanishes
    x = Tensor(np.random.randn(2, 6).astype(np.float32), requires_grad=True)
    x.layernorm().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.zeros((2, 6)), atol=1e-5)


def test_batchnorm_method_matches_numpy():
    x = np.random.randn(2, 3, 4, 4).astype(np.float32)
    w, b, m = (np.random.randn(3).astype(np.float32) for _ in range(3))
    inv = np.random.uniform(0.5, 2, 3).astype(np.float32)
    r = lambda a: a.reshape(1, 3, 1, 1)  # noqa: E731
    got = Tensor(x).batchnorm(Tensor(w), Tensor(b), Tensor(m), Tensor(inv)).numpy()
    np.testing.assert_allclose(got, (x - r(m)) * r(w) * r(inv) + r(b), rtol=1e-5, atol=1e-5)
    got = Tensor(x).batchnorm(None, None, Tensor(m), Tensor(inv)).numpy()
    np.testing.assert_allclose(got, (x - r(m)) * r(inv), rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="mean"):
        Tensor(x).batchnorm(None, None, Tensor(np.zeros(4, np.float32)), Tensor(inv))


def test_dropout_only_while_training():
    x = Tensor(np.random.uniform(1, 2, (50, 40)).astype(np.float32))
    assert Tensor.training is False
    np.testing.assert_array_equal(x.dropout(0.5).numpy(), x.numpy())
    with Tensor.train():
        assert Tensor.training is True
        y = x.dropout(0.3).numpy()
        with Tensor.test():
            assert Tensor.training is False
        assert Tensor.training is True
    assert Tensor.training is False
    kept = y != 0
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / 0.7, rtol=1e-6)
    assert 0.2 < 1 - kept.mean() < 0.4  # 2000 draws at p = 0.3: sd ~0.01
    with pytest.raises(ValueError):
        x.dropout(1.5)
    with pytest.raises(TypeError):
        Tensor.training = 1


def test_dropout_is_all_or_nothing_at_the_ends(training):
    x = Tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x.dropout(0).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(x.dropout(1).numpy(), [0, 0, 0])


def test_linear_matches_numpy():
    layer = nn.Linear(5, 3)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    assert w.shape == (3, 5) and b.shape == (3,)
    assert np.abs(w).max() <= 1 / math.sqrt(5) + 1e-6 and np.abs(b).max() <= 1 / math.sqrt(5) + 1e-6
    x = np.random.randn(4, 5).astype(np.float32)
    np.testing.assert_allclose(layer(Tensor(x)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    assert nn.Linear(5, 3, bias=False).bias is None


def np_conv2d(x, w, b, stride=1, padding=0):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + b.reshape(1, -1, 1, 1)


def test_conv2d_layer_matches_numpy():
    conv = nn.Conv2d(2, 4, 3, stride=2, padding=1)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    assert w.shape == (4, 2, 3, 3) and np.abs(w).max() <= 1 / math.sqrt(18) + 1e-6
    x = np.random.randn(2, 2, 7, 7).astype(np.float32)
    np.testing.assert_allclose(conv(Tensor(x)).numpy(), np_conv2d(x, w, b, 2, 1), rtol=1e-4, atol=1e-5)
    same = nn.Conv2d(2, 3, 3, padding="same")
    assert same(Tensor(x)).shape == (2, 3, 7, 7)
    with pytest.raises(ValueError):
        nn.Conv2d(2, 3, 3, padding="valid")


def test_batchnorm_layer_training_and_eval():
    bn = nn.BatchNorm2d(3)
    x = (np.random.randn(4, 3, 5, 5) * 2 + 1).astype(np.float32)
    with Tensor.train():
        y = bn(Tensor(x)).numpy()
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    r = lambda a: a.reshape(1, 3, 1, 1)  # noqa: E731
    np.testing.assert_allclose(y, (x - r(mean)) / np.sqrt(r(var) + 1e-5), rtol=1e-4, atol=1e-4)
    n = x.size / 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-4)
    assert bn.num_batches_tracked.item() == 1
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    y = bn(Tensor(x)).numpy()  # eval: the running statistics, which stay
    np.testing.assert_allclose(y, (x - r(rm)) / np.sqrt(r(rv) + 1e-5), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(bn.running_mean.numpy(), rm)
    plain = nn.BatchNorm(3, affine=False, track_running_stats=False)
    assert plain.weight is None and not hasattr(plain, "running_mean")


def test_layernorm_and_groupnorm_layers():
    ln = nn.LayerNorm((4, 5))
    ln.weight.assign(Tensor(np.random.randn(4, 5).astype(np.float32)))
    x = np.random.randn(3, 4, 5).astype(np.float32)
    want = np_layernorm(x, (-1, -2), 1e-5) * ln.weight.numpy()
    np.testing.assert_allclose(ln(Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        ln(Tensor(np.zeros((3, 5, 4), np.float32)))
    gn = nn.GroupNorm(2, 4)
    x = np.random.randn(2, 4, 3).astype(np.float32)
    want = np_layernorm(x.reshape(2, 2, 6), -1, 1e-5).reshape(2, 4, 3)
    np.testing.assert_allclose(gn(Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)


def test_embedding_looks_up_rows_and_accumulates_gradients():
    emb = nn.Embedding(6, 3)
    w = emb.weight.numpy()
    assert np.abs(w).max() <= math.sqrt(6 / 9) + 1e-6
    idx = np.array([[0, 5, 2], [2, 2, 1]], np.int32)
    np.testing.assert_allclose(emb(Tensor(idx)).numpy(), w[idx], rtol=1e-6)
    emb.weight.requires_grad = True
    emb(Tensor(idx)).sum().backward()
    counts = np.bincount(idx.ravel(), minlength=6).astype(np.float32)
    np.testing.assert_allclose(emb.weight.grad.numpy(), np.repeat(counts[:, None], 3, axis=1))
    with pytest.raises(TypeError):
        emb(Tensor([0.0, 1.0]))
