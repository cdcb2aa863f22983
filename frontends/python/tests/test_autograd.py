import numpy as np

from kiln import Tensor


def test_gradient_of_a_small_mlp():
    x = np.random.uniform(-1, 1, (4, 3)).astype(np.float32)
    w = np.random.uniform(-1, 1, (3, 2)).astype(np.float32)
    tw = Tensor(w, requires_grad=True)
    assert tw.requires_grad and tw.grad is None
    loss = (Tensor(x) @ tw).relu().sum()
    loss.backward()
    mask = (x @ w > 0).astype(np.float32)
    np.testing.assert_allclose(tw.grad.numpy(), x.T @ mask, rtol=1e-5, atol=1e-6)


def test_gradient_and_detach():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = Tensor([4.0, 5.0, 6.0], requires_grad=True)
    ga, gb = (a * b + a.exp()).sum().gradient(a, b)
    np.testing.assert_allclose(ga.numpy(), [4 + np.e, 5 + np.e**2, 6 + np.e**3], rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), [1, 2, 3])
    (gd,) = (a * a.detach()).sum().gradient(a)
    np.testing.assert_allclose(gd.numpy(), [1, 2, 3])
    c = Tensor([1.0])
    assert not c.requires_grad
    c.requires_grad = True
    assert c.requires_grad
    (c * 3).sum().backward()
    assert c.grad.tolist() == [3.0]
