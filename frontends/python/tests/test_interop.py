import numpy as np
import pytest

from kiln import Tensor, dtypes

NUMPY_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                np.float16, np.float32, np.float64]


@pytest.mark.parametrize("npdt", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_round_trip(npdt):
    a = (np.random.uniform(-100, 100, (3, 4))).astype(npdt)
    t = Tensor(a)
    assert t.dtype.name == np.dtype(npdt).name and t.shape == (3, 4)
    b = t.numpy()
    assert b.dtype == a.dtype
    np.testing.assert_array_equal(a, b)
    assert t.tolist() == a.tolist()


def test_float64_is_kept():
    a = np.array([1 / 3, 1e300, -2.5])
    t = Tensor(a)
    assert t.dtype == dtypes.float64
    np.testing.assert_array_equal(t.numpy(), a)
    assert (t * 3).numpy()[0] == a[0] * 3


def test_non_contiguous_and_zero_d():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(Tensor(a.T).numpy(), a.T)
    np.testing.assert_array_equal(Tensor(a[::2, ::-1]).numpy(), a[::2, ::-1])
    z = Tensor(np.array(2.5, dtype=np.float32))
    assert z.shape == () and z.item() == 2.5 and z.tolist() == 2.5


def test_numpy_view_of_results():
    t = Tensor([[1, 2], [3, 4]]).permute(1, 0)
    np.testing.assert_array_equal(t.numpy(), [[1, 3], [2, 4]])
    assert Tensor.zeros(0, 3).numpy().shape == (0, 3)


def test_half_values():
    t = Tensor([1.5, -2.0, 65504.0, 6e-8], dtype=dtypes.float16)
    assert t.tolist() == np.array([1.5, -2.0, 65504.0, 6e-8], np.float16).astype(float).tolist()
    b = Tensor([1.5, -2.0, 3.0], dtype=dtypes.bfloat16)
    assert b.tolist() == [1.5, -2.0, 3.0]
    assert (b * 2).tolist() == [3.0, -4.0, 6.0]


def test_bfloat16_numpy():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0, 3.0], dtype=ml_dtypes.bfloat16)
    t = Tensor(a)
    assert t.dtype == dtypes.bfloat16
    b = t.numpy()
    assert b.dtype == a.dtype
    np.testing.assert_array_equal(b.astype(np.float32), a.astype(np.float32))


def test_bfloat16_every_pattern_and_rounding_match_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.arange(65536, dtype=np.uint16)
    a = bits.view(ml_dtypes.bfloat16)
    back = Tensor(a).numpy()
    assert back.dtype == a.dtype
    nan = np.isnan(a.astype(np.float32))
    np.testing.assert_array_equal(back.view(np.uint16)[~nan], bits[~nan])
    assert np.isnan(back[nan].astype(np.float32)).all()
    # float32 -> bfloat16 rounds to nearest even, as ml_dtypes does (subnormals, ties, overflow)
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):  # some overflow to infinity: inputs too
        x = (rng.standard_normal(50000) * np.exp2(rng.integers(-140, 128, 50000))).astype(np.float32)
    x[:4] = [np.float32(1 + 2**-8), np.float32(1 + 3 * 2**-8), np.float32(3.3895314e38), np.float32(1e-40)]
    got = Tensor(x).cast(dtypes.bfloat16).numpy().view(np.uint16)
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_half_matmul_rounds_once():
    # products in float32 (exact for 16-bit inputs), summed there, rounded once: within one unit in
    # the last place of the float64 result rounded to the dtype
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(1)
    for dt, kdt in ((ml_dtypes.bfloat16, dtypes.bfloat16), (np.float16, dtypes.float16)):
        a = rng.uniform(-1, 1, (33, 70)).astype(dt)
        b = rng.uniform(-1, 1, (70, 17)).astype(dt)
        got = (Tensor(a) @ Tensor(b)).numpy()
        assert got.dtype == np.dtype(dt)
        want = (a.astype(np.float64) @ b.astype(np.float64)).astype(dt)
        def ordered(v):  # sign-magnitude bits -> integers in the values' order: neighbours differ by 1
            i = v.view(np.int16).astype(np.int32)
            return np.where(i < 0, -(i & 0x7FFF), i)
        assert np.abs(ordered(got) - ordered(want)).max() <= 1


def test_item_and_tolist():
    assert Tensor(7).item() == 7 and isinstance(Tensor(7).item(), int)
    assert isinstance(Tensor(True).item(), bool)
    assert Tensor([[1.5]]).item() == 1.5
    assert Tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
