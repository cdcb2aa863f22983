# Tensor.__getitem__ / __setitem__ against numpy: basic indexing (ints, slices with negative steps,
# None, ...), advanced indexing (int Tensors, lists, tuples; adjacent and separated index dims),
# gradients, assignment, and the Python exception types of the errors.
import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes


def arr(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


BASIC = [
    (5,), 0, -1, slice(1, 4), slice(-6, 50), slice(None, None, 2), slice(None, None, -1), slice(8, 1, -3),
    slice(2, 5, -1), slice(50, -50, -2),
]


@pytest.mark.parametrize("key", BASIC[1:])
def test_basic_1d(key):
    a = arr(10)
    np.testing.assert_array_equal(Tensor(a)[key].numpy(), a[key])


@pytest.mark.parametrize(
    "key",
    [
        (1, slice(None), 2),
        (slice(1, 3), None, slice(None, None, -2)),
        (Ellipsis, 0),
        (0, Ellipsis, -1),
        (None, slice(0, 3), Ellipsis, 1, None),
        (slice(4, 0, -3), slice(2, 0, -1), slice(-1, -5, -2)),
        (slice(None, None, 2), slice(None, None, 3), slice(None, None, -4)),
        (slice(1, 1),),
        (),
    ],
)
def test_basic_nd(key):
    a = arr(5, 4, 6)
    np.testing.assert_array_equal(Tensor(a)[key].numpy(), a[key])


def test_scalar_tensor():
    assert Tensor(3.5)[None].shape == (1,)
    assert Tensor(3.5)[...].item() == 3.5


@pytest.mark.parametrize(
    "key",
    [
        [3, 0, -1],
        (slice(None), [[2], [0]]),
        ([1, 3], [0, -1]),
        ([[1], [3]], [0, 2, -1]),  # broadcast together
        (slice(None), [0, 2], slice(1, 3), [1, 0]),  # separated: the index dims lead
        (1, [0, 2], 0, [1, 0]),  # ints collapse first: adjacent again
        ([0, 1], None, [2, 1]),  # None separates them
        (Ellipsis, [1, 1, 0]),
        ((0, 1), slice(None, None, -1)),  # a tuple inside the key is an index array
    ],
)
def test_advanced_matches_numpy(key):
    a = arr(4, 3, 5, 2)
    # numpy places separated advanced dims first, and treats ints as advanced when mixed with
    # arrays; torch (and kiln) collapse ints first: compare with the torch rule written in numpy
    want = torch_style(a, key)
    got = Tensor(a)[tuple(Tensor(np.array(k, dtype=np.int32)) if isinstance(k, list) else k for k in key)
                    if isinstance(key, tuple) else Tensor(np.array(key, dtype=np.int32))]
    np.testing.assert_array_equal(got.numpy(), want)
    # lists and tuples directly
    np.testing.assert_array_equal(Tensor(a)[key].numpy(), want)


def torch_style(a, key):
    # apply the ints first (torch's select), then numpy's rules for the rest
    if not isinstance(key, tuple):
        return a[np.array(key)]
    key = list(key)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        n = sum(1 for k in key if k is not None and k is not Ellipsis)
        key[i:i + 1] = [slice(None)] * (a.ndim - n)
    out, rest, axis = a, [], 0
    for k in key:
        if isinstance(k, int):
            out = np.take(out, k, axis=axis)
        else:
            rest.append(np.array(k) if isinstance(k, (list, tuple)) else k)
            if k is not None:
                axis += 1
    return out[tuple(rest)]


def test_index_tensor_dtypes_and_out_of_range():
    a = arr(6)
    for dt in (dtypes.int8, dtypes.int64, dtypes.uint8):
        np.testing.assert_array_equal(Tensor(a)[Tensor([5, 0, 2], dtype=dt)].numpy(), a[[5, 0, 2]])
    # out-of-range entries of an index tensor select 0 (as gather; tinygrad)
    np.testing.assert_array_equal(Tensor(a)[Tensor([7, 1])].numpy(), [0, 1])


def test_inf_and_nan_pass_through():
    data = [np.inf, -np.inf, np.nan]
    np.testing.assert_array_equal(Tensor(data)[Tensor([2, 0, 1])].numpy(), np.array(data, dtype=np.float32)[[2, 0, 1]])


def test_gradients():
    a = np.random.randn(4, 5).astype(np.float32)
    x = Tensor(a, requires_grad=True)
    (x[::-2, 1:4][:, [0, 0, 2]] * Tensor([1.0, 2.0, 3.0])).sum().backward()
    want = np.zeros_like(a)
    for r in (3, 1):
        want[r, 1] += 1 + 2
        want[r, 3] += 3
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_setitem_basic_and_advanced():
    a = arr(4, 5)
    t = Tensor(a)
    t[1:4:2, ::-2] = Tensor([[-1.0], [-2.0]])
    a[1:4:2, ::-2] = [[-1.0], [-2.0]]
    np.testing.assert_array_equal(t.numpy(), a)
    t[-1] = 7
    a[-1] = 7
    np.testing.assert_array_equal(t.numpy(), a)
    t[[0, 2, 0], [1, -1, 1]] = Tensor([10.0, 20.0, 30.0])
    a[[0, 2, 0], [1, -1, 1]] = [10.0, 20.0, 30.0]  # the last write wins
    np.testing.assert_array_equal(t.numpy(), a)
    t[...] = [1, 2, 3, 4, 5]
    a[...] = [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(t.numpy(), a)
    i = Tensor.zeros(3, dtype=dtypes.int32)
    i[1] = 5
    np.testing.assert_array_equal(i.numpy(), [0, 5, 0])


def test_errors():
    a = Tensor.ones(4, 3)
    with pytest.raises(IndexError, match="too many"):
        a[1, 1, 1]
    with pytest.raises(IndexError, match="out of bounds"):
        a[1, 3]
    with pytest.raises(IndexError, match="out of bounds"):
        a[-5]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., ...]
    with pytest.raises(ValueError, match="step"):
        a[::0]
    with pytest.raises(TypeError, match="slice"):
        a[:Tensor([3])]
    with pytest.raises(IndexError):
        Tensor(2.0)[:]
    with pytest.raises(IndexError, match="integer"):
        a[Tensor([1.5])]
    with pytest.raises(IndexError):
        a[[1.5]]
    with pytest.raises(IndexError, match="boolean"):
        a[Tensor([True, False, True, False])]
    with pytest.raises(IndexError, match="broadcast"):
        a[Tensor([0, 1, 2]), Tensor([0, 1])]
    with pytest.raises(IndexError):
        a["x"]
    # index errors are kiln.Errors too, and a value that does not fit is not an IndexError
    with pytest.raises(kiln.Error):
        a[9]
    with pytest.raises(kiln.Error, match="broadcast"):
        a[0] = Tensor([1.0, 2.0])


def test_numpy_indices():
    a = arr(4, 5)
    t = Tensor(a)
    np.testing.assert_array_equal(t[np.int64(2)].numpy(), a[2])
    np.testing.assert_array_equal(t[np.int32(-1), np.array(3)].numpy(), a[-1, 3])
    np.testing.assert_array_equal(t[np.array([3, 0]), 1:].numpy(), a[[3, 0], 1:])
    with pytest.raises(IndexError, match="out of bounds"):
        t[np.int64(4)]
