"""The node tests of the `onnx` package, run by onnx's own runner (onnx.backend.test.BackendTest)
against kiln through kiln.onnx.backend; scripts/onnx-suite.sh runs this file with pytest.

Only the node tests (the runner's OnnxBackendNodeModelTest: one model per operator case, its inputs
and outputs on disk under onnx/backend/test/data/node), and only their CPU variant: kiln has no
"CUDA" device, so the runner would only skip those. ONNX_SUITE_DEVICE (a kiln device name such as
"opencl:0") runs that variant on another kiln device."""
import os

import onnx.backend.test

from kiln.onnx.backend import KilnBackend

_device = os.environ.get("ONNX_SUITE_DEVICE", "")


class _Backend(KilnBackend):
    @classmethod
    def supports_device(cls, device: str) -> bool:
        return super().supports_device(_device or device)

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs):
        return super().prepare(model, _device or device, **kwargs)


_runner = onnx.backend.test.BackendTest(_Backend if _device else KilnBackend, __name__)
OnnxBackendNodeModelTest = _runner.test_cases["OnnxBackendNodeModelTest"]
for _name in [n for n in vars(OnnxBackendNodeModelTest) if n.startswith("test_") and not n.endswith("_cpu")]:
    delattr(OnnxBackendNodeModelTest, _name)
