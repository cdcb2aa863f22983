"""kiln.onnx: ONNX models on kiln (DESIGN.md §5.3; the C++ library kiln::onnx).

    import kiln.onnx
    model = kiln.onnx.load("model.onnx")       # checked at load: every operator, opset, attribute
    out = model(x=np.ones((1, 3), np.float32))  # {output name: kiln.Tensor}, lazy
    out["y"].numpy()

    # symbolic dimensions: one compile for every batch size in [1, 32] (x declared (N, 3))
    model = kiln.onnx.load("model.onnx", dims={"N": (1, 32)})
    model(x=np.ones((5, 3), np.float32))        # kernels built once, for every N
    # the same by hand, with a kiln Tensor feed: a view of the first n rows of a buffer of 32
    N = kiln.Variable("N", 1, 32)
    model.run({"x": buf[:N.bind(5)]})

A model is read with ONNX's own protobuf classes and checked at load: an operator, attribute or
dtype kiln does not support is a kiln.Error naming the node, never a wrong result. run() builds the
graph from kiln Tensor ops, so it fuses, schedules and JITs like any other kiln program.

kiln.onnx.backend is an onnx.backend.base.Backend (it needs the `onnx` package; this module does
not), so onnx's own BackendTest runner drives kiln: see scripts/onnx-suite.sh.
"""
import sys

from kiln import Error, Tensor, Variable, _kiln

if not hasattr(_kiln, "onnx"):
    raise ImportError(
        "kiln was built without ONNX support: its build found no ONNX C++ package. Install libonnx-dev and "
        "libprotobuf-dev (scripts/setup-deps.sh does) and rebuild kiln")

_onnx = _kiln.onnx
ValueInfo = _onnx.ValueInfo
ValueInfo.__module__ = "kiln.onnx"

__all__ = ["load", "from_bytes", "load_tensor", "supported_ops", "Model", "ValueInfo"]


def load_tensor(path, device=None) -> Tensor:
    """An ONNX TensorProto file (the node tests' input_N.pb / output_N.pb) as a realized Tensor."""
    return _onnx.load_tensor(str(path), device)


def supported_ops() -> list:
    """The ONNX operators (default domain) kiln implements, sorted."""
    return _onnx.supported_ops()


def _is_host_array(x) -> bool:
    # numpy arrays, numpy scalars and anything else that hands over its memory with its dtype;
    # numpy is only looked at when the caller has imported it (kiln does not need numpy)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, (np.ndarray, np.generic)):
        return True
    return hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__")


class Model:
    """An ONNX model on kiln: `model(**feeds)` or `model.run(feeds)` -> {output name: Tensor}.

    A feed is a kiln Tensor, a host array (numpy, anything with __dlpack__ or __array_interface__:
    its dtype is kept, int64 included, and must be the one the model declares) or Python data
    (a scalar or nested lists: made a Tensor of the declared dtype). The outputs are lazy Tensors
    (numpy(), tolist() or realize() them).

    `dims` (load's argument) makes named dimensions symbolic: a host-array feed whose declared
    dimension is one of them is copied into a zeroed array of the variable's max along it, and fed
    as the view of its first rows (Tensor.shrink with the bound variable), so every size in the
    range runs the same kernels (docs/onnx.md, "Symbolic dimensions"). A Tensor feed is passed as
    it is: give `buf[:N.bind(n)]` yourself for a symbolic one."""

    def __init__(self, model: "_onnx.Model", dims: dict = None):
        self._model = model
        self._declared = {v.name: v.dtype for v in model.inputs}
        self._dims_of = {v.name: list(v.dims) for v in model.inputs}
        self._vars = _variables(dims, model)

    @property
    def variables(self) -> dict:
        """The symbolic dimensions given at load: {dimension name: kiln.Variable}."""
        return dict(self._vars)

    @property
    def inputs(self) -> list:
        """The graph inputs to feed (initializers excluded): ValueInfo(name, dtype, dims)."""
        return self._model.inputs

    @property
    def outputs(self) -> list:
        return self._model.outputs

    @property
    def opset(self) -> int:
        """The version of the default ONNX domain the model imports."""
        return self._model.opset

    @property
    def name(self) -> str:
        """The model's file (or "<bytes>"), as kiln's messages name it."""
        return self._model.name

    def _tensor(self, name: str, x, device) -> Tensor:
        if isinstance(x, Tensor):
            return x
        if _is_host_array(x):
            np = sys.modules.get("numpy")
            if np is not None and isinstance(x, np.generic):
                x = np.asarray(x)  # a numpy scalar keeps its dtype (Tensor(np.float64(1)) would not)
            axes = [(a, self._vars[d]) for a, d in enumerate(self._dims_of.get(name, ())) if d in self._vars]
            if axes:
                return self._symbolic(name, x, axes, device)
            return Tensor(x, device=device)
        # Python data has no dtype of its own: the declared one (an unknown name is left for
        # the model to report with the names it has)
        return Tensor(x, device=device, dtype=self._declared.get(name))

    def _symbolic(self, name: str, x, axes: list, device) -> Tensor:
        import numpy as np  # only here: a symbolic feed is laid out in a larger host array

        a = np.asarray(x)
        if a.ndim != len(self._dims_of[name]):
            return Tensor(a, device=device)  # the model names the rank mismatch
        full = list(a.shape)
        bound = []
        for axis, var in axes:
            try:
                bound.append((axis, var.bind(a.shape[axis])))
            except Error as e:
                err = type(e)(f"run(): input '{name}', dimension {axis} ('{var.name}'): {e}")
                err.code = getattr(e, "code", "invalid_argument")
                raise err from None
            full[axis] = var.max
        buf = np.zeros(full, a.dtype)
        buf[tuple(slice(0, n) for n in a.shape)] = a
        ends = dict(bound)
        return Tensor(buf, device=device).shrink(tuple((0, ends[i]) if i in ends else None for i in range(a.ndim)))

    def run(self, feeds: dict, device: str = None, realize: bool = False) -> dict:
        """Runs the model on `device` (None: Device.DEFAULT) -> {output name: Tensor}, lazy unless
        realize=True (then every output is realized in one schedule, shared work done once)."""
        if not isinstance(feeds, dict):
            raise TypeError(f"run(): feeds must be a dict of input name to array or Tensor, got {type(feeds).__name__}")
        return self._model.run({k: self._tensor(k, v, device) for k, v in feeds.items()}, device, realize)

    def __call__(self, **feeds) -> dict:
        return self.run(feeds)

    def __repr__(self) -> str:
        return repr(self._model)


def _invalid(msg: str) -> Error:
    """kiln.ValueError (a kiln.Error, code 'invalid_argument'), as kiln's C++ raises bad arguments."""
    e = _kiln.ValueError(msg)
    e.code = "invalid_argument"
    return e


def _variables(dims, model) -> dict:
    """dims ({name: (min, max) or kiln.Variable}) as {name: Variable}, each name one the model's
    inputs declare."""
    if dims is None:
        return {}
    if not isinstance(dims, dict):
        raise TypeError(f"load(): dims must be a dict of dimension name to (min, max) or kiln.Variable, got {type(dims).__name__}")
    declared = sorted({d for v in model.inputs for d in v.dims if not d.isdigit() and d != "?"})
    out = {}
    for k, v in dims.items():
        if k not in declared:
            raise _invalid(f"load(): dims names '{k}', which no input of {model.name} declares; its symbolic dimensions: "
                        f"{', '.join(declared) if declared else '(none)'}")
        if isinstance(v, Variable):
            if v.name != k:
                raise _invalid(f"load(): dims['{k}'] is {v!r}; name the variable as the dimension ('{k}')")
            out[k] = v
        elif isinstance(v, (tuple, list)) and len(v) == 2:
            out[k] = Variable(k, *v)
        else:
            raise TypeError(f"load(): dims['{k}'] must be (min, max) or a kiln.Variable, got {v!r}")
    return out


def load(path, dims: dict = None) -> Model:
    """The model in `path` (tensors stored as external data are read from files beside it).

    dims: {dimension name: (min, max) or kiln.Variable} - those declared dimensions of the inputs
    become symbolic for host-array feeds: one compile for every size in the range (see Model)."""
    model = _onnx.Model.load(str(path))
    return Model(model, dims)


def from_bytes(data: bytes, base_dir: str = "", name: str = "", dims: dict = None) -> Model:
    """A serialized model held in memory; external data is resolved against base_dir; name stands
    for the file in error messages (default "<bytes>"); dims as load's."""
    return Model(_onnx.Model.from_bytes(bytes(data), str(base_dir), str(name)), dims)
