"""kiln.onnx.backend: kiln as an onnx.backend.base.Backend, so onnx's own test runner drives it.

    import onnx.backend.test
    from kiln.onnx.backend import KilnBackend
    globals().update(onnx.backend.test.BackendTest(KilnBackend, __name__).test_cases)

(scripts/onnx-suite.sh runs the node tests of the pinned onnx wheel this way.) This module needs
the `onnx` and `numpy` packages; kiln.onnx itself needs neither.

Devices: onnx names devices "CPU" and "CUDA[:n]"; they are kiln's "cpu:n" and "cuda:n" and are
supported when kiln has that device. Any kiln device name ("opencl:0") is accepted as well.
"""
import os

import numpy as np
import onnx
import onnx.shape_inference
from onnx import helper
from onnx.backend.base import Backend, BackendRep, namedtupledict

import kiln
import kiln.onnx as konnx
from kiln import _kiln

__all__ = ["KilnBackend", "KilnRep", "prepare", "run_model", "run_node", "supports_device", "is_compatible"]

# The newest default-domain opset kiln implements (kMaxOpset in frontends/onnx/src/model.cpp):
# run_node builds its model with this opset when the caller names none and onnx knows newer ones.
NEWEST_OPSET = 23


def _invalid(msg: str) -> Exception:
    # a kiln.Error like those the C++ side raises for a bad argument (also a ValueError)
    e = _kiln.ValueError(msg)
    e.code = "invalid_argument"
    return e


def _kiln_device(device: str):
    """onnx's device name ("CPU", "CUDA:1") or a kiln one ("opencl:0") -> kiln's, or None when kiln has not that device."""
    kind, _, index = str(device).strip().partition(":")
    name = f"{kind.lower()}:{index or '0'}"
    return name if name in kiln.devices() else None


class KilnRep(BackendRep):
    """A model prepared on a device; run(inputs) -> its outputs as numpy arrays, in the graph's
    output order (a namedtuple: also indexable by output name)."""

    def __init__(self, model: konnx.Model, device: str):
        self.model = model
        self.device = device
        self._input_names = [v.name for v in model.inputs]
        self._output_names = [v.name for v in model.outputs]

    def run(self, inputs, **kwargs):
        """inputs: a list (in the order of the graph's inputs, initializers excluded), a dict by
        name, or one array for a model with one input."""
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) > len(self._input_names):
                raise _invalid(f"{self.model.name}: {len(inputs)} inputs given, the model has {len(self._input_names)} "
                               f"({', '.join(self._input_names)})")
            feeds = dict(zip(self._input_names, inputs))
        else:
            if len(self._input_names) != 1:
                raise _invalid(f"{self.model.name}: one input given, the model has {len(self._input_names)} "
                               f"({', '.join(self._input_names)}): pass a list or a dict")
            feeds = {self._input_names[0]: inputs}
        out = self.model.run(feeds, self.device, realize=True)
        return namedtupledict("Outputs", self._output_names)(*(out[n].numpy() for n in self._output_names))


class KilnBackend(Backend):
    """onnx.backend.base.Backend over kiln.onnx: prepare() reads the model with kiln (every
    operator, opset and attribute checked) and returns a KilnRep."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return _kiln_device(device) is not None

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> KilnRep:
        """model: an onnx.ModelProto, its serialized bytes or a path. kwargs: base_dir (where a
        ModelProto's or bytes' external data lies); the rest (onnx's test options) is ignored."""
        dev = _kiln_device(device)
        if dev is None:
            raise _invalid(f"device {device!r} is not one of kiln's devices {kiln.devices()}")
        base_dir = str(kwargs.get("base_dir", ""))
        if isinstance(model, onnx.ModelProto):
            # errors name the graph (onnx's runner gives each test's graph its test's name)
            m = konnx.from_bytes(model.SerializeToString(), base_dir, f"<model {model.graph.name or 'unnamed'}>")
        elif isinstance(model, (bytes, bytearray, memoryview)):
            m = konnx.from_bytes(bytes(model), base_dir)
        elif isinstance(model, (str, os.PathLike)):
            m = konnx.load(model)
        else:
            raise TypeError(f"prepare(): model must be an onnx.ModelProto, bytes or a path, got {type(model).__name__}")
        return KilnRep(m, dev)

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        """One operator on `inputs` (a list in the order of the node's non-empty inputs, or a dict
        by name): a one-node model is built and run. The outputs' types come from onnx's shape
        inference, else from outputs_info ([(numpy dtype, shape)] per output). kwargs:
        opset_version (default: the newest both onnx and kiln know)."""
        names = [n for n in node.input if n]
        if isinstance(inputs, dict):
            arrays = {n: np.asarray(inputs[n]) for n in names}
        else:
            if len(inputs) != len(names):
                raise _invalid(f"run_node(): {len(inputs)} inputs given, the {node.op_type} node has {len(names)}")
            arrays = {n: np.asarray(x) for n, x in zip(names, inputs)}
        opset = kwargs.get("opset_version") or min(onnx.defs.onnx_opset_version(), NEWEST_OPSET)
        graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                        for n, a in arrays.items()]
        outs = [n for n in node.output if n]
        graph = helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs,
                                  [onnx.ValueInfoProto(name=n) for n in outs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(model)
        typed = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)
                 if v.type.tensor_type.elem_type}
        del graph.output[:]
        for i, n in enumerate(outs):
            if n in typed:
                graph.output.append(typed[n])
            elif outputs_info is not None and i < len(outputs_info):
                dtype, shape = outputs_info[i]
                graph.output.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape))
            else:
                raise _invalid(f"run_node(): the type of output '{n}' of the {node.op_type} node is unknown "
                               "(onnx's shape inference found none): pass outputs_info")
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        return cls.prepare(model, device, **kwargs).run(arrays)


# onnx's runner also takes a module with these functions (as onnxruntime.backend is one)
is_compatible = KilnBackend.is_compatible
prepare = KilnBackend.prepare
run_model = KilnBackend.run_model
run_node = KilnBackend.run_node
supports_device = KilnBackend.supports_device
