# kiln.onnx: models read and run from Python. The oracle is ONNX's own node tests (Debian's
# libonnx-testdata: model.onnx with input_N.pb / output_N.pb, compared with numpy) and numpy; the
# `onnx` package is not needed (CI's venv has none): the small models the tests build themselves are
# written with the few protobuf rules ONNX files use (_pb below). Only the last tests, through
# kiln.onnx.backend, need `onnx` and are skipped without it.
import glob
import os
import struct
import threading

import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes

ko = pytest.importorskip("kiln.onnx", reason="kiln was built without ONNX (install libonnx-dev libprotobuf-dev)",
                         exc_type=ImportError)

NODE_DIR = "/usr/share/libonnx-testdata/data/node"
needs_testdata = pytest.mark.skipif(not os.path.isdir(NODE_DIR),
                                    reason=f"ONNX's node tests are not installed ({NODE_DIR}: apt install libonnx-testdata)")


# ---- a minimal protobuf writer: enough of onnx.proto for one-graph models ----

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # negative int64s are written as their two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _int(field: int, v: int) -> bytes:
    return _varint(field << 3) + _varint(v)


def _bytes(field: int, data) -> bytes:
    data = data.encode() if isinstance(data, str) else data
    return _varint(field << 3 | 2) + _varint(len(data)) + data


ONNX_TYPE = {np.float32: 1, np.uint8: 2, np.int8: 3, np.int32: 6, np.int64: 7, np.bool_: 9, np.float64: 11}


def _value_info(name, dtype, dims) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor_type = _int(1, ONNX_TYPE[dtype]) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))  # ValueInfoProto{name, TypeProto{tensor_type}}


def _node(op, inputs, outputs, **ints) -> bytes:
    attrs = b"".join(_bytes(5, _bytes(1, k) + _int(3, v) + _int(20, 2)) for k, v in ints.items())  # AttributeProto INT
    return b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs) + _bytes(4, op) + attrs


def _initializer(name, array) -> bytes:
    a = np.ascontiguousarray(array)
    return (b"".join(_int(1, d) for d in a.shape) + _int(2, ONNX_TYPE[a.dtype.type]) + _bytes(8, name) +
            _bytes(9, a.tobytes()))


def _model(nodes, inputs, outputs, initializers=(), opset=14) -> bytes:
    graph = (b"".join(_bytes(1, n) for n in nodes) + _bytes(2, "g") +
             b"".join(_bytes(5, _initializer(*i)) for i in initializers) +
             b"".join(_bytes(11, _value_info(*i)) for i in inputs) + b"".join(_bytes(12, _value_info(*o)) for o in outputs))
    return _int(1, 8) + _bytes(7, graph) + _bytes(8, _int(2, opset))  # ir_version 8, graph, opset_import


def _add_model(dtype=np.float32, dims=(2, 3)) -> bytes:
    return _model([_node("Add", ["a", "b"], ["c"])], [("a", dtype, dims), ("b", dtype, dims)], [("c", dtype, dims)])


# ---- ONNX's node tests ----

def _node_test(name):
    d = os.path.join(NODE_DIR, name)
    data = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    assert data, f"{d} has no test_data_set_*"
    ins = sorted(glob.glob(os.path.join(data[0], "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    outs = sorted(glob.glob(os.path.join(data[0], "output_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    return os.path.join(d, "model.onnx"), [ko.load_tensor(p) for p in ins], [ko.load_tensor(p).numpy() for p in outs]


@needs_testdata
@pytest.mark.parametrize("name", ["test_add", "test_add_bcast", "test_mul_example", "test_sub_uint8", "test_relu"])
def test_node_suite_models(name):
    path, ins, expected = _node_test(name)
    model = ko.load(path)
    assert len(model.inputs) == len(ins) and len(model.outputs) == len(expected)
    assert model.opset >= 1
    for v, t in zip(model.inputs, ins):
        assert v.dtype == t.dtype and [int(d) for d in v.dims] == list(t.shape)
    feeds = {v.name: t for v, t in zip(model.inputs, ins)}
    by_run = model.run(feeds)
    by_call = model(**{k: t.numpy() for k, t in feeds.items()})  # numpy feeds keep their dtype
    assert set(by_run) == set(by_call) == {v.name for v in model.outputs}
    for v, want in zip(model.outputs, expected):
        got = by_run[v.name].numpy()
        assert got.dtype == want.dtype and got.shape == want.shape and v.dtype == by_run[v.name].dtype
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-7)
        np.testing.assert_array_equal(by_call[v.name].numpy(), got)


@needs_testdata
def test_node_suite_errors():
    path, ins, _ = _node_test("test_add")
    model = ko.load(path)
    x, y = ins
    with pytest.raises(kiln.Error, match="feed 'z' is not an input of the model .*x, y") as e:
        model(x=x, y=y, z=x)
    assert e.value.code == "invalid_argument" and path in str(e.value)
    with pytest.raises(kiln.Error, match="input 'x' is declared float32, the feed is float64"):
        model(x=x.numpy().astype(np.float64), y=y)
    with pytest.raises(kiln.Error, match="input 'y' is not fed"):
        model(x=x)
    with pytest.raises(kiln.Error, match=r"input 'x' is declared \(3, 4, 5\), the feed is \(4, 5\)"):
        model(x=x.numpy()[0], y=y)
    # an operator kiln lacks (strings) is refused at load, naming the node and the operator
    with pytest.raises(kiln.Error, match="StringNormalizer") as e:
        ko.load(os.path.join(NODE_DIR, "test_strnormalizer_nostopwords_nochangecase", "model.onnx"))
    assert e.value.code == "unimplemented"


def test_missing_and_corrupt_files(tmp_path):
    missing = tmp_path / "nope.onnx"
    with pytest.raises(kiln.Error, match="nope.onnx") as e:
        ko.load(missing)
    assert e.value.code == "not_found"
    with pytest.raises(kiln.Error, match="nope.pb") as e:
        ko.load_tensor(tmp_path / "nope.pb")
    assert e.value.code == "not_found"
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xff\xff not a protobuf")
    with pytest.raises(kiln.Error, match="not an ONNX model") as e:
        ko.load(bad)
    assert e.value.code == "data_loss"
    with pytest.raises(kiln.Error, match="not an ONNX model"):
        ko.from_bytes(b"\xff\xff\xff")


# ---- models built here ----

def test_model_properties():
    m = ko.from_bytes(_model([_node("Add", ["a", "b"], ["c"])], [("a", np.float32, ("N", 3)), ("b", np.float32, (3,))],
                             [("c", np.float32, ("N", 3))], opset=13))
    assert m.opset == 13 and m.name == "<bytes>"
    assert [(v.name, v.dtype, v.dims) for v in m.inputs] == [("a", dtypes.float32, ["N", "3"]), ("b", dtypes.float32, ["3"])]
    assert [(v.name, v.dtype, v.dims) for v in m.outputs] == [("c", dtypes.float32, ["N", "3"])]
    assert "ValueInfo(name='a', dtype=dtypes.float32, dims=(N, 3))" == repr(m.inputs[0])
    assert "opset 13" in repr(m)
    # a symbolic dimension takes any size
    a, b = np.arange(12, dtype=np.float32).reshape(4, 3), np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(m(a=a, b=b)["c"].numpy(), a + b)
    ops = ko.supported_ops()
    assert "Add" in ops and ops == sorted(ops)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float64, np.bool_])
def test_numpy_feeds_keep_their_dtype(dtype):
    op = "Or" if dtype is np.bool_ else "Add"
    if op not in ko.supported_ops():
        pytest.skip(f"{op} is not implemented in this build")
    m = ko.from_bytes(_model([_node(op, ["a", "b"], ["c"])], [("a", dtype, (2, 3)), ("b", dtype, (2, 3))], [("c", dtype, (2, 3))]))
    a = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    b = (np.arange(6).reshape(2, 3) // 3).astype(dtype)
    if dtype is np.int64:
        a = a + np.int64(1) << 40  # values only int64 holds
    out = m(a=a, b=b)["c"]
    assert out.dtype == Tensor(a).dtype
    want = (a | b) if dtype is np.bool_ else (a + b)
    np.testing.assert_array_equal(out.numpy(), want)


def test_feeds_of_every_kind():
    m = ko.from_bytes(_add_model(np.int64, (3,)))
    a = np.array([1, 2, 3], np.int64)
    want = [11, 12, 13]
    assert m(a=a, b=Tensor([10, 10, 10], dtype=dtypes.int64))["c"].tolist() == want
    assert m(a=a, b=[10, 10, 10])["c"].tolist() == want  # Python data takes the declared dtype
    assert m.run({"a": a.tolist(), "b": np.full(3, 10, np.int64)})["c"].tolist() == want
    m0 = ko.from_bytes(_add_model(np.float64, ()))
    out = m0(a=np.float64(0.25), b=0.5)["c"]  # a numpy scalar keeps its dtype
    assert out.dtype == dtypes.float64 and out.item() == 0.75
    with pytest.raises(TypeError, match="feeds must be a dict"):
        m.run([a, a])
    with pytest.raises(kiln.Error, match="input 'b' is declared int64, the feed is int32"):
        m(a=a, b=np.array([1, 2, 3], np.int32))


def test_initializers_and_realize():
    w = np.array([[1.5, -2.0, 3.0]], np.float32)
    m = ko.from_bytes(_model([_node("Mul", ["x", "w"], ["y"]), _node("Relu", ["y"], ["z"])], [("x", np.float32, (2, 3))],
                             [("z", np.float32, (2, 3)), ("y", np.float32, (2, 3))], initializers=[("w", w)]))
    assert [v.name for v in m.inputs] == ["x"]  # an initializer is not an input to feed
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    out = m.run({"x": x}, realize=True)
    np.testing.assert_array_equal(out["y"].numpy(), x * w)
    np.testing.assert_array_equal(out["z"].numpy(), np.maximum(x * w, 0))
    # on a device named explicitly
    out = m.run({"x": x}, device="cpu:0")
    assert out["z"].device == "cpu:0"


def test_load_errors_name_the_node():
    with pytest.raises(kiln.Error, match=r"node 'c' \(NoSuchOp, opset 14\): operator NoSuchOp is not supported") as e:
        ko.from_bytes(_model([_node("NoSuchOp", ["a"], ["c"])], [("a", np.float32, (1,))], [("c", np.float32, (1,))]))
    assert e.value.code == "unimplemented"
    with pytest.raises(kiln.Error, match="attribute 'frobnicate' is not supported by kiln's Add"):
        ko.from_bytes(_model([_node("Add", ["a", "a"], ["c"], frobnicate=1)], [("a", np.float32, (1,))], [("c", np.float32, (1,))]))
    with pytest.raises(kiln.Error, match="imports opset 99"):
        ko.from_bytes(_model([_node("Add", ["a", "a"], ["c"])], [("a", np.float32, (1,))], [("c", np.float32, (1,))], opset=99))


def test_model_file_on_disk(tmp_path):
    p = tmp_path / "add.onnx"
    p.write_bytes(_add_model())
    m = ko.load(p)
    assert m.name == str(p)
    a = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(m(a=a, b=a)["c"].numpy(), a * 2)


def test_threads_share_a_model():
    # run() releases the GIL; one model is used from several threads at once
    m = ko.from_bytes(_add_model(np.float32, (64,)))
    errors, results = [], {}

    def work(i):
        try:
            a = np.full(64, i, np.float32)
            results[i] = m(a=a, b=a)["c"].numpy()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        np.testing.assert_array_equal(results[i], np.full(64, 2 * i, np.float32))


# ---- symbolic dimensions: one compile for every batch size ----

_W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def _mlp_model() -> bytes:
    # y = relu(x @ w), x declared (N, 3)
    return _model([_node("MatMul", ["x", "w"], ["h"]), _node("Relu", ["h"], ["y"])], [("x", np.float32, ("N", 3))],
                  [("y", np.float32, ("N", 4))], initializers=[("w", _W)])


def test_symbolic_dims_from_python():
    m = ko.from_bytes(_mlp_model(), dims={"N": (1, 8)})
    n = m.variables["N"]
    assert n == kiln.Variable("N", 1, 8)
    rng = np.random.default_rng(0)
    for v in (2, 1, 5, 8):
        x = rng.standard_normal((v, 3)).astype(np.float32)
        y = m(x=x)["y"]  # a host array: fed as the first v rows of an array of 8
        assert y.shape == (v, 4) and y.symbolic_dim(0).same_variable(n.bind(v)) and y.symbolic_dim(0).value == v
        np.testing.assert_allclose(y.numpy(), np.maximum(x @ _W, 0), rtol=1e-5, atol=1e-6)
    # a Tensor feed is taken as it is: a symbolic view given by hand
    buf_np = rng.standard_normal((8, 3)).astype(np.float32)
    buf = Tensor(buf_np).realize()
    plain = ko.from_bytes(_mlp_model())
    for v in (3, 6):
        y = plain.run({"x": buf[:n.bind(v)]})["y"]
        assert y.symbolic_dim(0).value == v
        np.testing.assert_allclose(y.numpy(), np.maximum(buf_np[:v] @ _W, 0), rtol=1e-5, atol=1e-6)
    # a Jit around run(): the buffer and the bound variable as its arguments
    step = kiln.TinyJit(lambda b, k: plain.run({"x": b[:k]})["y"])
    for v in (1, 4, 4, 7, 2):
        np.testing.assert_allclose(step(buf, n.bind(v)).numpy(), np.maximum(buf_np[:v] @ _W, 0), rtol=1e-5, atol=1e-6)
    assert step.captured
    # a model given the variable itself; fixed feeds of a model without dims still run
    assert ko.from_bytes(_mlp_model(), dims={"N": n}).variables == {"N": n}
    np.testing.assert_allclose(plain(x=buf_np[:3])["y"].numpy(), np.maximum(buf_np[:3] @ _W, 0), rtol=1e-5, atol=1e-6)


def test_symbolic_dims_errors():
    m = ko.from_bytes(_mlp_model(), dims={"N": (1, 8)})
    with pytest.raises(kiln.Error, match=r"input 'x', dimension 0 \('N'\): .*value 9 is outside its range \[1, 8\]") as e:
        m(x=np.zeros((9, 3), np.float32))
    assert e.value.code == "invalid_argument"
    with pytest.raises(kiln.Error, match="dims names 'M', which no input of <bytes> declares; its symbolic dimensions: N"):
        ko.from_bytes(_mlp_model(), dims={"M": (1, 4)})
    with pytest.raises(kiln.Error, match="name the variable as the dimension"):
        ko.from_bytes(_mlp_model(), dims={"N": kiln.Variable("K", 1, 4)})
    with pytest.raises(TypeError, match=r"must be \(min, max\) or a kiln.Variable"):
        ko.from_bytes(_mlp_model(), dims={"N": 4})
    with pytest.raises(TypeError, match="dims must be a dict"):
        ko.from_bytes(_mlp_model(), dims=[("N", 1, 4)])
    with pytest.raises(kiln.Error, match="min 4 > max 1"):
        ko.from_bytes(_mlp_model(), dims={"N": (4, 1)})
    # a symbolic feed where the model declares a fixed size (C++ Model::run's rule)
    fixed = ko.from_bytes(_add_model(np.float32, (8, 3)))
    buf = Tensor.zeros(8, 3).contiguous().realize()
    with pytest.raises(kiln.Error, match=r"input 'a' declares dimension 0 fixed \(8\), the feed's is the symbolic 'N'"):
        fixed.run({"a": buf[:kiln.Variable("N", 1, 8).bind(8)], "b": buf})


_COUNT_ONNX = """
import sys
import numpy as np
import kiln.onnx
m = kiln.onnx.load(sys.argv[1], dims={"N": (1, 32)})
for v in (4, 1, 9, 32, 2):
    print("== size", v, file=sys.stderr, flush=True)
    x = np.ones((v, 3), np.float32)
    assert m(x=x)["y"].numpy().shape == (v, 4)
print("== done", file=sys.stderr, flush=True)
"""


def test_symbolic_dims_build_kernels_once(tmp_path):
    import subprocess
    import sys

    from test_symbolic import _built_per_size

    p = tmp_path / "mlp.onnx"
    p.write_bytes(_mlp_model())
    env = dict(os.environ, KILN_DEBUG="2", KILN_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", _COUNT_ONNX, str(p)], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    built = _built_per_size(r.stderr)
    assert list(built) == [4, 1, 9, 32, 2] and built[4] >= 1, r.stderr[-3000:]
    assert all(built[v] == 0 for v in (1, 9, 32, 2)), f"kernels built per batch size: {built}"


# ---- kiln.onnx.backend: onnx's Backend interface (needs the onnx package) ----

def test_backend_prepare_and_run():
    onnx = pytest.importorskip("onnx", reason="the onnx package is not installed (scripts/onnx-suite.sh makes a venv with it)")
    from onnx import TensorProto, helper

    from kiln.onnx import backend

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3]), helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, -1.0, 2.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    assert backend.KilnBackend.supports_device("CPU")
    rep = backend.prepare(model, "CPU")
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    z, y = rep.run([x])  # in the graph's output order
    want_y = x * np.array([1.0, -1.0, 2.0], np.float32)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(z, np.maximum(want_y, 0))
    assert z.dtype == np.float32
    np.testing.assert_array_equal(rep.run({"x": x})["z"], z)
    np.testing.assert_array_equal(backend.run_model(model, x)[0], z)
    (c,) = backend.run_node(helper.make_node("Add", ["a", "b"], ["c"]), [np.arange(3, dtype=np.int64), np.array(1 << 40, np.int64)])
    assert c.dtype == np.int64 and c.tolist() == [1 << 40, (1 << 40) + 1, (1 << 40) + 2]
    with pytest.raises(kiln.Error, match="2 inputs given, the model has 1"):
        rep.run([x, x])
    bad = helper.make_model(helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["z"])], "g", graph.input, graph.output[:1]),
                            opset_imports=[helper.make_opsetid("", 14)])
    with pytest.raises(kiln.Error, match="NoSuchOp"):
        backend.prepare(bad)


def test_backend_drives_onnx_runner():
    # onnx's own BackendTest runner over the node tests kiln surely implements
    pytest.importorskip("onnx", reason="the onnx package is not installed (scripts/onnx-suite.sh makes a venv with it)")
    import unittest

    import onnx.backend.test

    from kiln.onnx.backend import KilnBackend

    runner = onnx.backend.test.BackendTest(KilnBackend, __name__)
    runner.include(r"^test_(add|add_bcast|relu)_cpu$")
    case = runner.test_cases["OnnxBackendNodeModelTest"]
    result = unittest.TextTestRunner(stream=open(os.devnull, "w")).run(unittest.defaultTestLoader.loadTestsFromTestCase(case))
    assert not result.failures and not result.errors, result.failures + result.errors
    ran = result.testsRun - len(result.skipped)
    assert ran == 3, f"{ran} node tests ran, expected test_add, test_add_bcast, test_relu"


def test_binding_argument_types():
    # the private layer kiln.onnx wraps checks its arguments too (TypeError naming them)
    m = ko.from_bytes(_add_model())._model
    with pytest.raises(TypeError, match="feeds must be a dict"):
        m.run([1, 2])
    with pytest.raises(TypeError, match="the feed 'a' must be a Tensor, got int"):
        m.run({"a": 1})
    with pytest.raises(TypeError, match="input names must be str"):
        m.run({1: Tensor([1.0])})
    with pytest.raises(TypeError, match="device must be a str"):
        m.run({}, device=3)


def test_build_without_onnx_says_so():
    # a build without ONNX's C++ package has no kiln._kiln.onnx: importing kiln.onnx says what to install
    import subprocess
    import sys
    code = "import kiln._kiln as k; del k.onnx\ntry:\n import kiln.onnx\nexcept ImportError as e:\n print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "kiln was built without ONNX support" in out and "libonnx-dev" in out
