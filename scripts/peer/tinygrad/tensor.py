"""Stand-in for tinygrad.tensor: the Tensor and the numpy dtype of a kiln dtype."""
import numpy as np

from kiln import Tensor, dtypes

__all__ = ["Tensor", "_to_np_dtype"]


def _to_np_dtype(dtype):
    # numpy has no bfloat16 (tinygrad returns None for it too)
    return None if dtype == dtypes.bfloat16 else np.dtype(dtype.name)
