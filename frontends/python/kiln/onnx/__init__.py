"""kiln.onnx: ONNX models on kiln (DESIGN.md §5.3; the C++ library kiln::onnx).

    import kiln.onnx
    model = kiln.onnx.load("model.onnx")       # checked at load: every operator, opset, attribute
    out = model(x=np.ones((1, 3), np.float32))  # {output name: kiln.Tensor}, lazy
    out["y"].numpy()

A model is read with ONNX's own protobuf classes and checked at load: an operator, attribute or
dtype kiln does not support is a kiln.Error naming the node, never a wrong result. run() builds the
graph from kiln Tensor ops, so it fuses, schedules and JITs like any other kiln program.

kiln.onnx.backend is an onnx.backend.base.Backend (it needs the `onnx` package; this module does
not), so onnx's own BackendTest runner drives kiln: see scripts/onnx-suite.sh.
"""
import sys

from kiln import Error, Tensor, _kiln

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
    (numpy(), tolist() or realize() them)."""

    def __init__(self, model: "_onnx.Model"):
        self._model = model
        self._declared = {v.name: v.dtype for v in model.inputs}

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
            return Tensor(x, device=device)
        # Python data has no dtype of its own: the declared one (an unknown name is left for
        # the model to report with the names it has)
        return Tensor(x, device=device, dtype=self._declared.get(name))

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


def load(path) -> Model:
    """The model in `path` (tensors stored as external data are read from files beside it)."""
    return Model(_onnx.Model.load(str(path)))


def from_bytes(data: bytes, base_dir: str = "", name: str = "") -> Model:
    """A serialized model held in memory; external data is resolved against base_dir; name stands
    for the file in error messages (default "<bytes>")."""
    return Model(_onnx.Model.from_bytes(bytes(data), str(base_dir), str(name)))
