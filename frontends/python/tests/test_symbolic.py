# Symbolic dimensions from Python (kiln.Variable, DESIGN §5.2 on kiln::Variable / BoundVariable):
# views whose size is a bound variable, their values against numpy at every size, TinyJit
# re-binding the variable on replay, the kernels built once for every size (counted from
# KILN_DEBUG=2's "built" lines of a child process: the program cache's public trace), and the
# errors. kiln.onnx with symbolic feeds is in test_onnx.py.
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
from kiln import BoundVariable, Tensor, TinyJit, Variable


def _buf(*shape):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7 - 1
    return a, Tensor(a).realize()


# ---- Variable and BoundVariable ----

def test_variable_and_bound_variable():
    n = Variable("n", 1, 8)
    assert (n.name, n.min, n.max) == ("n", 1, 8)
    assert (n.expr, n.vmin, n.vmax) == ("n", 1, 8)  # tinygrad's names
    assert repr(n) == "Variable('n', 1, 8)"
    assert n == Variable("n", 1, 8) and n != Variable("n", 1, 9) and n != "n"
    assert hash(n) == hash(Variable("n", 1, 8))
    b = n.bind(3)
    assert isinstance(b, BoundVariable) and isinstance(n, kiln.Variable)
    assert (b.value, b.val, b.name, b.min, b.max) == (3, 3, "n", 1, 8)
    assert repr(b) == "Variable('n', 1, 8).bind(3)"
    var, val = b.unbind()
    assert var == n and val == 3
    assert b.same_variable(n.bind(8)) and not b.same_variable(Variable("m", 1, 8).bind(3))
    assert not b.same_variable(Variable("n", 1, 9).bind(3))
    assert n.bind(np.int64(2)).value == 2  # anything with __index__ that is not a bool


def test_variable_errors():
    n = Variable("n", 1, 8)
    for v in (0, 9, -1):
        with pytest.raises(kiln.Error, match=rf"'n': value {v} is outside its range \[1, 8\]") as e:
            n.bind(v)
        assert e.value.code == "invalid_argument" and isinstance(e.value, ValueError)
    for bad in (2.0, True, "3", None):
        with pytest.raises(TypeError, match="bind\\(\\): the value must be an int"):
            n.bind(bad)
    with pytest.raises(kiln.Error, match="min 5 > max 2"):
        Variable("n", 5, 2)
    with pytest.raises(kiln.Error, match="cannot be negative"):
        Variable("n", -1, 2)
    with pytest.raises(kiln.Error, match="must not be empty"):
        Variable("", 1, 2)
    with pytest.raises(kiln.Error, match="kiln's own"):
        Variable("__x", 1, 2)
    with pytest.raises(TypeError, match="min must be an int, got float"):
        Variable("n", 1.5, 2)
    with pytest.raises(TypeError, match="name must be a str"):
        Variable(3, 1, 2)


# ---- symbolic views against numpy ----

def test_slices_and_shrink_make_symbolic_dims():
    a, t = _buf(8, 6)
    n = Variable("n", 1, 8)
    for v in (1, 3, 8):
        b = n.bind(v)
        for x in (t[:b], t[0:b], t[:b:1], t[:b, :], t.shrink(((0, b), None)), t.shrink(((0, b), (0, 6)))):
            assert x.shape == (v, 6)
            assert x.symbolic_dim(0).same_variable(b) and x.symbolic_dim(0).value == v
            assert x.symbolic_dim(1) is None and x.symbolic_dim(-1) is None
            np.testing.assert_allclose(x.numpy(), a[:v])
        m = Variable("m", 1, 6).bind(min(v, 6))
        y = t[:, :m]
        assert y.symbolic_dim(1).name == "m" and y.symbolic_dim(0) is None
        np.testing.assert_allclose(y.numpy(), a[:, :min(v, 6)])
        np.testing.assert_allclose(t[..., :m].numpy(), a[..., :min(v, 6)])
        np.testing.assert_allclose(t[None, :b, 2:5].numpy(), a[None, :v, 2:5])  # None takes no axis
        both = t[:b, :m]
        assert [both.symbolic_dim(i).name for i in range(2)] == ["n", "m"]
        np.testing.assert_allclose(both.numpy(), a[:v, :min(v, 6)])
        # fixed shrinks on the other axes, the symbolic one together
        np.testing.assert_allclose(t.shrink(((0, b), (1, 4))).numpy(), a[:v, 1:4])


def test_ops_on_symbolic_dims_match_numpy():
    a, t = _buf(8, 6)
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    wt = Tensor(w)
    n = Variable("n", 1, 8)
    for v in (1, 2, 5, 8):
        x, ref = t[:n.bind(v)], a[:v]
        np.testing.assert_allclose(((x * 2 + 1).relu()).numpy(), np.maximum(ref * 2 + 1, 0), rtol=1e-6)
        np.testing.assert_allclose((x @ wt).numpy(), ref @ w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.sum(1).numpy(), ref.sum(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.sum(0).numpy(), ref.sum(0), rtol=1e-5, atol=1e-6)  # over the symbolic axis
        np.testing.assert_allclose(x.max().numpy(), ref.max())
        np.testing.assert_allclose(x.softmax(1).numpy(), np.exp(ref) / np.exp(ref).sum(1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(x.T.numpy(), ref.T)
        s = (x + x[:, :1]).exp()  # a fixed 1 broadcasts against the symbolic dimension
        assert s.symbolic_dim(0).value == v  # (realizing it, numpy() below, fixes its size)
        np.testing.assert_allclose(s.numpy(), np.exp(ref + ref[:, :1]), rtol=1e-5)


def test_reshape_and_expand_with_variables():
    a, t = _buf(8, 6)
    n = Variable("n", 1, 8)
    for v in (1, 4):
        b = n.bind(v)
        x = t[:b].reshape(b, 2, 3)  # placed where written
        assert x.shape == (v, 2, 3) and x.symbolic_dim(0).value == v and x.symbolic_dim(1) is None
        np.testing.assert_allclose(x.numpy(), a[:v].reshape(v, 2, 3))
        y = t[:b].reshape(None, 3, 2)  # None keeps the symbolic dimension
        assert y.symbolic_dim(0).same_variable(b)
        np.testing.assert_allclose(y.numpy(), a[:v].reshape(v, 3, 2))
        one = Tensor([[1.0, 2.0, 3.0]])  # (1, 3)
        e = one.expand(b, 3)
        assert e.shape == (v, 3) and e.symbolic_dim(0).same_variable(b)
        np.testing.assert_allclose(e.numpy(), np.broadcast_to([[1.0, 2.0, 3.0]], (v, 3)))
        lead = Tensor([1.0, 2.0]).expand((b, 2))  # a new leading axis of the variable's size
        assert lead.symbolic_dim(0).value == v
        np.testing.assert_allclose(lead.numpy(), np.broadcast_to([1.0, 2.0], (v, 2)))


def test_symbolic_errors():
    a, t = _buf(8, 6)
    b = Variable("n", 1, 8).bind(3)
    with pytest.raises(kiln.Error, match="takes the first n along its axis: start 0 and step 1"):
        t[1:b]
    with pytest.raises(kiln.Error, match="start 0 and step 1"):
        t[:b:2]
    with pytest.raises(kiln.Error, match="a variable can only end a slice"):
        t[b:]
    with pytest.raises(kiln.Error, match="must start at 0"):
        t.shrink(((1, b), None))
    with pytest.raises(kiln.Error, match="a variable can only end a range"):
        t.shrink(((b, 5), None))
    with pytest.raises(kiln.Error, match="'n' can reach 8, beyond dimension 1 of size 6"):
        t[:, :b]
    with pytest.raises(kiln.Error, match=r"'n' \(3\) vs 3"):  # a fixed size, even an equal one, is not the variable
        t[:b] + Tensor.ones(3, 6)
    with pytest.raises(kiln.Error, match=r"'n' \(3\) vs 'm' \(3\)"):
        t[:b] + t[:Variable("m", 1, 8).bind(3)]
    with pytest.raises(kiln.Error, match="already symbolic"):
        t[:b].shrink(((0, b), None))
    with pytest.raises(kiln.Error, match="axis 0 is the symbolic 'n' .*only the whole axis"):
        t[:b][:2]  # resolved from the bound value, it would be wrong for the next one
    with pytest.raises(kiln.Error, match="cannot be assigned to"):
        t[:b] = 1.0
    with pytest.raises(kiln.Error, match="symbolic_dim"):
        t[:b].symbolic_dim(2)
    with pytest.raises(TypeError, match="pair of ints"):
        t.shrink(((0, 2.5), None))


# ---- TinyJit ----

def test_jit_rebinds_variables_on_replay():
    a, t = _buf(8, 6)
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    wt = Tensor(w).realize()
    n = Variable("n", 1, 8)

    @TinyJit
    def step(buf, k, scale=1.0):
        return ((buf[:k] @ wt) * scale).relu()  # lazy: the output takes each call's size

    counts = []
    for v in (1, 1, 3, 5, 8, 2, 1):  # captured at 1: a variable bound to 1 stays symbolic
        out = step(t, n.bind(v), scale=2.0)
        assert out.shape == (v, 4), v
        assert out.symbolic_dim(0) is None or out.symbolic_dim(0).value == v
        np.testing.assert_allclose(out.numpy(), np.maximum((a[:v] @ w) * 2, 0), rtol=1e-5, atol=1e-6)
        counts.append(step.kernel_count)
    assert step.captured and counts[1] > 0 and len(set(counts[1:])) == 1
    # the keyword form and the variable as a keyword argument
    out = step(buf=t, k=n.bind(6), scale=2.0)
    np.testing.assert_allclose(out.numpy(), np.maximum((a[:6] @ w) * 2, 0), rtol=1e-5, atol=1e-6)


def test_jit_takes_symbolic_views_as_inputs():
    # tinygrad's way (test_symbolic_jit.py): the input is the view, its variable re-bound per call
    a, t = _buf(8, 6)
    b, c = a[::-1].copy(), a * 3
    tb, tc = Tensor(b).realize(), Tensor(c).realize()
    n = Variable("n", 1, 8)
    jf = TinyJit(lambda x, y: (x * 2 + y).realize())
    for v in (1, 3, 3, 5, 8, 2):
        x, ref = (tb, b) if v in (5, 2) else (t, a)  # any buffer of the same size, seen the same way
        out = jf(x[:n.bind(v)], tc[:n.bind(v)])
        assert out.shape == (v, 6), v
        np.testing.assert_allclose(out.numpy(), ref[:v] * 2 + c[:v], rtol=1e-6)
    assert jf.captured
    m = Variable("m", 1, 6)
    jm = TinyJit(lambda x: x.sum(1))
    for v in (2, 6, 4):
        np.testing.assert_allclose(jm(t[:, :m.bind(v)]).numpy(), a[:, :v].sum(1), rtol=1e-5, atol=1e-6)
    # the input view returned as it is and reshaped, along a symbolic axis 1, from two buffers
    both = TinyJit(lambda x: (x + 1, x, x.reshape(8, 1, -1)))
    for v in (2, 3, 5, 4, 1):
        x, ref = (tb, b) if v in (5, 1) else (t, a)
        o1, o2, o3 = both(x[:, :m.bind(v)])
        assert (o1.shape, o2.shape, o3.shape) == ((8, v), (8, v), (8, 1, v))
        np.testing.assert_allclose(o1.numpy(), ref[:, :v] + 1, rtol=1e-6)
        np.testing.assert_array_equal(o2.numpy(), ref[:, :v])
        np.testing.assert_array_equal(o3.numpy(), ref[:, :v].reshape(8, 1, v))


def test_jit_replays_outputs_realized_inside():
    # tinygrad's habit: the function realizes what it returns; realize fixes a tensor's size, yet
    # the replay must follow the variable (regression: it came back at the captured size)
    a, t = _buf(8, 6)
    n = Variable("n", 1, 8)
    step = TinyJit(lambda buf, k: ((buf[:k] + 1).realize(), buf[:k].sum(0).realize()))
    for v in (3, 3, 6, 1, 8):
        rows, total = step(t, n.bind(v))
        assert rows.shape == (v, 6) and total.shape == (6,), v
        np.testing.assert_allclose(rows.numpy(), a[:v] + 1, rtol=1e-6)
        np.testing.assert_allclose(total.numpy(), a[:v].sum(0), rtol=1e-5, atol=1e-6)
    assert step.captured


def test_jit_variable_errors():
    a, t = _buf(8, 6)
    n = Variable("n", 1, 8)
    jf = TinyJit(lambda x: x * 2)
    for v in (3, 4, 5):
        jf(t[:n.bind(v)])
    with pytest.raises(kiln.Error, match="input 0 .* is not the symbolic view it was captured as") as e:
        jf(t[:, 1:][:n.bind(3)])
    assert e.value.code == "invalid_argument"
    with pytest.raises(kiln.Error, match="input 0 .*not such a view"):
        jf(t)
    two = TinyJit(lambda x, i, j: x[:i] + x[:j])
    with pytest.raises(kiln.Error, match="binds .*bind\\(4\\) but this call already binds .*bind\\(3\\)"):
        two(t, n.bind(3), n.bind(4))
    step = TinyJit(lambda x, k: x[:k] + 1)
    for v in (2, 3, 4):
        step(t, n.bind(v))
    with pytest.raises(kiln.Error, match="variable 0 is 'n' in \\[1, 6\\], captured as 'n' in \\[1, 8\\]"):
        step(t, Variable("n", 1, 6).bind(2))
    with pytest.raises(kiln.Error, match="called with 0 variables, captured with 1"):
        step(t, 3)


# ---- one compile for every size ----

_COUNT = textwrap.dedent("""
    import sys
    import numpy as np
    from kiln import Tensor, TinyJit, Variable
    n = Variable("n", 1, 16)
    buf = Tensor(np.arange(16 * 8, dtype=np.float32).reshape(16, 8)).realize()
    w = Tensor(np.ones((8, 4), np.float32)).realize()
    step = TinyJit(lambda b, k: (b[:k] @ w).relu().sum(1))
    view = TinyJit(lambda x: (x * 3).max(1))  # tinygrad's way: the input is the view
    for v in (3, 1, 7, 16, 2):
        print("== size", v, file=sys.stderr, flush=True)
        got = (buf[:n.bind(v)] @ w + 1).exp2().numpy()
        assert got.shape == (v, 4)
        assert step(buf, n.bind(v)).shape == (v,)
        assert view(buf[:n.bind(v)]).shape == (v,)
    print("== done", file=sys.stderr, flush=True)
""")


def _built_per_size(stderr: str) -> dict:
    """{size: kernels built while that size ran}, from KILN_DEBUG=2's lines."""
    out, size = {}, None
    for line in stderr.splitlines():
        if m := re.match(r"== size (\d+)", line):
            size = int(m.group(1))
            out[size] = 0
        elif line.startswith("== done"):
            size = None
        elif size is not None and re.search(r"\bbuilt \S+:", line):
            out[size] += 1
    return out


def test_kernels_are_built_once_for_every_size(tmp_path):
    env = dict(os.environ, KILN_DEBUG="2", KILN_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", _COUNT], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    built = _built_per_size(r.stderr)
    assert list(built) == [3, 1, 7, 16, 2], r.stderr[-3000:]
    assert built[3] >= 3, built  # the plain graph's kernel and the Jits'
    assert all(built[v] == 0 for v in (1, 7, 16, 2)), f"kernels built per size: {built}"
