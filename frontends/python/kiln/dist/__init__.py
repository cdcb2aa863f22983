"""kiln.dist: data-parallel training across processes and hosts over MPI (DESIGN.md §5.5; the C++
library kiln::dist; docs/dist.md). mpi4py is not needed.

    # mpirun -np 2 python train.py
    import kiln.dist as dist
    dist.init()                                  # without mpirun: a world of one rank
    loss.backward()
    dist.all_reduce_grads(params)                # each .grad becomes the mean over the ranks
    opt.step()
    total = dist.all_reduce(t, "sum")            # "sum", "max", "min", "mean" or a ReduceOp
    w = dist.broadcast(w, root=0)

Every rank calls the same collectives in the same order with the same shapes and dtypes; a rank that
disagrees, dies or stops makes the others raise kiln.Error naming it (after KILN_DIST_TIMEOUT
seconds at most, default 600), never hang.
"""
from kiln import Error, Tensor, _kiln

if not hasattr(_kiln, "dist"):
    raise ImportError(
        "kiln was built without MPI: its build found no MPI. Install libopenmpi-dev and openmpi-bin "
        "(scripts/setup-deps.sh mpi does) and rebuild kiln")

_dist = _kiln.dist
ReduceOp = _dist.ReduceOp
ReduceOp.__module__ = "kiln.dist"

__all__ = ["init", "initialized", "rank", "world_size", "barrier", "finalize", "all_reduce", "broadcast",
           "all_reduce_grads", "ReduceOp", "set_timeout", "timeout", "describe", "set_bucket_bytes", "bucket_bytes",
           "set_overlap", "overlap"]

_OPS = {"sum": ReduceOp.Sum, "max": ReduceOp.Max, "min": ReduceOp.Min, "mean": ReduceOp.Mean,
        "avg": ReduceOp.Mean}


def _op(op) -> "ReduceOp":
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.lower() in _OPS:
        return _OPS[op.lower()]
    raise TypeError(f"all_reduce(): op must be a kiln.dist.ReduceOp or one of {sorted(_OPS)}, got {op!r}")


def init() -> None:
    """Starts MPI (MPI_Init_thread) unless the program (or mpi4py) already did; idempotent."""
    _dist.init()


def initialized() -> bool:
    return _dist.initialized()


def rank() -> int:
    return _dist.rank()


def world_size() -> int:
    return _dist.world_size()


def barrier() -> None:
    _dist.barrier()


def finalize() -> None:
    """MPI_Finalize when init() started MPI; after a fault it returns without waiting for the lost rank."""
    _dist.finalize()


def all_reduce(t: Tensor, op="sum") -> Tensor:
    """op over every rank's t (same shape and dtype everywhere); the same bits on every rank."""
    if not isinstance(t, Tensor):
        raise TypeError(f"all_reduce(): t must be a kiln.Tensor, got {type(t).__name__}")
    return _dist.all_reduce(t, _op(op))


def broadcast(t: Tensor, root: int = 0) -> Tensor:
    """root's t on every rank (every rank passes a tensor of root's shape and dtype)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"broadcast(): t must be a kiln.Tensor, got {type(t).__name__}")
    return _dist.broadcast(t, int(root))


def all_reduce_grads(params, also=()) -> None:
    """Replaces each parameter's .grad by its mean over the ranks. Lazy gradients (right after
    backward()) are realized by it, their transfers overlapped with the backward pass in buckets;
    `also` (the loss) is realized in the same schedule, so that it does not run the forward pass
    again (docs/dist.md)."""
    params, also = list(params), list(also)
    for what, ts in (("params", params), ("also", also)):
        for p in ts:
            if not isinstance(p, Tensor):
                raise TypeError(f"all_reduce_grads(): {what} must hold kiln.Tensors, got {type(p).__name__}")
    _dist.all_reduce_grads(params, also)


def set_bucket_bytes(n: int) -> None:
    """all_reduce_grads's bucket size in bytes (the same on every rank; KILN_DIST_BUCKET_BYTES, 1 MiB)."""
    _dist.set_bucket_bytes(int(n))


def bucket_bytes() -> int:
    return _dist.bucket_bytes()


def set_overlap(on: bool = True) -> None:
    """Off: all_reduce_grads realizes every gradient first, then transfers (to measure the overlap)."""
    _dist.set_overlap(bool(on))


def overlap() -> bool:
    return _dist.overlap()


def set_timeout(seconds: float) -> None:
    """How long a collective waits for a missing rank, and one transfer may take (KILN_DIST_TIMEOUT)."""
    _dist.set_timeout(float(seconds))


def timeout() -> float:
    return _dist.timeout()


def describe() -> str:
    return _dist.describe()


def set_sharding_spans_ranks(on: bool = True) -> None:
    """While on, a reduction over a sharded tensor's shard axis also covers every rank's devices."""
    _dist.set_sharding_spans_ranks(bool(on))


def sharding_spans_ranks() -> bool:
    return _dist.sharding_spans_ranks()
