#!/usr/bin/env python3
"""kiln from Python against kiln from C++, in one session (issue 45's speed targets).

  1. Eager ops: chain32 (32 elementwise ops, each its own kernel, on a cached schedule), realized
     from Python, against bench_launch's BM_RealizeCached32/cpu: the difference over 64 Python
     calls (32 `+` and 32 `contiguous`) is the Python cost of one eager op.
  2. TinyJit: a replay of the same 32-kernel chain against BM_JitReplay32/cpu (a kiln::Jit replay
     in C++): the difference is the Python overhead of one call.
  3. A 16 x 16 matmul called eagerly against BM_EagerMatmul16.
  4. kiln bench's eight workloads (the programs of ../shared/bench/tinygrad_bench.py, written in
     tinygrad's API with `from kiln import ...`), steady eager and TinyJit medians, against
     `kiln bench --json --jit` on the same device.

Usage (from the repository root, after ./dev.sh build with Python):
    PYTHONPATH=build/python build/venv/bin/python bench/python_bench.py [--build build] [--rounds 3]
Prints one line per measurement: Python, C++, the ratio and the difference. These machines are
shared and noisy: medians of --rounds interleaved rounds.
"""
import argparse, json, os, statistics, subprocess, sys, time

from kiln import Tensor, TinyJit, nn


def timeit(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(iters):
        st = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - st)
    return statistics.median(ts)


def chain32(x):
    for _ in range(32):
        x = (x + 1).contiguous()
    return x


def python_micro(iters):
    x = Tensor.ones(16).contiguous().realize()
    chain32(x).realize()
    eager = timeit(lambda: chain32(x).realize(), iters)
    jit = TinyJit(lambda x: chain32(x).realize())
    for _ in range(3):
        jit(x)
    replay = timeit(lambda: jit(x), iters)
    a, b = Tensor.ones(16, 16).contiguous().realize(), Tensor.ones(16, 16).contiguous().realize()
    (a @ b).realize()
    mm = timeit(lambda: (a @ b).realize(), iters)
    return {"BM_RealizeCached32/cpu": eager, "BM_JitReplay32/cpu": replay, "BM_EagerMatmul16": mm}


def cpp_micro(build):
    exe = os.path.join(build, "bench", "bench_launch")
    out = subprocess.run([exe, "--benchmark_filter=BM_RealizeCached32/cpu|BM_JitReplay32/cpu|BM_EagerMatmul16",
                          "--benchmark_format=json"], capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[b["time_unit"]]
        res[b["name"]] = b["real_time"] * scale
    return res


M = 1 << 20


def define(name):
    """The eight workloads of tinygrad_bench.py in tinygrad's API: inputs and the lazy program."""
    if name == "elementwise":
        return [Tensor.rand(16 * M)], lambda x: ((x + 1) * 2).relu()
    if name == "sum":
        return [Tensor.rand(16 * M)], lambda x: x.sum()
    if name.startswith("matmul"):
        n = int(name[len("matmul"):])
        return [Tensor.rand(n, n) - 0.5, Tensor.rand(n, n) - 0.5], lambda a, b: a @ b
    if name == "softmax":
        return [Tensor.randn(4096, 1024)], lambda x: x.softmax(-1)
    if name == "mlp":
        l1, l2, l3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)
        w = [l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias]

        def fn(x, w1, b1, w2, b2, w3, b3):
            h = x.linear(w1.T, b1).relu()
            h = h.linear(w2.T, b2).relu()
            return h.linear(w3.T, b3)
        return [Tensor.rand(256, 784)] + w, fn
    if name == "conv2d":
        return [Tensor.rand(8, 32, 64, 64) - 0.5, Tensor.rand(64, 32, 3, 3) - 0.5], lambda x, w: x.conv2d(w, padding=1)
    raise ValueError(name)


WORKLOADS = ["elementwise", "sum", "matmul256", "matmul512", "matmul1024", "softmax", "mlp", "conv2d"]


def python_workloads(iters):
    res = {}
    for name in WORKLOADS:
        Tensor.manual_seed(1234)
        inputs, fn = define(name)
        inputs = [t.contiguous().realize() for t in inputs]
        fn(*inputs).realize()
        eager = timeit(lambda: fn(*inputs).realize(), iters)
        jit = TinyJit(lambda *xs: fn(*xs).realize())
        for _ in range(3):
            jit(*inputs)
        res[name] = (eager, timeit(lambda: jit(*inputs), iters))
    return res


def cpp_workloads(build, iters):
    exe = os.path.join(build, "tools", "kiln", "kiln")
    out = subprocess.run([exe, "bench", "--json", "--jit", "--no-peak", "--no-check", "--first-runs", "1",
                          "--iters", str(iters)], capture_output=True, text=True, check=True).stdout
    return {w["name"]: (w["steady_ms"] * 1e-3, w["jit_ms"] * 1e-3) for w in json.loads(out)["workloads"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--skip-workloads", action="store_true")
    args = ap.parse_args()
    py_m, cpp_m, py_w, cpp_w = [], [], [], []
    for _ in range(args.rounds):  # interleaved: the machine's noise hits both sides alike
        cpp_m.append(cpp_micro(args.build))
        py_m.append(python_micro(args.iters * 10))
        if not args.skip_workloads:
            cpp_w.append(cpp_workloads(args.build, args.iters))
            py_w.append(python_workloads(args.iters))
    med = lambda rows, k: statistics.median(r[k] for r in rows)
    print(f"{'measurement':34s} {'python':>11s} {'c++':>11s} {'ratio':>6s} {'difference':>12s}")
    for k, per in (("BM_RealizeCached32/cpu", 64), ("BM_JitReplay32/cpu", 1), ("BM_EagerMatmul16", 2)):
        p, c = med(py_m, k), med(cpp_m, k)
        print(f"{k:34s} {p * 1e6:9.1f}us {c * 1e6:9.1f}us {p / c:6.2f} {(p - c) * 1e6:9.1f}us"
              f"  ({(p - c) / per * 1e6:.2f} us per Python call, {per} calls)")
    for name in ([] if args.skip_workloads else WORKLOADS):
        for i, kind in ((0, "eager"), (1, "jit")):
            p = statistics.median(r[name][i] for r in py_w)
            c = statistics.median(r[name][i] for r in cpp_w)
            print(f"{name + ' ' + kind:34s} {p * 1e3:9.3f}ms {c * 1e3:9.3f}ms {p / c:6.2f} {(p - c) * 1e6:9.1f}us")


if __name__ == "__main__":
    sys.exit(main())
