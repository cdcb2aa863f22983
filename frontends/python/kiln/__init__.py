"""kiln: a tensor compiler in C++, with tinygrad's Tensor API.

    from kiln import Tensor, Device, dtypes
    Tensor([1, 2]).sum().item()   # 3

Every operation is kiln's C++ (the extension kiln._kiln); this package only arranges the names.
Backends are plugins found from the manifests installed beside this package (share/kiln/backends.d)
or by the usual search (KILN_BACKENDS, KILN_BACKEND_PATH, ...; see `kiln list -v`).
"""
from kiln import _kiln
from kiln._kiln import BoundVariable, DType, Error, Tensor, Variable, devices, from_dlpack

__all__ = ["Tensor", "Device", "DType", "dtypes", "devices", "Error", "from_dlpack", "TinyJit", "nn", "Variable", "BoundVariable"]


class dtypes:
    """tinygrad's dtypes: dtypes.float32, dtypes.int32, ...; aliases float, half, double, int, long."""

    bool = _kiln._dtypes.bool
    int8 = _kiln._dtypes.int8
    int16 = _kiln._dtypes.int16
    int32 = _kiln._dtypes.int32
    int64 = _kiln._dtypes.int64
    uint8 = _kiln._dtypes.uint8
    uint16 = _kiln._dtypes.uint16
    uint32 = _kiln._dtypes.uint32
    uint64 = _kiln._dtypes.uint64
    float16 = _kiln._dtypes.float16
    bfloat16 = _kiln._dtypes.bfloat16
    float32 = _kiln._dtypes.float32
    float64 = _kiln._dtypes.float64
    # tinygrad's aliases
    char, short, int, long = int8, int16, int32, int64
    uchar, ushort, uint, ulong = uint8, uint16, uint32, uint64
    half, float, double = float16, float32, float64
    default_float = float32
    default_int = int32

    @staticmethod
    def is_float(x: DType) -> "builtins.bool":  # noqa: F821
        return x.is_float()

    @staticmethod
    def is_int(x: DType) -> "builtins.bool":  # noqa: F821
        return x.is_int()

    @staticmethod
    def is_unsigned(x: DType) -> "builtins.bool":  # noqa: F821
        return x.is_unsigned()

    @staticmethod
    def from_py(x) -> DType:
        if isinstance(x, (list, tuple)):
            return max((dtypes.from_py(v) for v in x), key=_rank, default=dtypes.default_float)
        return dtypes.bool if isinstance(x, bool) else dtypes.default_int if isinstance(x, int) else dtypes.default_float

    least_upper_dtype = staticmethod(_kiln.least_upper_dtype)


def _rank(d: DType) -> int:
    return 0 if d == dtypes.bool else 1 if d.is_int() else 2


class _Device:
    """Device.DEFAULT: the device tensors are made on when none is given ("cpu:0", "opencl:0", ...).

    Read: KILN_DEVICE, the user config's default, else the best usable device. Set it to change the
    default of this process."""

    @property
    def DEFAULT(self) -> str:
        return _kiln.default_device()

    @DEFAULT.setter
    def DEFAULT(self, device: str) -> None:
        if not isinstance(device, str):
            raise TypeError(f"Device.DEFAULT must be a str such as 'cpu:0', got {type(device).__name__}")
        # canonical ("cpu" -> "cpu:0"); an unknown device raises kiln.Error here, not at first use
        _kiln._set_default_device(Tensor.empty(0, device=device).device)

    def __repr__(self) -> str:
        return f"<Device DEFAULT={self.DEFAULT!r} devices={devices()!r}>"


Device = _Device()


class _TrainMode:
    """Tensor.train(mode=True) / Tensor.test(): sets Tensor.training inside a with block (or a
    decorated function) and restores it after."""

    def __init__(self, mode: "builtins.bool" = True):  # noqa: F821
        self.mode = mode

    def __enter__(self):
        self.prev, Tensor.training = Tensor.training, self.mode

    def __exit__(self, *exc):
        Tensor.training = self.prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with _TrainMode(self.mode):
                return fn(*args, **kwargs)
        return wrapped


Tensor.train = staticmethod(lambda mode=True: _TrainMode(mode))
Tensor.test = staticmethod(lambda: _TrainMode(False))
for _cls in (Tensor, DType, Variable, BoundVariable):
    _cls.__module__ = "kiln"
del _cls  # the names users see: kiln.Tensor, not kiln._kiln.Tensor

from kiln import nn  # noqa: E402 (nn imports Tensor from here)
from kiln.engine.jit import TinyJit  # noqa: E402
