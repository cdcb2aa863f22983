"""Stand-ins for the names test_ops.py imports from tinygrad.helpers."""
import contextlib
import functools
import os
from types import SimpleNamespace


@functools.cache
def getenv(key: str, default=0):
    # tinygrad's: the variable converted to the default's type
    return type(default)(os.getenv(key, default))


DEBUG = getenv("DEBUG")
IMAGE = 0  # kiln has no image dtypes
# tinygrad's DEV (device/interface/renderer in use): kiln is none of the ones the suite special-cases
DEV = SimpleNamespace(device="KILN", interface="KILN", renderer="KILN")


@contextlib.contextmanager
def Context(**kwargs):
    # tinygrad's optimizer switches (NOOPT=1, ...) have no kiln counterpart; the test runs as is
    yield
