# tinygrad's calling conventions on the existing Tensor methods (numpy as the oracle): dtype names
# and limits, the Python exception types of kiln's errors, 0-d tensors' axis 0 / -1, squeeze of a
# non-1 dimension, the *_like creators, arange's dtype, prod's dtype, casts, in-place operators,
# std_mean/var_mean and bitcast. (pad/cat/stack's forms are bind_struct's, tested with it.)
import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes


def test_dtype_aliases_and_limits():
    assert Tensor([1, 2], dtype="int").dtype == dtypes.int32
    assert Tensor([1, 2], dtype="half").dtype == dtypes.float16
    assert Tensor([1, 2]).sum(dtype="long").dtype == dtypes.int64
    with pytest.raises(AttributeError):
        Tensor([1.0, 2.0]).sum(dtype="")
    with pytest.raises(kiln.Error, match="unknown dtype"):
        Tensor([1], dtype="float7")
    assert (dtypes.int.min, dtypes.int.max) == (-(2**31), 2**31 - 1)
    assert (dtypes.uint8.min, dtypes.uint8.max) == (0, 255)
    assert (dtypes.int64.min, dtypes.uint64.max) == (-(2**63), 2**64 - 1)
    assert dtypes.float32.max == float("inf") and dtypes.float16.min == float("-inf")
    assert (dtypes.bool.min, dtypes.bool.max) == (False, True)


def test_error_types():
    # an axis out of range is an IndexError, a bad argument a ValueError; both stay kiln.Errors
    with pytest.raises(IndexError, match="axis 5"):
        Tensor.ones(2, 3).sum(5)
    with pytest.raises(kiln.Error) as e:
        Tensor.ones(2, 3).sum(5)
    assert e.value.code == "out_of_range"
    with pytest.raises(ValueError, match="negative"):
        Tensor.zeros(-3, 2)
    with pytest.raises(ValueError):
        Tensor.ones(4, 3).reshape([])
    assert issubclass(kiln._kiln.IndexError, kiln.Error) and issubclass(kiln._kiln.ValueError, RuntimeError)


def test_zero_dim_axes():
    x = Tensor(2.5)
    for ax in (0, -1):
        assert x.sum(ax).shape == () and x.sum(ax).item() == 2.5
        assert x.max(ax, keepdim=True).shape == ()
        assert x.softmax(ax).item() == 1.0
        assert x.log_softmax(ax).item() == 0.0
        assert x.squeeze(ax).shape == ()
    assert x.sum(()).item() == 2.5
    with pytest.raises(IndexError):
        x.sum(1)
    with pytest.raises(IndexError):
        x.squeeze(-2)


def test_squeeze_keeps_a_dimension_that_is_not_one():
    x = Tensor.ones(4, 3, 1, 6)
    assert x.squeeze(1).shape == (4, 3, 1, 6)
    assert x.squeeze(-2).shape == (4, 3, 6)
    assert x.squeeze().shape == (4, 3, 6)
    with pytest.raises(IndexError):
        x.squeeze(50)


def test_like_creators():
    i = Tensor([[1, 2, 3], [4, 5, 6]])
    f = Tensor.full_like(i, 4)
    assert f.dtype == dtypes.int32 and f.tolist() == [[4, 4, 4], [4, 4, 4]]
    z = i.zeros_like(dtype=dtypes.float32)
    assert z.dtype == dtypes.float32 and z.numpy().sum() == 0 and z.shape == (2, 3)
    o = Tensor.ones_like(Tensor.empty(3, dtype=dtypes.float16), requires_grad=True)
    assert o.dtype == dtypes.float16 and o.requires_grad and o.tolist() == [1, 1, 1]


def test_arange_picks_int64_for_a_large_int_range():
    assert Tensor.arange(10).dtype == dtypes.int32
    t = Tensor.arange(2**31, 2**31 + 3)
    assert t.dtype == dtypes.int64 and t.tolist() == [2**31, 2**31 + 1, 2**31 + 2]


def test_logical_not_of_numbers():
    np.testing.assert_array_equal(Tensor([1.0, 2.0, 0.0, 0.5]).logical_not().numpy(), [False, False, True, False])


def test_std_mean_and_var_mean():
    a = np.random.randn(3, 5).astype(np.float32)
    s, m = Tensor(a).std_mean(axis=1)
    np.testing.assert_allclose(s.numpy(), a.std(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(m.numpy(), a.mean(1), rtol=1e-5, atol=1e-6)
    v, m = Tensor(a).var_mean(correction=0)
    np.testing.assert_allclose(v.numpy(), a.var(), rtol=1e-5)
    np.testing.assert_allclose(m.numpy(), a.mean(), rtol=1e-5, atol=1e-6)


def test_prod_keeps_the_dtype():
    assert Tensor([1, 2, 3], dtype=dtypes.int8).prod().dtype == dtypes.int8
    assert Tensor([1.5, 2.0], dtype=dtypes.float16).prod().dtype == dtypes.float16
    assert Tensor([True, False]).prod(axis=0).dtype == dtypes.bool
    assert Tensor([1, 2, 3], dtype=dtypes.int8).prod(dtype=dtypes.int32).dtype == dtypes.int32
    assert Tensor([100, 3], dtype=dtypes.int8).prod().item() == np.int8(np.int32(300).astype(np.int8))
    assert Tensor([1, 2, 3], dtype=dtypes.int8).sum().dtype == dtypes.int32  # sum widens, as tinygrad


def test_casts_size_and_in_place_operators():
    t = Tensor([[1, 2, 3], [4, 5, 6]])
    assert t.double().dtype == dtypes.float64 and t.long().dtype == dtypes.int64 and t.short().dtype == dtypes.int16
    assert t.bfloat16().dtype == dtypes.bfloat16
    assert not t.is_floating_point() and t.float().is_floating_point()
    assert t.size() == (2, 3) and t.size(-1) == 3 and t.size(dim=0) == 2
    with pytest.raises(IndexError):
        t.size(2)
    x = Tensor([1.0, -2.0])
    y = x
    x += 1
    assert x is y and x.tolist() == [2.0, -1.0]
    x *= Tensor([2.0, 3.0])
    x -= 1
    x /= 2
    assert y.tolist() == [1.5, -2.0]
    assert abs(Tensor([-1.5, 2.0])).tolist() == [1.5, 2.0]
    # iteration walks the first axis (the sequence protocol over __getitem__)
    assert [r.tolist() for r in t] == [[1, 2, 3], [4, 5, 6]]


def test_bitcast():
    a = np.array([1.0, -2.5, 3e-3], dtype=np.float32)
    np.testing.assert_array_equal(Tensor(a).bitcast(dtypes.int32).numpy(), a.view(np.int32))
    np.testing.assert_array_equal(Tensor(a).bitcast("uint32").numpy(), a.view(np.uint32))
    with pytest.raises(ValueError, match="sizes"):
        Tensor(a).bitcast(dtypes.float16)
