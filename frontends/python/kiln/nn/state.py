"""kiln.nn.state: tinygrad's state-dict helpers and the safetensors format.

    get_state_dict(model) -> {"layer.weight": Tensor, ...}   (attributes, lists, tuples, dicts)
    get_parameters(model) -> [Tensor, ...]
    load_state_dict(model, state_dict, strict=True)           (assigns into the model's tensors)
    safe_save(tensors, "model.safetensors", metadata=None)    (readable by `safetensors`, torch)
    safe_load("model.safetensors") -> {"name": Tensor}

The format is read and written by kiln's C++ (kiln/safetensors.hpp); this module only walks
Python objects.
"""
from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from typing import Any

from kiln import _kiln
from kiln._kiln import Tensor

__all__ = ["get_state_dict", "get_parameters", "load_state_dict", "safe_save", "safe_load", "safe_load_metadata"]

# Tensors that belong in a state dict but are not trained (BatchNorm's running statistics): the
# optimizers skip them. By id, each with a weak reference that removes the entry when the tensor is
# freed (so no id is reused while listed, and a model's buffers are not kept alive here).
_buffers: dict[int, weakref.ref] = {}


def _mark_buffer(t: Tensor) -> Tensor:
    key = id(t)
    _buffers[key] = weakref.ref(t, lambda _, key=key: _buffers.pop(key, None))
    return t


def _is_buffer(t: Tensor) -> bool:
    ref = _buffers.get(id(t))
    return ref is not None and ref() is t


def get_state_dict(obj: Any, prefix: str = "", tensor_type: type = Tensor) -> dict[str, Tensor]:
    """The tensors reachable from obj's attributes, lists, tuples and dicts, by dotted path."""
    if isinstance(obj, tensor_type):
        return {prefix.strip("."): obj}
    if hasattr(obj, "_asdict"):  # a namedtuple
        return get_state_dict(obj._asdict(), prefix, tensor_type)
    if isinstance(obj, OrderedDict):
        return get_state_dict(dict(obj), prefix, tensor_type)
    if hasattr(obj, "__dict__"):
        return get_state_dict(obj.__dict__, prefix, tensor_type)
    state_dict: dict[str, Tensor] = {}
    if isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj):
            state_dict.update(get_state_dict(x, f"{prefix}{i}.", tensor_type))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            state_dict.update(get_state_dict(v, f"{prefix}{k}.", tensor_type))
    return state_dict


def get_parameters(obj: Any) -> list[Tensor]:
    """Every tensor of get_state_dict(obj), once each (the optimizers skip the buffers among them)."""
    seen: set[int] = set()
    out = []
    for t in get_state_dict(obj).values():
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def load_state_dict(model: Any, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = True,
                    consume: bool = False, realize: bool = True) -> list[Tensor]:
    """Assigns state_dict's tensors into model's (cast to their dtype, moved to their device).

    strict: a key of the model missing from state_dict is a KeyError (else it is skipped). A shape
    that differs is a ValueError naming the key. Returns the model's tensors that were loaded."""
    model_state = get_state_dict(model)
    loaded = []
    for k, v in model_state.items():
        if k not in state_dict:
            if not strict:
                continue
            raise KeyError(f"load_state_dict: '{k}' is not in the state dict (it has {len(state_dict)} entries); "
                           "pass strict=False to skip it")
        src = state_dict[k]
        if v.shape != src.shape:
            raise ValueError(f"Shape mismatch in layer `{k}`: Expected shape {v.shape}, but found {src.shape} in state dict.")
        v.assign(src.to(v.device))
        loaded.append(v)
        if consume:
            del state_dict[k]
    if realize and loaded:
        loaded[0].realize(*loaded[1:])
    return loaded


def safe_save(tensors: dict[str, Tensor], fn: str | os.PathLike, metadata: dict[str, Any] | None = None) -> None:
    """Writes tensors to fn in the safetensors format (metadata values are written as str)."""
    md = None if metadata is None else {str(k): str(v) for k, v in metadata.items()}
    _kiln._safetensors.save(os.fspath(fn), tensors, md)


def _read(fn: Any, device: str | None):
    if isinstance(fn, Tensor):  # the file's bytes in a uint8 tensor (tinygrad accepts that too)
        return _kiln._safetensors.deserialize(fn.numpy().tobytes(), device)
    if isinstance(fn, (bytes, bytearray, memoryview)):
        return _kiln._safetensors.deserialize(bytes(fn), device)
    return _kiln._safetensors.load(os.fspath(fn), device)


def safe_load(fn: Any, device: str | None = None) -> dict[str, Tensor]:
    """The tensors of a safetensors file (a path, its bytes, or a uint8 Tensor of them), by name."""
    tensors, _ = _read(fn, device)
    return dict(tensors)


def safe_load_metadata(fn: Any) -> dict[str, str]:
    """The "__metadata__" of a safetensors file (reads the whole file)."""
    _, metadata = _read(fn, None)
    return metadata
