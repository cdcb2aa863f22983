import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes


def test_error_type():
    assert issubclass(kiln.Error, RuntimeError)
    with pytest.raises(kiln.Error) as e:
        Tensor([1, 2, 3]).reshape(2, 2)
    assert e.value.code == "invalid_argument" and "reshape" in str(e.value)


@pytest.mark.parametrize("data", [None, "abc", object(), {1: 2}, [1, "a"], [[1], None]])
def test_wrong_python_types(data):
    with pytest.raises(TypeError, match="Tensor"):
        Tensor(data)


@pytest.mark.parametrize("data", [[[1, 2], [3]], [1, [2]], [[1], 2], [[[1]], [2]]])
def test_ragged_lists(data):
    with pytest.raises(kiln.Error, match="ragged"):
        Tensor(data)


def test_bad_arguments():
    with pytest.raises(TypeError, match="device"):
        Tensor([1], device=3)
    with pytest.raises(TypeError, match="dtype"):
        Tensor([1], dtype=3.5)
    with pytest.raises(kiln.Error, match="dtype"):
        Tensor([1], dtype="float7")
    with pytest.raises(kiln.Error):
        Tensor([1], device="nosuchdevice:0").realize()
    with pytest.raises(TypeError):
        Tensor([1]) + "a"
    with pytest.raises(TypeError):
        "a" * Tensor([1])
    with pytest.raises(TypeError, match="shape"):
        Tensor.zeros(2, "3")
    with pytest.raises(TypeError, match="axis"):
        Tensor([1]).sum(axis="x")
    with pytest.raises(TypeError):
        bool(Tensor([1]))
    with pytest.raises(TypeError, match="requires_grad"):
        Tensor([1.0], requires_grad=1)


def test_kiln_errors_carry_messages():
    with pytest.raises(kiln.Error, match="negative"):
        Tensor.zeros(-1, 2)
    with pytest.raises(kiln.Error, match="reshape"):
        Tensor([1, 2, 3]).reshape(2, 2)
    with pytest.raises(kiln.Error):
        Tensor.ones(2, 3) @ Tensor.ones(2, 3)
    with pytest.raises(kiln.Error, match="item"):
        Tensor([1, 2]).item()
    with pytest.raises(kiln.Error):
        Tensor.ones(2, 2).sum().backward()  # nothing requires grad
    with pytest.raises(kiln.Error, match="64 bits"):
        Tensor.zeros(2**70)
    with pytest.raises(kiln.Error, match="32 bits"):
        Tensor([1]).sum(axis=2**40)
    assert Tensor([2**64 + 5, -1]).tolist() == [5, -1]  # data wraps like numpy's astype


def test_unsupported_arrays():
    with pytest.raises(TypeError):
        Tensor(np.array([1 + 2j]))
    with pytest.raises(TypeError):
        Tensor(np.array(["a", "b"]))
    assert Tensor(np.array([1, 2], dtype=np.int16)).dtype == dtypes.int16
