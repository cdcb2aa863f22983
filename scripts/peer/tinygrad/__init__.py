"""A stand-in `tinygrad` package for running tinygrad's test/backend/test_ops.py against kiln.

scripts/peer-tests.sh puts scripts/peer/ on PYTHONPATH, so the suite's `from tinygrad import Tensor,
Device, dtypes` gets kiln's own Tensor and dtypes. Only the import is swapped, never a test: every
method the suite calls is kiln's. The few names test_ops.py imports besides those (tinygrad.helpers,
tinygrad.tensor._to_np_dtype, tinygrad.renderer.nir) are small stand-ins in this package; none of
them changes what a test computes or checks.
"""
import kiln
from kiln import Tensor, dtypes

__all__ = ["Tensor", "Device", "dtypes"]


class _Renderer:
    """What test_ops asks of Device[Device.DEFAULT].renderer: the dtypes the device runs natively."""

    def supported_dtypes(self):
        # kiln's backends run every kiln dtype (half and double included)
        return [getattr(dtypes, n) for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                             "uint64", "float16", "bfloat16", "float32", "float64")]


class _Compiled:
    def __init__(self, name: str):
        self.device = name
        self.renderer = _Renderer()


class _DeviceProxy:
    """tinygrad's Device: DEFAULT (kiln's, read and set through kiln.Device) and Device[name]."""

    @property
    def DEFAULT(self) -> str:
        return kiln.Device.DEFAULT

    @DEFAULT.setter
    def DEFAULT(self, device: str) -> None:
        kiln.Device.DEFAULT = device

    def __getitem__(self, name: str) -> _Compiled:
        return _Compiled(name)

    def __repr__(self) -> str:
        return repr(kiln.Device)


Device = _DeviceProxy()
