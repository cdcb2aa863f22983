"""kiln.TinyJit: tinygrad's TinyJit over kiln's C++ Jit (kiln/jit.hpp).

    @TinyJit
    def step(x, y):
        ...
        return loss

Call 1 runs the function, call 2 runs it again and captures every kernel it runs, later calls
replay those kernels with the new input tensors, without running the Python function (so its
Python side effects, prints and host reads happen on the first two calls only). The inputs are the
Tensors among the positional arguments and the keyword arguments (in keyword-name order); other
arguments are taken as they were on the capture call. The outputs come back as the function
returned them (Tensors inside tuples, lists and dicts included); returned Tensors are replaced by
the replay's, which the next call overwrites (clone() one to keep it). Tensors the function reads
but is not given (weights) are read where they live: an optimizer's updates are seen. Random
numbers drawn inside the function (Tensor.rand, dropout) are drawn when the graph is built, so every
replay repeats the capture call's (kiln::Jit's contract; tinygrad draws anew): pass random tensors
in as inputs where that matters.

Symbolic dimensions (kiln.Variable): a BoundVariable among the arguments is re-bound on every
replay, so one capture serves every value in the variable's range: pass the whole buffer and the
bound variable, and take the symbolic view inside the function,

    @TinyJit
    def step(buf, n):
        return model(buf[:n])          # outputs whose shape uses n take each call's size

    step(buf, N.bind(5)); step(buf, N.bind(3)); ...

The kernels take the new size and outputs whose shape uses the variable take it too (also one the
function realized itself). An input may be a symbolic view itself, tinygrad's way:

    jf = TinyJit(lambda x: x * 2 + 1)
    jf(buf[:N.bind(5)]); jf(buf[:N.bind(3)]); jf(other_buf[:N.bind(7)])

its variable is re-bound and later calls take the same view of any buffer of the same size
(another view is a kiln.Error naming both). Each variable goes to kiln::Jit once, by name, in the
order met (arguments first, then the inputs' dimensions); one variable bound to two values in one
call is a kiln.Error.
"""
from __future__ import annotations

import functools
import threading
import weakref
from typing import Any, Callable

from kiln import _kiln
from kiln._kiln import BoundVariable, Error, Tensor

__all__ = ["TinyJit"]


def _flatten(obj: Any, out: list[Tensor]) -> Any:
    """obj with each Tensor replaced by its index in out (where it is appended)."""
    if isinstance(obj, Tensor):
        out.append(obj)
        return _Slot(len(out) - 1)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_flatten(x, out) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_flatten(x, out) for x in obj)
    if isinstance(obj, dict):
        return {k: _flatten(v, out) for k, v in obj.items()}
    return obj


def _unflatten(obj: Any, tensors: list[Tensor]) -> Any:
    if isinstance(obj, _Slot):
        return tensors[obj.i]
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_unflatten(x, tensors) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unflatten(x, tensors) for x in obj)
    if isinstance(obj, dict):
        return {k: _unflatten(v, tensors) for k, v in obj.items()}
    return obj


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


class _VarSlot:
    """A BoundVariable argument: the k-th variable kiln::Jit passes (re-bound on every replay)."""

    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k


def _invalid(msg: str) -> Error:
    """kiln.ValueError (a kiln.Error, code 'invalid_argument'), as kiln's C++ raises bad arguments."""
    e = _kiln.ValueError(msg)
    e.code = "invalid_argument"
    return e


def _add_var(vars: list[BoundVariable], v: BoundVariable, where: str) -> int:
    """The index of v's variable in vars (appended when new); a second value for it is an error."""
    for k, have in enumerate(vars):
        if have.name == v.name:
            if not have.same_variable(v) or have.value != v.value:
                raise _invalid(f"TinyJit: {where} binds {v!r} but this call already binds {have!r}; one variable takes "
                            "one value per call")
            return k
    vars.append(v)
    return len(vars) - 1


class TinyJit:
    def __init__(self, fxn: Callable, captured: Any = None, prune: bool = False, optimize: bool = False):
        if fxn is None:
            raise ValueError("TinyJit needs a function")
        if captured is not None:
            raise NotImplementedError("TinyJit(captured=...) is not supported by kiln: a plan is not serializable")
        self.fxn = fxn
        # the C++ Jit holds its function beyond the reach of Python's cycle collector: a weak
        # reference back, so that a TinyJit (and what its function reads) can be freed
        ref = weakref.ref(self)
        self._jit = _kiln._Jit(lambda inputs, vars: ref()._run(inputs, vars))
        self._struct: Any = None  # the output's structure, with _Slot(i) for the i-th tensor
        self._call: tuple = ()    # this call's (args, kwargs) with input slots, while fxn runs
        self.cnt = 0
        # one call at a time sets self._call and reads self._struct (the C++ Jit serialises its
        # calls too); reentrant, so that fxn calling its own TinyJit reaches kiln's recursion error
        self._lock = threading.RLock()
        functools.update_wrapper(self, fxn)

    def __get__(self, obj, objtype=None):  # a method: bind its object like a plain function
        return self if obj is None else functools.partial(self.__call__, obj)

    def reset(self) -> None:
        """Forgets the captured kernels: the next call is a first call again."""
        self._jit.reset()
        self.cnt = 0

    @property
    def captured(self) -> bool:
        return self._jit.captured

    @property
    def kernel_count(self) -> int:
        """Kernels and copies in the captured plan (0 before the capture)."""
        return self._jit.kernel_count

    def _run(self, inputs: list[Tensor], vars: list[BoundVariable]) -> list[Tensor]:
        args, kwargs = _unflatten(self._call, inputs)
        args = tuple(vars[a.k] if isinstance(a, _VarSlot) else a for a in args)
        kwargs = {k: vars[v.k] if isinstance(v, _VarSlot) else v for k, v in kwargs.items()}
        ret = self.fxn(*args, **kwargs)
        outs: list[Tensor] = []
        self._struct = _flatten(ret, outs)
        return outs

    def __call__(self, *args, **kwargs) -> Any:
        # tinygrad's inputs: the Tensors among the positional arguments, then among the keyword
        # arguments sorted by name
        inputs: list[Tensor] = []
        vars: list[BoundVariable] = []

        def slot(v: Any, where: str) -> Any:
            if isinstance(v, Tensor):
                inputs.append(v)
                return _Slot(len(inputs) - 1)
            if isinstance(v, BoundVariable):
                return _VarSlot(_add_var(vars, v, where))
            return v

        pos = [slot(a, f"argument {i}") for i, a in enumerate(args)]
        kw = {k: slot(kwargs[k], f"argument {k!r}") for k in sorted(kwargs)}
        # the variables behind the inputs' symbolic dimensions (tinygrad's jf(buf[:n])) are
        # re-bound too: kiln::Jit then keeps such an input a view of its buffer
        for i, t in enumerate(inputs):
            for d in range(t.ndim):
                if (v := t.symbolic_dim(d)) is not None:
                    _add_var(vars, v, f"input {i} (dimension {d})")
        with self._lock:
            self._call = (tuple(pos), kw)
            try:
                outs = self._jit(inputs, vars)
            finally:
                self._call = ()
            self.cnt += 1
            return _unflatten(self._struct, list(outs))
