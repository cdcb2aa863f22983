"""linspace, eye and the random creation functions (tinygrad's signatures), numpy as the oracle."""
import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes


def test_linspace_matches_numpy():
    for start, stop, steps in [(5, 10, 3), (5, 10, 1), (5, 10, 0), (-5.5, 5.5, 10), (5.5, -5.5, 10)]:
        got = Tensor.linspace(start, stop, steps)
        assert got.dtype == dtypes.float32
        np.testing.assert_allclose(got.numpy(), np.linspace(start, stop, steps, dtype=np.float32), rtol=1e-6, atol=1e-6)
    assert Tensor.linspace(5, 10, 3, dtype="int32").tolist() == [5, 7, 10]


def test_eye_matches_numpy():
    for n, m in [(10, None), (3, 5), (5, 3), (1, None), (0, None)]:
        np.testing.assert_equal(Tensor.eye(n, m).numpy(), np.eye(n, m, dtype=np.float32))
    assert Tensor.eye(2, dtype=dtypes.int32).dtype == dtypes.int32


def test_random_creation_ranges_and_seed():
    Tensor.manual_seed(3)
    a = Tensor.uniform(1000, low=2, high=3).numpy()
    assert a.dtype == np.float32 and a.min() >= 2 and a.max() < 3
    r = Tensor.randint(2, 500, low=-2, high=2)
    assert r.dtype == dtypes.int32 and r.shape == (2, 500)
    assert set(np.unique(r.numpy()).tolist()) == {-2, -1, 0, 1}
    n = Tensor.normal(20000, mean=-1, std=0.5).numpy()
    assert abs(n.mean() + 1) < 0.05 and abs(n.std() - 0.5) < 0.05
    Tensor.manual_seed(3)
    np.testing.assert_equal(Tensor.uniform(1000, low=2, high=3).numpy(), a)
    for f in (Tensor.kaiming_uniform, Tensor.kaiming_normal, Tensor.glorot_uniform, Tensor.scaled_uniform):
        assert f(8, 4).shape == (8, 4)


def test_bad_arguments():
    with pytest.raises(kiln.Error):
        Tensor.eye(-3, 3)
    with pytest.raises(kiln.Error):
        Tensor.randint(3, low=4, high=4)
    with pytest.raises(TypeError):
        Tensor.randint(3, low=0.5)
    with pytest.raises(TypeError):
        Tensor.randint(3, dtype=dtypes.float32)
    with pytest.raises(TypeError):
        Tensor.linspace(0, 1, 2.5)
    with pytest.raises(kiln.Error):
        Tensor.normal(3, std=-1)


def test_a_shape_tuple_with_more_arguments_is_a_value_error():
    for f in (Tensor.kaiming_uniform, Tensor.kaiming_normal, Tensor.zeros, Tensor.rand):
        with pytest.raises(ValueError):
            f((2, 3), 3)
    assert Tensor.zeros((2, 3)).shape == Tensor.zeros(2, 3).shape == (2, 3)
