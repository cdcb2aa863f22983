# kiln.dist in a world of one rank (no mpirun: MPI's singleton start). Each case runs in a child
# Python: MPI starts once per process and cannot start again after finalize, so the pytest process
# itself never initializes it. The mpirun runs are ctest's (tests/dist, example_python_train_mlp_dist_np2).
import os
import subprocess
import sys
import textwrap

import pytest

import kiln

try:
    import kiln.dist  # noqa: F401
except ImportError as e:
    pytest.skip(f"kiln built without MPI: {e}", allow_module_level=True)


def run(code: str) -> str:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_world_of_one():
    out = run("""
        import numpy as np
        import kiln, kiln.dist as dist
        from kiln import Tensor, dtypes
        assert not dist.initialized()
        dist.init(); dist.init()
        assert dist.initialized() and dist.rank() == 0 and dist.world_size() == 1
        x = Tensor([[1.5, -2.0], [3.0, 4.0]])
        for op in ("sum", "max", "min", "mean", dist.ReduceOp.Sum):
            np.testing.assert_array_equal(dist.all_reduce(x, op).numpy(), x.numpy())
        np.testing.assert_array_equal(dist.broadcast(Tensor([1, 2, 3], dtype=dtypes.int64)).numpy(), [1, 2, 3])
        w = Tensor.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        dist.all_reduce_grads([w])
        np.testing.assert_array_equal(w.grad.numpy(), [2, 2, 2])
        loss = (w * 3).sum()
        loss.backward()
        dist.set_bucket_bytes(64); assert dist.bucket_bytes() == 64
        dist.set_overlap(True); assert dist.overlap()
        dist.all_reduce_grads([w], also=[loss])
        np.testing.assert_array_equal(w.grad.numpy(), [5, 5, 5])
        assert loss.item() == 9
        dist.barrier()
        print(dist.describe())
        dist.finalize()
        """)
    assert "rank 0" in out and "of 1" in out


def test_errors():
    out = run("""
        import kiln, kiln.dist as dist
        from kiln import Tensor, dtypes
        try:
            dist.all_reduce(Tensor([1, 2], dtype=dtypes.int32), "mean")
        except kiln.Error as e:
            print("mean:", e.code, e)
        try:
            dist.broadcast(Tensor([1.0]), root=1)
        except kiln.Error as e:
            print("root:", e.code, e)
        for bad in (lambda: dist.all_reduce(Tensor([1.0]), "median"), lambda: dist.all_reduce([1.0])):
            try:
                bad()
            except TypeError as e:
                print("type:", e)
        """)
    assert "mean: invalid_argument" in out and "cast to a float dtype" in out
    assert "root: invalid_argument" in out and "root 1 is not a rank" in out
    assert out.count("type:") == 2
