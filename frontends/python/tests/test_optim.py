# kiln.nn.optim against a plain numpy reimplementation of tinygrad's (torch's) update rules, a few
# steps on loss = sum(w * c + w * w) (gradient c + 2w).
import numpy as np
import pytest

from kiln import Tensor, nn
from kiln.nn.optim import SGD, Adam, AdamW


@pytest.fixture(autouse=True)
def training():
    prev = Tensor.training
    Tensor.training = True
    yield
    Tensor.training = prev


def run_kiln(make_opt, w0, c, steps, lr_at=None):
    w = Tensor(w0.copy())
    opt = make_opt([w])
    for i in range(steps):
        if lr_at:
            opt.lr = lr_at(i)
        opt.zero_grad()
        (w * Tensor(c) + w * w).sum().backward()
        opt.step()
    return w.numpy()


def np_sgd(w, c, steps, lr, momentum=0.0, wd=0.0, nesterov=False, classic=False, lr_at=None):
    w, b = w.astype(np.float64), np.zeros_like(w, np.float64)
    for i in range(steps):
        lr_i = lr_at(i) if lr_at else lr
        g = c + 2 * w + wd * w
        if classic:
            g = g * lr_i
        if momentum:
            b = momentum * b + g
            g = g + momentum * b if nesterov else b
        w = w - (g if classic else g * lr_i)
    return w


def np_adam(w, c, steps, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    w, m, v = w.astype(np.float64), np.zeros_like(w, np.float64), np.zeros_like(w, np.float64)
    for t in range(1, steps + 1):
        g = c + 2 * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        up = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * w
        w = w - lr * up
    return w


W0 = np.random.RandomState(1).uniform(-1, 1, (3, 4)).astype(np.float32)
C = np.random.RandomState(2).uniform(-1, 1, (3, 4)).astype(np.float32)


@pytest.mark.parametrize("kw", [
    {}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True}, {"weight_decay": 0.1},
    {"momentum": 0.5, "weight_decay": 0.01, "classic": True},
])
def test_sgd_matches_numpy(kw):
    got = run_kiln(lambda p: SGD(p, lr=0.05, **kw), W0, C, 5)
    want = np_sgd(W0, C, 5, 0.05, kw.get("momentum", 0), kw.get("weight_decay", 0), kw.get("nesterov", False),
                  kw.get("classic", False))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_classic_momentum_differs_when_the_rate_changes():
    lr_at = lambda i: 0.1 / (i + 1)  # noqa: E731
    for classic in (False, True):
        got = run_kiln(lambda p: SGD(p, lr=0.1, momentum=0.9, classic=classic), W0, C, 4, lr_at)
        want = np_sgd(W0, C, 4, 0.1, 0.9, classic=classic, lr_at=lr_at)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    a = run_kiln(lambda p: SGD(p, lr=0.1, momentum=0.9, classic=True), W0, C, 4, lr_at)
    b = run_kiln(lambda p: SGD(p, lr=0.1, momentum=0.9), W0, C, 4, lr_at)
    assert np.abs(a - b).max() > 1e-3


def test_adam_and_adamw_match_numpy():
    got = run_kiln(lambda p: Adam(p, lr=0.01), W0, C, 6)
    np.testing.assert_allclose(got, np_adam(W0, C, 6, 0.01), rtol=1e-5, atol=1e-6)
    got = run_kiln(lambda p: AdamW(p, lr=0.01, b1=0.8, b2=0.99, weight_decay=0.1), W0, C, 6)
    np.testing.assert_allclose(got, np_adam(W0, C, 6, 0.01, 0.8, 0.99, wd=0.1), rtol=1e-5, atol=1e-6)


def test_step_needs_training_and_arguments_are_checked():
    w = Tensor(W0.copy())
    opt = SGD([w], lr=0.1)
    assert w.requires_grad  # the optimizer marks its parameters
    (w * w).sum().backward()
    with Tensor.test():
        with pytest.raises(RuntimeError, match="training"):
            opt.step()
    opt.step()
    np.testing.assert_allclose(w.numpy(), W0 - 0.1 * 2 * W0, rtol=1e-6)
    with pytest.raises(ValueError):
        SGD([w], lr=-1)
    with pytest.raises(ValueError):
        SGD([w], momentum=-0.1)
    with pytest.raises(ValueError):
        SGD([], lr=0.1)
    with pytest.raises(TypeError):
        SGD([w, 3.0])


def test_a_parameter_without_gradient_and_buffers_are_left_alone():
    a, b = Tensor(W0.copy()), Tensor(C.copy())
    opt = Adam([a, b, a], lr=0.1)
    assert len(opt.params) == 2  # deduplicated
    opt.zero_grad()
    (a * 2).sum().backward()
    opt.step()
    np.testing.assert_array_equal(b.numpy(), C)
    assert not np.allclose(a.numpy(), W0)
    bn = nn.BatchNorm(3)
    opt = SGD(nn.state.get_parameters(bn), lr=0.1)
    assert len(opt.params) == 2 and len(opt.buffers) == 3


def test_training_a_linear_layer_reduces_the_loss():
    rs = np.random.RandomState(3)
    x = rs.randn(32, 4).astype(np.float32)
    y = x @ rs.randn(4, 2).astype(np.float32)
    layer = nn.Linear(4, 2)
    opt = nn.optim.Adam(nn.state.get_parameters(layer), lr=0.05)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = ((layer(Tensor(x)) - Tensor(y)) ** 2).mean()
        loss.backward()
        loss.realize(*opt.schedule_step())
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_buffers_are_not_kept_alive_by_the_mark():
    import gc
    import weakref

    from kiln.nn import state

    bn = nn.BatchNorm(4)
    ref = weakref.ref(bn.running_mean)
    assert state._is_buffer(bn.running_mean)
    n = len(state._buffers)
    del bn
    gc.collect()
    assert ref() is None and len(state._buffers) == n - 3
