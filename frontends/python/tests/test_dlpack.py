"""DLPack both ways: zero-copy on cpu when contiguous and aligned (proved by writing through one
side), one copy otherwise; numpy as the other library. Every tensor is on cpu:0 (the device whose
memory is host memory), whatever the machine's default device is."""
import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes

CPU = "cpu:0"


def aligned(n, dtype=np.float32):
    raw = np.zeros(n * np.dtype(dtype).itemsize + 64, dtype=np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + n * np.dtype(dtype).itemsize].view(dtype)


def test_export_shares_the_buffer():
    t = (Tensor.arange(12, device=CPU).reshape(3, 4) * 2).realize()
    a = np.from_dlpack(t)
    assert a.dtype == np.int32 and a.shape == (3, 4)
    np.testing.assert_equal(a, np.arange(12).reshape(3, 4) * 2)
    t.assign(Tensor.full((3, 4), 7, dtype=dtypes.int32, device=CPU)).realize()  # kiln writes, numpy sees it
    assert (a == 7).all()
    a[0, 0] = -1  # numpy writes, kiln sees it
    assert (t + 0).numpy()[0, 0] == -1
    assert t.__dlpack_device__() == (1, 0)


def test_export_of_views_and_lazy_tensors():
    t = Tensor([[1, 2], [3, 4]])
    np.testing.assert_equal(np.from_dlpack(t.T), [[1, 3], [2, 4]])
    np.testing.assert_equal(np.from_dlpack(Tensor([True, False])), [True, False])
    np.testing.assert_allclose(np.from_dlpack(Tensor.ones(3) * 0.5), [0.5, 0.5, 0.5])


def test_import_aligned_is_zero_copy():
    x = aligned(16)
    x[:] = np.arange(16)
    k = kiln.from_dlpack(x, device=CPU)
    assert k.shape == (16,) and k.dtype == dtypes.float32
    x[0] = 100  # the producer writes after the import: kiln reads its memory
    assert (k + 0).numpy()[0] == 100
    k.assign(k * 2).realize()
    assert x[1] == 2
    # Tensor(array) shares the same way
    t = Tensor(x, device=CPU)
    x[2] = -5
    assert (t + 0).numpy()[2] == -5


def test_import_copies_what_cannot_be_shared():
    y = np.arange(10, dtype=np.float32)[::2]  # strided
    np.testing.assert_equal(kiln.from_dlpack(y).numpy(), [0, 2, 4, 6, 8])
    z = aligned(8)
    z[:] = 1
    z.flags.writeable = False  # read-only: kiln must not write it, so it copies
    k = kiln.from_dlpack(z)
    np.testing.assert_equal(k.numpy(), np.ones(8))
    w = aligned(9)[1:]  # 4-byte aligned only
    w[:] = 3
    k = kiln.from_dlpack(w, device=CPU)
    w[0] = 9
    assert (k + 0).numpy()[0] == 3
    with pytest.raises(TypeError):
        kiln.from_dlpack([1, 2, 3])


def test_memory_outlives_the_producer():
    x = aligned(4)
    x[:] = 2
    k = kiln.from_dlpack(x, device=CPU)
    del x
    import gc
    gc.collect()
    np.testing.assert_equal((k * 3).numpy(), [6, 6, 6, 6])
    a = np.from_dlpack(Tensor.ones(5, device=CPU) + 1)
    gc.collect()
    np.testing.assert_equal(a, [2] * 5)
