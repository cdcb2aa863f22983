import numpy as np
import pytest

import kiln
from kiln import Device, Tensor, dtypes


def test_one_liner():
    assert Tensor([1, 2]).sum().item() == 3


@pytest.mark.parametrize("data,dtype,shape", [
    (3, dtypes.int32, ()), (3.5, dtypes.float32, ()), (True, dtypes.bool, ()),
    ([1, 2, 3], dtypes.int32, (3,)), ([1, 2.5], dtypes.float32, (2,)), ([True, False], dtypes.bool, (2,)),
    ([[1, 2], [3, 4]], dtypes.int32, (2, 2)), (((1.0,), (2.0,)), dtypes.float32, (2, 1)),
    ([], dtypes.float32, (0,)), ([True, 2], dtypes.int32, (2,)),
])
def test_from_python(data, dtype, shape):
    t = Tensor(data)
    assert t.dtype == dtype and t.shape == shape and t.ndim == len(shape)
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=t.numpy().dtype).reshape(shape))
    assert t.numel() == int(np.prod(shape))


def test_dtype_keyword():
    assert Tensor([1, 2], dtype=dtypes.float16).numpy().dtype == np.float16
    assert Tensor([1, 2], dtype="int64").dtype == dtypes.int64
    assert Tensor(2**40, dtype=dtypes.int64).item() == 2**40
    assert Tensor([1.7, -1.7], dtype=dtypes.int32).tolist() == [1, -1]
    assert Tensor([0.1], dtype=dtypes.float64).item() == 0.1  # no float32 rounding on the way
    assert Tensor(np.array([1.5, 2.5]), dtype=dtypes.float32).dtype == dtypes.float32


def test_creation_functions():
    assert Tensor.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert Tensor.ones((2,)).dtype == dtypes.float32
    assert Tensor.ones(2, dtype=dtypes.int32).tolist() == [1, 1]
    assert Tensor.empty(4, 5).shape == (4, 5)
    assert Tensor.full((2, 2), 3).dtype == dtypes.int32 and Tensor.full((2, 2), 3).tolist() == [[3, 3], [3, 3]]
    assert Tensor.full((2,), 1.5).dtype == dtypes.float32
    assert Tensor.full((2,), True).dtype == dtypes.bool
    assert Tensor.arange(5).tolist() == [0, 1, 2, 3, 4] and Tensor.arange(5).dtype == dtypes.int32
    assert Tensor.arange(1, 7, 2).tolist() == [1, 3, 5]
    np.testing.assert_allclose(Tensor.arange(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75])
    assert Tensor.arange(0, 1, 0.25).dtype == dtypes.float32


def test_random():
    Tensor.manual_seed(7)
    a = Tensor.rand(1000).numpy()
    Tensor.manual_seed(7)
    b = Tensor.rand(1000).numpy()
    np.testing.assert_array_equal(a, b)
    assert 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    n = Tensor.randn(20000).numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    assert Tensor.randn(2, 3, dtype=dtypes.float16).dtype == dtypes.float16


def test_properties_and_devices():
    t = Tensor([[1, 2, 3]])
    assert t.shape == (1, 3) and len(t) == 1 and t.element_size() == 4 and t.nbytes() == 12
    assert Device.DEFAULT in kiln.devices()
    assert t.device == Device.DEFAULT
    for d in kiln.devices():
        moved = t.to(d)
        assert moved.device == d and moved.to(Device.DEFAULT).tolist() == [[1, 2, 3]]
    assert Tensor([1], device="cpu").device == "cpu:0"
    assert repr(dtypes.float32) == "dtypes.float32" and dtypes.float == dtypes.float32


def test_default_device_can_be_set():
    old = Device.DEFAULT
    try:
        Device.DEFAULT = kiln.devices()[-1]
        assert Tensor([1]).device == kiln.devices()[-1]
    finally:
        Device.DEFAULT = old
    assert Tensor([1]).device == old


def test_realize_contiguous_clone_detach():
    t = Tensor([1.0, 2.0]) * 2
    assert t.realize() is t
    c = t.clone()
    assert c.tolist() == [2.0, 4.0] and c is not t
    assert t.reshape(2, 1).contiguous().shape == (2, 1)
    assert t.detach().tolist() == [2.0, 4.0]
