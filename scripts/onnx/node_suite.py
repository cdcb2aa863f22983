"""The node tests of the `onnx` package, run by onnx's own runner (onnx.backend.test.BackendTest)
against kiln through kiln.onnx.backend; scripts/onnx-suite.sh runs this file with pytest.

Only the node tests (the runner's OnnxBackendNodeModelTest: one model per operator case, its inputs
and outputs on disk under onnx/backend/test/data/node), and only their CPU variant: kiln has no
"CUDA" device, so the runner would only skip those."""
import onnx.backend.test

from kiln.onnx.backend import KilnBackend

_runner = onnx.backend.test.BackendTest(KilnBackend, __name__)
OnnxBackendNodeModelTest = _runner.test_cases["OnnxBackendNodeModelTest"]
for _name in [n for n in vars(OnnxBackendNodeModelTest) if n.startswith("test_") and not n.endswith("_cpu")]:
    delattr(OnnxBackendNodeModelTest, _name)
