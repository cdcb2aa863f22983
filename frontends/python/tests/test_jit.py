# kiln.TinyJit: call 1 runs, call 2 captures, later calls replay (the Python function is not run);
# a jitted training step computes what the eager one does.
import numpy as np
import pytest

import kiln
from kiln import Tensor, TinyJit, nn


def test_replay_uses_the_new_inputs_without_running_python():
    calls = []

    @TinyJit
    def f(x, y):
        calls.append(1)
        return x * 2 + y

    for i in range(5):
        x = np.random.randn(3, 4).astype(np.float32)
        y = np.random.randn(3, 4).astype(np.float32)
        np.testing.assert_allclose(f(Tensor(x), Tensor(y)).numpy(), x * 2 + y, rtol=1e-6)
        assert f.captured == (i >= 1)
    assert len(calls) == 2 and f.kernel_count >= 1


def test_outputs_keep_their_structure_and_non_tensor_arguments():
    @TinyJit
    def f(a, scale, *, b):
        return {"sum": (a + b) * scale, "pair": (a - b, 7)}

    for _ in range(4):
        a, b = np.random.randn(5).astype(np.float32), np.random.randn(5).astype(np.float32)
        out = f(Tensor(a), 3.0, b=Tensor(b))
        assert set(out) == {"sum", "pair"} and out["pair"][1] == 7
        np.testing.assert_allclose(out["sum"].numpy(), (a + b) * 3, rtol=1e-6)
        np.testing.assert_allclose(out["pair"][0].numpy(), a - b, rtol=1e-6)


def test_a_changed_input_shape_after_capture_is_an_error_and_reset_recaptures():
    f = TinyJit(lambda x: x + 1)
    for _ in range(3):
        f(Tensor([1.0, 2.0]))
    with pytest.raises(kiln.Error, match="shape"):
        f(Tensor([1.0, 2.0, 3.0]))
    f.reset()
    assert not f.captured
    np.testing.assert_allclose(f(Tensor([1.0, 2.0, 3.0])).numpy(), [2, 3, 4])


def test_an_exception_in_the_function_propagates():
    def bad(x):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        TinyJit(bad)(Tensor([1.0]))


def make_model(seed):
    rs = np.random.RandomState(seed)
    model = [nn.Linear(6, 8), nn.Linear(8, 3)]
    for layer in model:
        layer.weight.assign(Tensor(rs.uniform(-0.5, 0.5, layer.weight.shape).astype(np.float32))).realize()
        layer.bias.assign(Tensor(rs.uniform(-0.5, 0.5, layer.bias.shape).astype(np.float32))).realize()
    return model


def forward(model, x):
    return model[1](model[0](x).relu())


@pytest.mark.parametrize("make_opt", [
    lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.9),
    lambda p: nn.optim.Adam(p, lr=0.01),
], ids=["sgd", "adam"])
def test_jitted_training_step_equals_eager(make_opt):
    eager, jitted = make_model(0), make_model(0)
    opt_e, opt_j = make_opt(nn.state.get_parameters(eager)), make_opt(nn.state.get_parameters(jitted))

    def step(model, opt, x, y):
        with Tensor.train():
            opt.zero_grad()
            loss = ((forward(model, x) - y) ** 2).mean()
            loss.backward()
            return loss.realize(*opt.schedule_step())

    jit_step = TinyJit(lambda x, y: step(jitted, opt_j, x, y))
    rs = np.random.RandomState(1)
    for i in range(6):
        x, y = rs.randn(4, 6).astype(np.float32), rs.randn(4, 3).astype(np.float32)
        le = step(eager, opt_e, Tensor(x), Tensor(y)).item()
        lj = jit_step(Tensor(x), Tensor(y)).item()
        assert abs(le - lj) <= 1e-6 * max(1.0, abs(le)), f"step {i}: eager {le} jit {lj}"
    assert jit_step.captured
    for a, b in zip(nn.state.get_parameters(eager), nn.state.get_parameters(jitted)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)


def test_jit_as_a_method_decorator():
    class Model:
        def __init__(self):
            self.w = Tensor([2.0, 3.0])

        @TinyJit
        def __call__(self, x):
            return x * self.w

    m = Model()
    for v in ([1.0, 1.0], [2.0, -1.0], [0.5, 4.0]):
        np.testing.assert_allclose(m(Tensor(v)).numpy(), np.array(v) * [2, 3])


def test_a_function_calling_its_own_jit_is_an_error():
    @TinyJit
    def f(x):
        return f(x) + 1

    with pytest.raises(kiln.Error, match="recursion"):
        f(Tensor([1.0]))

