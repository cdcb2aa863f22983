# The structural ops under tinygrad's names, keywords and defaults (bind_struct.cpp), with numpy as
# the oracle: running reductions, argmin, sort/topk, einsum, triangles, one_hot, masked ops,
# scatter, repeat, split/chunk, unfold, meshgrid, diagonals, roll, unflatten, pad modes,
# interpolate, cat/stack; and the Python exception types tinygrad raises.
import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes


def close(t, want, rtol=1e-5, atol=1e-6):
    got = t.numpy()
    assert got.shape == np.shape(want), f"shape {got.shape} != {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got


def rand(*shape, lo=-2.0, hi=2.0):
    return np.random.uniform(lo, hi, shape).astype(np.float32)


# ---- running reductions and argmin ----

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumulative_ops(axis):
    a = rand(3, 4, 5, lo=0.5, hi=1.5)
    close(Tensor(a).cumsum(axis), np.cumsum(a, axis))
    close(Tensor(a).cumprod(axis), np.cumprod(a, axis), rtol=1e-5)
    close(Tensor(a).logcumsumexp(axis), np.logaddexp.accumulate(a.astype(np.float64), axis), rtol=1e-5)
    v, i = Tensor(a).cummax(axis)
    close(v, np.maximum.accumulate(a, axis))
    assert i.dtype == dtypes.int32
    v, i = Tensor(a).cummin(axis=axis)
    close(v, np.minimum.accumulate(a, axis))


def test_cumulative_defaults_scalars_and_empty_axes():
    a = rand(4, 3)
    close(Tensor(a).cumsum(), np.cumsum(a, 0))
    close(Tensor(np.float32(2.5)).cumsum(), np.float32(2.5))
    assert Tensor(np.zeros((2, 0, 4), np.float32)).cumsum(1).shape == (2, 0, 4)
    assert Tensor(np.zeros((2, 3, 0), np.float32)).cummax(2)[1].shape == (2, 3, 0)
    close(Tensor([0.0, 100.0]).logcumsumexp(), [0.0, 100.0])
    # the running max's index: the last of tied positions (torch)
    assert Tensor([1.0, 3.0, 3.0, 2.0]).cummax(0)[1].tolist() == [0, 1, 2, 2]


@pytest.mark.parametrize("fn", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_cumulative_axis_out_of_range_is_index_error(fn):
    with pytest.raises(IndexError, match="axis"):
        getattr(Tensor(rand(5)), fn)(1)
    with pytest.raises(IndexError):
        getattr(Tensor(rand(5)), fn)(-2)
    with pytest.raises(IndexError):
        getattr(Tensor(np.float32(1)), fn)(1)


def test_argmin_first_occurrence_and_flat_default():
    assert Tensor([3, 2, 2]).argmin().item() == 1
    assert Tensor([0, -2**31]).argmin().item() == 1
    assert Tensor([True, False]).argmin().item() == 1
    a = rand(10, 20)
    np.testing.assert_equal(Tensor(a).argmin().numpy(), np.argmin(a))
    np.testing.assert_equal(Tensor(a).argmin(1, True).numpy(), np.argmin(a, 1)[:, None])
    with pytest.raises(IndexError):
        Tensor(a).argmin(2)


# ---- sort, argsort, topk ----

@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable(dim, descending):
    a = np.round(rand(6, 7, 5), 1)  # rounded: many ties
    key = -a if descending else a
    idx = np.argsort(key, axis=dim, kind="stable")
    v, i = Tensor(a).sort(dim, descending)
    np.testing.assert_equal(i.numpy(), idx)
    close(v, np.take_along_axis(a, idx, dim))
    np.testing.assert_equal(Tensor(a).argsort(dim=dim, descending=descending).numpy(), idx)


def test_topk():
    v, i = Tensor([1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0]).topk(3)
    assert v.tolist() == [1, 1, 1] and i.tolist() == [0, 1, 3]
    v, i = Tensor([1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0]).topk(3, largest=False)
    assert i.tolist() == [2, 4, 6]
    a = rand(5, 5, 4)
    v, i = Tensor(a).topk(2, dim=0, largest=True, sorted_=True)
    idx = np.argsort(-a, axis=0, kind="stable")[:2]
    np.testing.assert_equal(i.numpy(), idx)
    close(v, np.take_along_axis(a, idx, 0))
    with pytest.raises(kiln.Error, match="k = 5"):
        Tensor(rand(4)).topk(5)


def test_sort_and_cummax_gradients_go_to_the_picked_elements():
    a = rand(6)
    w = np.arange(1, 7, dtype=np.float32)
    x = Tensor(a, requires_grad=True)
    (x.sort()[0] * Tensor(w)).sum().backward()
    want = np.zeros(6, np.float32)
    want[np.argsort(a, kind="stable")] = w
    close(x.grad, want)
    x = Tensor([1.0, 3.0, 2.0, 5.0], requires_grad=True)
    x.cummax(0)[0].sum().backward()
    close(x.grad, [1.0, 2.0, 0.0, 1.0])


# ---- einsum ----

@pytest.mark.parametrize("formula,shapes", [
    ("ij->ji", [(4, 5)]), ("ji", [(4, 5)]), ("ijk->", [(2, 3, 4)]), ("ij,jk", [(3, 4), (4, 5)]),
    ("ik,k->i", [(3, 4), (4,)]), ("i,j->ij", [(5,), (3,)]), ("i,i", [(5,), (5,)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ijk,ikl->jil", [(2, 4, 5), (2, 5, 7)]),
    ("...id,...jd->...ij", [(3, 8, 9), (3, 8, 9)]), ("...id, ...jd", [(3, 8, 9), (3, 8, 9)]),
    ("i...j,ji...->...", [(2, 3, 4, 5), (5, 2, 4)]), ("...ii->...", [(3, 5, 5)]), ("ik,jkl,il->ij", [(2, 3), (5, 3, 7), (2, 7)]),
])
def test_einsum_matches_numpy(formula, shapes):
    ops = [rand(*s) for s in shapes]
    want = np.einsum(formula.replace(" ", ""), *[o.astype(np.float64) for o in ops])
    close(Tensor.einsum(formula, *[Tensor(o) for o in ops]), want, rtol=1e-4, atol=1e-5)
    close(Tensor.einsum(formula, [Tensor(o) for o in ops]), want, rtol=1e-4, atol=1e-5)


def test_einsum_errors():
    a, b = Tensor(rand(3, 8, 10, 5)), Tensor(rand(11, 5, 13, 16, 8))
    with pytest.raises(kiln.Error, match="label"):
        Tensor.einsum("pqrs,tuqvr->pstuv", a, b)
    with pytest.raises(kiln.Error, match="operand"):
        Tensor.einsum("ij,jk->ij", [Tensor(rand(10, 15)), Tensor(rand(15, 20)), Tensor(rand(20, 10))])
    with pytest.raises(kiln.Error, match="operand"):
        Tensor.einsum("ij,jk->ij", Tensor(rand(10, 10)))
    with pytest.raises(kiln.Error, match="ellipsis"):
        Tensor.einsum("...ik..., ...jk ->", Tensor(rand(2, 3, 4)), Tensor(rand(2, 3, 4)))
    with pytest.raises(TypeError):
        Tensor.einsum("ij->ji", rand(2, 2))


# ---- triangles, one_hot, masked ops, scatter ----

@pytest.mark.parametrize("d", [-6, -2, 0, 1, 4, 6])
def test_tril_triu(d):
    a = rand(2, 4, 5)
    close(Tensor(a).tril(d), np.tril(a, d))
    close(Tensor(a).triu(diagonal=d), np.triu(a, d))
    assert Tensor([[True] * 3] * 3).tril().dtype == dtypes.bool


def test_one_hot_and_masked_fill():
    data = np.array([[1, 2, 3], [0, 3, 5]], np.int32)
    oh = Tensor(data).one_hot(8)
    assert oh.dtype == dtypes.int32
    np.testing.assert_equal(oh.numpy(), np.eye(8, dtype=np.int32)[data])
    with pytest.raises(ValueError):
        Tensor(data).one_hot(-1)
    a = rand(5, 6)
    close(Tensor(a).masked_fill(Tensor(a) > 0.1, -np.inf), np.where(a > 0.1, -np.inf, a))
    close(Tensor(a).masked_fill(Tensor(a) > 0.1, Tensor(np.float32(3))), np.where(a > 0.1, 3, a))


def test_masked_select_and_nonzero():
    a = rand(8, 5)
    close(Tensor(a).masked_select(Tensor(a) > 0.5), a[a > 0.5])
    close(Tensor(a).masked_select(Tensor(True)), a.reshape(-1))
    t, mask = Tensor(list(range(9))), Tensor([True, False, True, False, True, False, False, False, True])
    assert t.masked_select(mask, size=6, fill_value=-1).tolist() == [0, 2, 4, 8, -1, -1]
    assert Tensor([1.0, 2.0]).masked_select(Tensor([True, False]), size=3, fill_value=-1).dtype == dtypes.float32
    np.testing.assert_equal((Tensor(a) > 0.5).nonzero().numpy(), np.argwhere(a > 0.5))
    np.testing.assert_equal(Tensor([1, 0, 2, 0, 3]).nonzero(size=5, fill_value=-1).numpy(), [[0], [2], [4], [-1], [-1]])
    assert Tensor(5).nonzero(size=4).shape == (4, 0)
    assert Tensor([1, 0]).nonzero(size=3, fill_value=-1.5).dtype == dtypes.int32


def np_scatter(self, dim, index, src, op=None):
    out = self.copy()
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        out[tuple(tgt)] = src[pos] if op is None else op(out[tuple(tgt)], src[pos])
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter(dim):
    index = np.random.randint(0, 3, (3, 4, 5)).astype(np.int32)
    x, src = rand(4, 5, 6), rand(4, 5, 6)
    close(Tensor(x).scatter(dim, Tensor(index), Tensor(src)), np_scatter(x, dim, index, src))
    close(Tensor(x).scatter(dim=dim, index=Tensor(index), src=3), np_scatter(x, dim, index, np.full(index.shape, 3.0)))
    close(Tensor(x).scatter(dim, Tensor(index), 1.5, reduce="add"), np_scatter(x, dim, index, np.full(index.shape, 1.5), np.add))
    close(Tensor(x).scatter(dim, Tensor(index), 1.5, reduce="multiply"), np_scatter(x, dim, index, np.full(index.shape, 1.5), np.multiply))
    # repeated indices: the last write wins
    close(Tensor([1.0, 2.0, 3.0, 4.0]).scatter(0, Tensor([0, 0]), Tensor([1.0, 0.0])), [0.0, 2.0, 3.0, 4.0])


def test_scatter_reduce_and_errors():
    index = np.random.randint(0, 3, (3, 4, 5)).astype(np.int32)
    x, src = rand(3, 4, 5, lo=0.5, hi=2), rand(3, 4, 5, lo=0.5, hi=2)
    close(Tensor(x).scatter_reduce(1, Tensor(index), Tensor(src), "sum"), np_scatter(x, 1, index, src, np.add), rtol=1e-5)
    close(Tensor(x).scatter_reduce(1, Tensor(index), Tensor(src), reduce="amax"), np_scatter(x, 1, index, src, np.maximum))
    close(Tensor(x).scatter_reduce(-1, Tensor(index), Tensor(src), "prod"), np_scatter(x, -1, index, src, np.multiply), rtol=1e-5)
    with pytest.raises(TypeError):
        Tensor(x).scatter(1, Tensor(index), Tensor(src), mode="typo")
    with pytest.raises(TypeError):
        Tensor.ones(4).scatter(dim=1, index=Tensor([0]), src=Tensor.ones(4), reduce="add")
    with pytest.raises(kiln.Error, match="'INVALID'"):
        Tensor(x).scatter_reduce(0, Tensor(index), Tensor(src), reduce="INVALID")
    with pytest.raises(kiln.Error, match="dtype"):
        Tensor(x).half().scatter(1, Tensor(index), Tensor(src))
    with pytest.raises(kiln.Error, match="no larger"):
        Tensor(rand(2, 3, 10)).scatter(1, Tensor(index), Tensor(rand(10, 10, 10)))


# ---- repeat, split, unfold, meshgrid, diagonals, roll, unflatten ----

def test_repeat_and_repeat_interleave():
    a = rand(4, 6, 3)
    close(Tensor(a).repeat((2, 4, 3)), np.tile(a, (2, 4, 3)))
    close(Tensor(a).repeat(2, 4, 3, 2), np.tile(a, (2, 4, 3, 2)))
    assert Tensor(a).repeat((2, 0, 4)).shape == (8, 0, 12)
    with pytest.raises(ValueError):
        Tensor(a).repeat((2, 4))
    b = rand(3, 3)
    close(Tensor(b).repeat_interleave(6), np.repeat(b, 6))
    close(Tensor(b).repeat_interleave(2, -2), np.repeat(b, 2, axis=0))


def test_split_and_chunk():
    a = np.arange(13 * 8, dtype=np.int32).reshape(8, 13)
    parts = Tensor(a).split(5, dim=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for got, want in zip(parts, np.split(a, [5, 10], axis=1)):
        np.testing.assert_equal(got.numpy(), want)
    parts = Tensor(a).split([1, 4, 3])
    np.testing.assert_equal(parts[1].numpy(), a[1:5])
    chunks = Tensor(a).chunk(6, -1)
    assert len(chunks) == 5 and chunks[-1].shape == (8, 1)
    with pytest.raises(kiln.Error, match="sum to"):
        Tensor(a).split([1, 2])


def test_unfold():
    a = rand(3, 8)
    win = np.lib.stride_tricks.sliding_window_view(a, 3, axis=1)[:, ::2]
    close(Tensor(a).unfold(1, 3, 2), win)
    assert Tensor(a).unfold(1, 0, 8).shape == (3, 2, 0)
    with pytest.raises(kiln.Error):
        Tensor(rand(8)).unfold(0, 9, 3)
    with pytest.raises(IndexError):
        Tensor(rand(8)).unfold(1, 8, 3)
    with pytest.raises(kiln.Error, match="step"):
        Tensor(rand(8)).unfold(0, 1, -1)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    x, y, z = rand(3), rand(4), rand(2)
    got = Tensor(x).meshgrid(Tensor(y), Tensor(z), indexing=indexing)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, np.meshgrid(x, y, z, indexing=indexing)):
        close(g, w)


def test_diag_diagonal_roll_unflatten():
    v = rand(5)
    close(Tensor(v).diag(), np.diag(v))
    a = rand(2, 4, 5)
    for offset in (-2, 0, 1, 3):
        close(Tensor(a).diagonal(offset=offset, dim1=-2, dim2=-1), np.diagonal(a, offset, -2, -1))
    close(Tensor(a).diagonal(dim1=0, dim2=2), np.diagonal(a, 0, 0, 2))
    with pytest.raises(kiln.Error, match="same dimension"):
        Tensor(rand(3, 3)).diagonal(dim1=0, dim2=0)
    b = rand(2, 4, 6)
    close(Tensor(b).roll(1), np.roll(b, 1))
    close(Tensor(b).roll((1,)), np.roll(b, 1))
    close(Tensor(b).roll(shifts=(2, -3), dims=(0, 2)), np.roll(b, (2, -3), (0, 2)))
    close(Tensor(b).roll(-5, -2), np.roll(b, -5, -2))
    with pytest.raises(kiln.Error):
        Tensor(b).roll((1, 2))
    assert Tensor(rand(4, 3, 6, 6)).unflatten(-1, (3, 2, 1)).shape == (4, 3, 6, 3, 2, 1)


# ---- pad ----

@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes(mode, np_mode):
    a = rand(2, 3, 5, 5)
    close(Tensor(a).pad((1, 2, 3, 4), mode=mode), np.pad(a, ((0, 0), (0, 0), (3, 4), (1, 2)), mode=np_mode))
    close(Tensor(a).pad(((0, 0), None, (3, 4), (1, 2)), mode), np.pad(a, ((0, 0), (0, 0), (3, 4), (1, 2)), mode=np_mode))


def test_pad_constant_value_and_negative_crops():
    a = rand(3, 3, 3, 3)
    close(Tensor(a).pad((1, 2, 3, 4), value=5), np.pad(a, ((0, 0), (0, 0), (3, 4), (1, 2)), constant_values=5))
    close(Tensor(a).pad((-1, 2, -3, 4), value=-np.inf),
          np.pad(a, ((0, 0), (0, 0), (0, 4), (0, 2)), constant_values=-np.inf)[:, :, 3:, 1:])
    # reflect and replicate pad the whole input then crop; circular crops first
    b = rand(1, 1, 5, 5)
    close(Tensor(b).pad((3, -3, 0, -3), mode="reflect"), np.pad(b, ((0, 0), (0, 0), (0, 0), (3, 0)), mode="reflect")[:, :, :2, :5])
    close(Tensor(b).pad((1, -2, 2, -1), mode="circular"), np.pad(b[:, :, :4, :3], ((0, 0), (0, 0), (2, 0), (1, 0)), mode="wrap"))


def test_pad_errors():
    x = Tensor.ones(3, 3)
    with pytest.raises(ValueError):
        x.pad((2, 0, 2))
    with pytest.raises(ValueError):
        x.pad((0, 0, 0, 0, 1, 0, 3, 0))
    with pytest.raises(ValueError):
        x.pad((None, (0, 1), (3, 0)))
    with pytest.raises(ValueError):
        x.pad(((0, 1),))
    with pytest.raises(NotImplementedError):
        Tensor.ones(3, 3, 3).pad((3, 0), mode="typo")
    with pytest.raises(kiln.Error, match="smaller than"):
        Tensor(rand(1, 1, 5, 5)).pad((3, 5, 0, 0), mode="reflect")
    with pytest.raises(kiln.Error, match="more than once"):
        Tensor(rand(1, 1, 5, 5)).pad((3, 6, 0, 0), mode="circular")


# ---- interpolate ----

def np_linear(a, out, align_corners):
    # torch's positions along the last axis: align_corners o*(in-1)/(out-1), else (o+0.5)*in/out-0.5 clamped at 0
    n = a.shape[-1]
    o = np.arange(out, dtype=np.float64)
    src = o * (n - 1) / max(out - 1, 1) if align_corners else np.maximum((o + 0.5) * n / out - 0.5, 0)
    lo = np.minimum(np.floor(src).astype(int), n - 1)
    hi = np.minimum(lo + 1, n - 1)
    f = src - lo
    return a[..., lo] * (1 - f) + a[..., hi] * f


@pytest.mark.parametrize("sizes", [(52, 29), (29, 52)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_linear(sizes, align_corners):
    a = rand(2, 3, sizes[0])
    close(Tensor(a).interpolate(size=(sizes[1],), mode="linear", align_corners=align_corners),
          np_linear(a.astype(np.float64), sizes[1], align_corners), rtol=1e-5, atol=1e-5)


def test_interpolate_bilinear_is_separable():
    a = rand(2, 3, 7, 9).astype(np.float64)
    want = np.swapaxes(np_linear(np.swapaxes(np_linear(a, 5, False), -1, -2), 4, False), -1, -2)
    close(Tensor(a.astype(np.float32)).interpolate((4, 5)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest(mode):
    a = rand(2, 3, 13, 9)
    want = a
    for axis, out in ((2, 9), (3, 13)):
        n = a.shape[axis]
        o = np.arange(out, dtype=np.float32)
        idx = np.floor((o + 0.5 if mode == "nearest-exact" else o) * np.float32(n / out)).astype(int)
        want = np.take(want, np.minimum(idx, n - 1), axis=axis)
    close(Tensor(a).interpolate((9, 13), mode=mode), want)
    with pytest.raises(kiln.Error, match="align_corners"):
        Tensor(a).interpolate((9, 13), mode=mode, align_corners=True)


# ---- cat and stack (tinygrad's argument forms) ----

def test_cat_and_stack_forms():
    x, y, z = rand(5, 6, 3), rand(5, 6, 3), rand(5, 6, 3)
    for dim in range(-1, 3):
        close(Tensor.stack(Tensor(x), Tensor(y), Tensor(z), dim=dim), np.stack((x, y, z), dim))
        close(Tensor.stack((Tensor(x), Tensor(y), Tensor(z)), dim=dim), np.stack((x, y, z), dim))
        close(Tensor(x).stack(Tensor(y), dim=dim), np.stack((x, y), dim))
    for dim in range(-3, 3):
        close(Tensor(x).cat(Tensor(y), Tensor(z), dim=dim), np.concatenate((x, y, z), dim))
    close(Tensor(rand(2, 0, 3)).cat(Tensor(y[:2, :1]), dim=1), y[:2, :1])
    np.testing.assert_allclose(Tensor.stack(Tensor(3.14), Tensor(3.14)).numpy(), [3.14, 3.14], rtol=1e-6)
    with pytest.raises(IndexError):
        Tensor(3.14).cat(Tensor(3.14))
    with pytest.raises(IndexError):
        Tensor.stack(Tensor(x), dim=77)
    with pytest.raises(ValueError):
        Tensor.stack((Tensor([1, 2]), Tensor([3, 4])), Tensor([5, 6]))
