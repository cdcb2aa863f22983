# kiln.nn.state: state dicts and the safetensors format (checked against a plain Python reader and
# writer of the format, and against the `safetensors` package where it is installed).
import json
import struct

import numpy as np
import pytest

import kiln
from kiln import Tensor, dtypes, nn
from kiln.nn.state import get_parameters, get_state_dict, load_state_dict, safe_load, safe_load_metadata, safe_save


class Net:
    def __init__(self):
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm(2)
        self.layers = [nn.Linear(4, 3), nn.Linear(3, 2, bias=False)]


def test_state_dict_names_and_parameters():
    net = Net()
    sd = get_state_dict(net)
    assert list(sd) == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.num_batches_tracked", "bn.running_mean",
                        "bn.running_var", "layers.0.weight", "layers.0.bias", "layers.1.weight"]
    assert sd["layers.0.weight"] is net.layers[0].weight
    assert get_state_dict({"a": Tensor([1.0]), "b": (Tensor([2.0]), 3)}).keys() == {"a", "b.0"}
    assert len(get_parameters(net)) == 10


def test_load_state_dict_assigns_and_checks():
    a, b = Net(), Net()
    load_state_dict(b, get_state_dict(a))
    for k, v in get_state_dict(a).items():
        np.testing.assert_array_equal(get_state_dict(b)[k].numpy(), v.numpy(), err_msg=k)
    sd = get_state_dict(a)
    del sd["conv.bias"]
    with pytest.raises(KeyError, match="conv.bias"):
        load_state_dict(b, sd)
    load_state_dict(b, sd, strict=False)
    sd["conv.weight"] = Tensor.zeros(3, 3)
    with pytest.raises(ValueError, match="conv.weight"):
        load_state_dict(b, sd, strict=False)


def read_safetensors(raw):
    """A plain reader of the format: {name: numpy array}, metadata."""
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    codes = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8,
             "BOOL": np.bool_, "I8": np.int8}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(data[b:e], dtype=codes[v["dtype"]]).reshape(v["shape"])
    return out, header.get("__metadata__", {}), n


SAMPLES = {
    "f32": np.random.RandomState(0).randn(2, 3).astype(np.float32),
    "f16": np.array([0.5, -2, 1e4], np.float16),
    "f64": np.array([[1e-300]], np.float64),
    "i64": np.array([-1, 1 << 40], np.int64),
    "u8": np.arange(5, dtype=np.uint8),
    "b": np.array([True, False]),
    "scalar": np.array(3.5, np.float32),
    "empty": np.zeros((0, 2), np.float32),
}


def test_safe_save_writes_the_format(tmp_path):
    path = tmp_path / "t.safetensors"
    safe_save({k: Tensor(v) for k, v in SAMPLES.items()}, path, metadata={"format": "pt", "step": 3})
    got, md, n = read_safetensors(path.read_bytes())
    assert (8 + n) % 8 == 0
    assert md == {"format": "pt", "step": "3"}
    for k, v in SAMPLES.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_safe_load_reads_a_hand_written_file(tmp_path):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([7, 8], np.int32)
    header = json.dumps({"b": {"dtype": "I32", "shape": [2], "data_offsets": [24, 32]},
                         "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                         "__metadata__": {"k": "v"}}).encode()
    raw = struct.pack("<Q", len(header)) + header + a.tobytes() + b.tobytes()
    (tmp_path / "h.safetensors").write_bytes(raw)
    for src in (tmp_path / "h.safetensors", str(tmp_path / "h.safetensors"), raw, Tensor(np.frombuffer(raw, np.uint8))):
        loaded = safe_load(src)
        assert set(loaded) == {"a", "b"}
        np.testing.assert_array_equal(loaded["a"].numpy(), a)
        assert loaded["b"].dtype == dtypes.int32
        np.testing.assert_array_equal(loaded["b"].numpy(), b)
    assert safe_load_metadata(raw) == {"k": "v"}


def test_model_round_trip_and_errors(tmp_path):
    a, b = Net(), Net()
    safe_save(get_state_dict(a), tmp_path / "net.safetensors")
    load_state_dict(b, safe_load(tmp_path / "net.safetensors"))
    x = Tensor(np.random.randn(1, 1, 4, 4).astype(np.float32))
    np.testing.assert_array_equal(b.conv(x).numpy(), a.conv(x).numpy())
    assert get_state_dict(b)["bn.num_batches_tracked"].dtype == dtypes.int64
    with pytest.raises(kiln.Error, match="cannot open"):
        safe_load(tmp_path / "missing.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(kiln.Error, match="runs past the end"):
        safe_load(tmp_path / "bad.safetensors")
    with pytest.raises(TypeError):
        safe_save({"a": 1}, tmp_path / "x.safetensors")


def test_interoperates_with_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    safe_save({k: Tensor(v) for k, v in SAMPLES.items()}, tmp_path / "k.safetensors")
    got = st.load_file(str(tmp_path / "k.safetensors"))
    for k, v in SAMPLES.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)
    st.save_file({k: v for k, v in SAMPLES.items()}, str(tmp_path / "s.safetensors"), metadata={"m": "1"})
    loaded = safe_load(tmp_path / "s.safetensors")
    for k, v in SAMPLES.items():
        np.testing.assert_array_equal(loaded[k].numpy(), v, err_msg=k)
    assert safe_load_metadata(tmp_path / "s.safetensors") == {"m": "1"}
