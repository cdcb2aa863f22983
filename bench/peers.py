#!/usr/bin/env python3
"""peers.py - kiln next to numpy, torch and tinygrad on a `kiln bench` workload set, in one session.

  python bench/peers.py --kiln build/tools/kiln/kiln --set sizes            # kiln and every peer, ratios
  python bench/peers.py --kiln build/tools/kiln/kiln --set extra --rounds 2 --peers torch,tinygrad
  python bench/peers.py --set extra --peers numpy --only layernorm --check  # peers only, each checked
  python bench/peers.py --kiln build/tools/kiln/kiln --set sizes --peers torch --rounds 3 --interleave  # paired
  python bench/peers.py --kiln kiln --device cuda:0 --set default --peers torch --torch-device cuda  # on a GPU

Run it with a python that has numpy and, for those columns, torch and tinygrad (a peer whose module
is missing is left out), e.g. /tmp/peers/bin/python. Sets: default (the eight), sizes (matmul over
11 sizes), extra (workloads outside the eight): the programs, shapes and FLOP/byte counts of
bench/sets.cpp and bench/workloads.cpp, written again here for each framework.

Each round runs `kiln bench --set S --json`, then every peer in a fresh process, so drift on a
shared machine hits all alike; the best steady median over the rounds is kept. A shared machine
drifts within a round too (a set of eleven matmuls takes a minute or more, and its neighbours come
and go): --interleave runs kiln and each peer on one workload after another, the order reversed
every other round, and adds the median over rounds of kiln's time over the best peer's *in that
round* (paired: both measured within seconds of each other), the figure to quote on a noisy host. A peer's steady time
is the median of calls after 3 warm-up calls (at least 5 calls and --min-time seconds): numpy and
torch eager (torch on --threads threads, default every CPU), tinygrad replaying a TinyJit capture on
its CPU device. The table gives steady ms, kiln's rate and its % of the machine's peak (measured by
kiln bench), and kiln's time over each peer's and over the best peer's (< 1: kiln is faster), with
their geometric mean at the bottom. --check compares each peer's output with numpy's in float64.

Notes: numpy's conv is per-tap einsum (BLAS); numpy's and torch's elementwise write into a
preallocated output (no page faults, as in the shared peer scripts); torch's attention is
F.scaled_dot_product_attention and tinygrad's Tensor.scaled_dot_product_attention (what a user
would call); gelu is the tanh form everywhere (kiln's).
"""
import argparse, json, math, os, statistics, subprocess, sys, tempfile, time

M = 1 << 20
SWEEP = [127, 255, 500, 511, 999, 1000, 1001, 1023, 1024, 1536, 2048]


# ---- workloads: name -> (input shapes and kinds, program per framework, unit, amount)
# Inputs are numpy float32 arrays made once per workload (seeded); each framework converts them.
# An input spec is (shape, kind): "u" uniform [0,1), "c" uniform [-0.5,0.5), "g" uniform [0.5,1.5)
# (a gain), "n" normal, or ("s", bound) uniform [-bound, bound).

def matmul_w(n, k, m, a_t=False, b_t=False):
  # a_t: A stored k x n and read transposed; b_t: B stored m x k (as bench/sets.cpp's matmul_workload)
  fa, fb = (lambda a: a.T) if a_t else (lambda a: a), (lambda b: b.T) if b_t else (lambda b: b)
  return {"inputs": [((k, n) if a_t else (n, k), "c"), ((m, k) if b_t else (k, m), "c")], "unit": "GFLOPS",
          "amount": 2.0 * n * k * m, "fn": {
      "numpy": lambda np, a, b: fa(a) @ fb(b), "torch": lambda t, a, b: fa(a) @ fb(b), "tinygrad": lambda T, a, b: fa(a) @ fb(b)}}


def conv_w(b, c, h, w, o, k, stride=1, pad=0, groups=1):
  oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
  def np_conv(np, x, f):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    g, cg, og = groups, c // groups, o // groups
    fg = f.reshape(g, og, cg, k, k)
    out = 0
    for i in range(k):
      for j in range(k):
        tap = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride].reshape(b, g, cg, oh, ow)
        out = out + np.einsum("bgchw,goc->bgohw", tap, fg[:, :, :, i, j], optimize=True)
    return out.reshape(b, o, oh, ow)
  return {"inputs": [((b, c, h, w), "c"), ((o, c // groups, k, k), "c")], "unit": "GFLOPS",
          "amount": 2.0 * b * o * oh * ow * (c // groups) * k * k, "fn": {
              "numpy": np_conv,
              "torch": lambda t, x, f: t.nn.functional.conv2d(x, f, stride=stride, padding=pad, groups=groups),
              "tinygrad": lambda T, x, f: x.conv2d(f, stride=stride, padding=pad, groups=groups)}}


def np_softmax(np, x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def np_gelu(np, x):
  return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def default_set():
  outs = {}  # numpy and torch elementwise write one preallocated output (no fresh pages per call)
  def np_ew(np, x):
    out = outs.setdefault("numpy", np.empty_like(x))
    np.add(x, 1, out=out); np.multiply(out, 2, out=out); np.maximum(out, 0, out=out)
    return out
  def tr_ew(t, x):
    out = outs.setdefault("torch", t.empty_like(x))
    t.add(x, 1, out=out); t.mul(out, 2, out=out); t.relu_(out)
    return out
  def np_mlp(np, x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    return h @ w3.T + b3
  tr_mlp = lambda t, x, w1, b1, w2, b2, w3, b3: t.nn.functional.linear(t.relu(t.nn.functional.linear(
      t.relu(t.nn.functional.linear(x, w1, b1)), w2, b2)), w3, b3)
  tg_mlp = lambda T, x, w1, b1, w2, b2, w3, b3: x.linear(w1.T, b1).relu().linear(w2.T, b2).relu().linear(w3.T, b3)
  layer = lambda i, o: [((o, i), ("s", 1 / math.sqrt(i))), ((o,), ("s", 1 / math.sqrt(i)))]
  return {
      "elementwise": {"inputs": [((16 * M,), "u")], "unit": "GB/s", "amount": 2.0 * 16 * M * 4, "fn": {
          "numpy": np_ew, "torch": tr_ew, "tinygrad": lambda T, x: ((x + 1) * 2).relu()}},
      "sum": {"inputs": [((16 * M,), "u")], "unit": "GB/s", "amount": 16.0 * M * 4, "fn": {
          "numpy": lambda np, x: x.sum(), "torch": lambda t, x: x.sum(), "tinygrad": lambda T, x: x.sum()}},
      **{f"matmul{n}": matmul_w(n, n, n) for n in (256, 512, 1024)},
      "softmax": {"inputs": [((4096, 1024), "n")], "unit": "GB/s", "amount": 2.0 * 4096 * 1024 * 4, "fn": {
          "numpy": np_softmax, "torch": lambda t, x: x.softmax(-1), "tinygrad": lambda T, x: x.softmax(-1)}},
      "mlp": {"inputs": [((256, 784), "u")] + layer(784, 512) + layer(512, 512) + layer(512, 10), "unit": "GFLOPS",
              "amount": 2.0 * 256 * (784 * 512 + 512 * 512 + 512 * 10),
              "fn": {"numpy": np_mlp, "torch": tr_mlp, "tinygrad": tg_mlp}},
      "conv2d": conv_w(8, 32, 64, 64, 64, 3, pad=1),
  }


def extra_set():
  def np_layernorm(np, x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b
  def np_attention(np, q, k, v):
    return np_softmax(np, q @ k.swapaxes(-2, -1) / math.sqrt(q.shape[-1])) @ v
  def np_heads(x):
    return x.reshape(2, 256, 12, 64).swapaxes(1, 2)
  def np_heads_merge(x):
    return x.swapaxes(1, 2).reshape(2, 256, 768)
  H, S, D = 8, 256, 64
  T, E, F = 512, 512, 2048
  return {
      "sum_axis0": {"inputs": [((4096, 4096), "u")], "unit": "GB/s", "amount": 4096.0 * 4096 * 4, "fn": {
          "numpy": lambda np, x: x.sum(0), "torch": lambda t, x: x.sum(0), "tinygrad": lambda T, x: x.sum(0)}},
      "sum_strided": {"inputs": [((256, 256, 256), "u")], "unit": "GB/s", "amount": 256.0 ** 3 * 4, "fn": {
          "numpy": lambda np, x: x.sum(1), "torch": lambda t, x: x.sum(1), "tinygrad": lambda T, x: x.sum(1)}},
      "layernorm": {"inputs": [((4096, 1024), "n"), ((1024,), "g"), ((1024,), "c")], "unit": "GB/s",
                    "amount": 2.0 * 4096 * 1024 * 4, "fn": {
                        "numpy": np_layernorm,
                        "torch": lambda t, x, g, b: t.nn.functional.layer_norm(x, (1024,), g, b, 1e-5),
                        "tinygrad": lambda T, x, g, b: x.layernorm(eps=1e-5) * g + b}},
      "attention": {"inputs": [((1, H, S, D), "n")] * 3, "unit": "GFLOPS", "amount": 4.0 * H * S * S * D, "fn": {
          "numpy": np_attention,
          "torch": lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v),
          "tinygrad": lambda T, q, k, v: q.scaled_dot_product_attention(k, v)}},
      "attention_heads": {"inputs": [((2, 256, 768), "n")] * 3, "unit": "GFLOPS", "amount": 4.0 * 2 * 12 * 256 * 256 * 64, "fn": {
          "numpy": lambda np, q, k, v: np_heads_merge(np_attention(np, *(np_heads(x) for x in (q, k, v)))),
          "torch": lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(
              *(x.reshape(2, 256, 12, 64).transpose(1, 2) for x in (q, k, v))).transpose(1, 2).reshape(2, 256, 768),
          "tinygrad": lambda T, q, k, v: (lambda a, b, c: a.scaled_dot_product_attention(b, c))(
              *(x.reshape(2, 256, 12, 64).transpose(1, 2) for x in (q, k, v))).transpose(1, 2).reshape(2, 256, 768)}},
      "mlp_gelu": {"inputs": [((T, E), "c"), ((F, E), ("s", 1 / math.sqrt(E))), ((F,), ("s", 1 / math.sqrt(E))),
                              ((E, F), ("s", 1 / math.sqrt(F))), ((E,), ("s", 1 / math.sqrt(F)))],
                   "unit": "GFLOPS", "amount": 4.0 * T * E * F, "fn": {
                       "numpy": lambda np, x, w1, b1, w2, b2: np_gelu(np, x @ w1.T + b1) @ w2.T + b2,
                       "torch": lambda t, x, w1, b1, w2, b2: t.nn.functional.linear(
                           t.nn.functional.gelu(t.nn.functional.linear(x, w1, b1), approximate="tanh"), w2, b2),
                       "tinygrad": lambda T_, x, w1, b1, w2, b2: x.linear(w1.T, b1).gelu().linear(w2.T, b2)}},
      "conv_resnet": conv_w(1, 64, 56, 56, 64, 3, pad=1),
      "conv_depthwise": conv_w(1, 256, 56, 56, 256, 3, pad=1, groups=256),
      "conv_stride2": conv_w(1, 64, 56, 56, 128, 3, stride=2, pad=1),
      "conv_late": conv_w(1, 512, 7, 7, 512, 3, pad=1),
      "conv_pointwise": conv_w(1, 2048, 7, 7, 512, 1),
      "matmul_odd": matmul_w(1000, 999, 1001),
      "matmul_at": matmul_w(1024, 1024, 1024, a_t=True),
      "linear_64": matmul_w(64, 1024, 4096, b_t=True),
      "vecmat": {**matmul_w(1, 4096, 4096), "unit": "GB/s", "amount": 4.0 * 4096 * 4096},
      "conv5x5_b64": conv_w(64, 32, 28, 28, 64, 5, pad=2),
      "attn_scores197": {"inputs": [((4, 12, 197, 64), "n")] * 2, "unit": "GFLOPS", "amount": 2.0 * 4 * 12 * 197 * 197 * 64,
                         "fn": {"numpy": lambda np, q, k: q @ k.swapaxes(-2, -1), "torch": lambda t, q, k: q @ k.transpose(-1, -2),
                                "tinygrad": lambda T, q, k: q @ k.transpose(-1, -2)}},
      "gated_ffn": {"inputs": [((256, 768), "c")] + [((768, 2047), ("s", 1 / math.sqrt(768)))] * 2, "unit": "GFLOPS",
                    "amount": 4.0 * 256 * 768 * 2047, "fn": {
                        "numpy": lambda np, x, w1, w3: (lambda a: a / (1 + np.exp(-a)))(x @ w1) * (x @ w3),
                        "torch": lambda t, x, w1, w3: t.nn.functional.silu(x @ w1) * (x @ w3),
                        "tinygrad": lambda T_, x, w1, w3: (x @ w1).silu() * (x @ w3)}},
      "mlp_gelu128": {"inputs": [((128, 768), "c"), ((3072, 768), ("s", 1 / math.sqrt(768))), ((3072,), ("s", 1 / math.sqrt(768))),
                                 ((768, 3072), ("s", 1 / math.sqrt(3072))), ((768,), ("s", 1 / math.sqrt(3072)))],
                      "unit": "GFLOPS", "amount": 4.0 * 128 * 768 * 3072, "fn": {
                          "numpy": lambda np, x, w1, b1, w2, b2: np_gelu(np, x @ w1.T + b1) @ w2.T + b2,
                          "torch": lambda t, x, w1, b1, w2, b2: t.nn.functional.linear(
                              t.nn.functional.gelu(t.nn.functional.linear(x, w1, b1), approximate="tanh"), w2, b2),
                          "tinygrad": lambda T_, x, w1, b1, w2, b2: x.linear(w1.T, b1).gelu().linear(w2.T, b2)}},
      "skinny64_4096": matmul_w(64, 4096, 4096),
      "linear_t128_4096": matmul_w(128, 4096, 4096, b_t=True),
  }


def gpu_set():
  def bigger(w, f):  # the first input's leading axis and the amount f times the default's
    (shape, kind), rest = w["inputs"][0], w["inputs"][1:]
    return {**w, "inputs": [((shape[0] * f,) + shape[1:], kind)] + rest, "amount": w["amount"] * f}
  d, e = default_set(), extra_set()
  return {"elementwise_128M": bigger(d["elementwise"], 8), "sum_128M": bigger(d["sum"], 8),
          "softmax_32768": bigger(d["softmax"], 8), "layernorm_32768": bigger(e["layernorm"], 8),
          "matmul4096": matmul_w(4096, 4096, 4096)}


def workload_set(name):
  if name == "default": return default_set()
  if name == "gpu": return gpu_set()
  if name == "sizes": return {f"matmul{n}": matmul_w(n, n, n) for n in SWEEP}
  if name == "extra": return extra_set()
  sys.exit(f"unknown set {name!r}: default, sizes, extra or gpu")


# ---- one framework, in this process

def make_inputs(np, spec, seed):
  rng = np.random.default_rng(seed)
  out = []
  for shape, kind in spec:
    if kind == "u": a = rng.random(shape)
    elif kind == "c": a = rng.random(shape) - 0.5
    elif kind == "g": a = rng.random(shape) + 0.5
    elif kind == "n": a = rng.standard_normal(shape)
    else: a = (rng.random(shape) * 2 - 1) * kind[1]
    out.append(a.astype(np.float32))
  return out


def worker(args):
  import numpy as np
  fw = args.worker
  sync, convert, lib, out_np = (lambda: None), (lambda a: a), np, (lambda y: np.asarray(y))
  if fw == "torch":
    import torch
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    convert, lib, out_np = torch.from_numpy, torch, (lambda y: y.numpy())
    if args.torch_device != "cpu":  # a GPU: float32 as float32 (no TF32), each call waited for
      torch.backends.cuda.matmul.allow_tf32 = False
      torch.backends.cudnn.allow_tf32 = False
      dev = torch.device(args.torch_device)
      convert, sync, out_np = (lambda a: torch.from_numpy(a).to(dev)), torch.cuda.synchronize, (lambda y: y.cpu().numpy())
  elif fw == "tinygrad":
    from tinygrad import Tensor, Device, TinyJit
    dev = Device[Device.DEFAULT]  # DEV=--tinygrad-device in the environment (the driver sets it)
    sync, lib, out_np = dev.synchronize, Tensor, (lambda y: y.numpy())
    convert = lambda a: Tensor(a).contiguous().realize()
  results = {}
  if args.first_call:  # the device and the library warmed up by something else first
    out_np(lib.ones(4) + 1 if fw == "tinygrad" else convert(np.ones(4, np.float32)) + 1)
  for name, w in workload_set(args.set).items():
    if args.only and name not in args.only.split(","): continue
    arrays = make_inputs(np, w["inputs"], 1234)
    inputs = [convert(a) for a in arrays]
    fn = w["fn"][fw]
    call = lambda: fn(lib, *inputs)
    if args.first_call:  # the first eager call of this program, compiles included
      sync()
      t0 = time.perf_counter()
      y = call()
      if fw == "tinygrad": y.realize()
      sync()
      results[name] = (time.perf_counter() - t0) * 1e3
      continue
    if fw == "tinygrad":
      jitted = TinyJit(lambda *xs: fn(lib, *xs).realize())
      call = lambda: jitted(*inputs)
      for _ in range(2): call(); sync()  # eager, then the capture
    y = None
    for _ in range(3): y = call(); sync()
    if args.check:
      want = w["fn"]["numpy"](np, *[a.astype(np.float64) for a in arrays])
      got = out_np(y).astype(np.float64)
      err = float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))
      print(f"# {fw} {name}: error {err:.1e} vs numpy float64{'' if err < 1e-3 else '  MISMATCH'}", file=sys.stderr)
    times, start = [], time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < args.min_time and len(times) < 200):
      t0 = time.perf_counter()
      call(); sync()
      times.append((time.perf_counter() - t0) * 1e3)
    results[name] = statistics.median(times)
  print(json.dumps(results))


# ---- the driver: kiln and every peer, alternating, then the table

def run(cmd, env=None):
  p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
  if p.returncode != 0: sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
  if p.stderr.strip(): print(p.stderr.rstrip(), file=sys.stderr)
  return p.stdout


def kiln(args, only=None):
  only = only or args.only
  cmd = [args.kiln, "bench", "--set", args.set, "--device", args.device, "--json"]
  if only: cmd += ["--only", only]
  cmd += args.kiln_args.split()
  with tempfile.TemporaryDirectory() as cache:  # each run compiles afresh; the roofs are cached elsewhere
    doc = json.loads(run(cmd, {"KILN_CACHE_DIR": cache} if args.fresh_kiln_cache else None))
  return doc


def peer(args, fw, only=None):
  only = only or args.only
  cmd = [sys.executable, os.path.abspath(__file__), "--worker", fw, "--set", args.set, "--threads", str(args.threads),
         "--min-time", str(args.min_time), "--torch-device", args.torch_device]
  if only: cmd += ["--only", only]
  if args.check: cmd += ["--check"]
  return json.loads(run(cmd, {"DEV": args.tinygrad_device} if fw == "tinygrad" else None).strip().splitlines()[-1])


def available(fw):
  try:
    __import__(fw)
    return True
  except ImportError:
    print(f"# {fw} is not installed: left out", file=sys.stderr)
    return False


def driver(args):
  peers = [p for p in args.peers.split(",") if p and available(p)]
  names = [n for n in workload_set(args.set) if not args.only or n in args.only.split(",")]
  best, kiln_rows, peak = {}, {}, None
  rounds = {}  # (round, framework, workload) -> steady ms, for the paired ratios of --interleave

  def take_kiln(r, doc):
    nonlocal peak
    peak = doc.get("peak") or peak
    for w in doc["workloads"]:
      rounds[(r, "kiln", w["name"])] = w["steady_ms"]
      if w["steady_ms"] < best.get(("kiln", w["name"]), float("inf")):
        best[("kiln", w["name"])] = w["steady_ms"]
        kiln_rows[w["name"]] = w

  def take_peer(r, fw, res):
    for name, ms in res.items():
      rounds[(r, fw, name)] = ms
      best[(fw, name)] = min(best.get((fw, name), float("inf")), ms)

  for r in range(args.rounds):
    if args.interleave:
      for n in names:
        order = (["kiln"] if args.kiln else []) + peers
        for fw in order if r % 2 == 0 else order[::-1]:
          if fw == "kiln": take_kiln(r, kiln(args, n))
          else: take_peer(r, fw, peer(args, fw, n))
      print(f"# round {r + 1} done", file=sys.stderr)
      continue
    if args.kiln:
      take_kiln(r, kiln(args))
      print(f"# round {r + 1}: kiln done", file=sys.stderr)
    for fw in peers:
      take_peer(r, fw, peer(args, fw))
      print(f"# round {r + 1}: {fw} done", file=sys.stderr)

  def paired(n):  # median over rounds of kiln / best peer of the same round
    ratios = []
    for r in range(args.rounds):
      k, known = rounds.get((r, "kiln", n)), [rounds[(r, p, n)] for p in peers if (r, p, n) in rounds]
      if k and known: ratios.append(k / min(known))
    return statistics.median(ratios) if ratios else None
  cols = (["kiln"] if args.kiln else []) + peers
  if peak:
    print(f"# machine roofs (kiln bench): {peak['gflops']:.1f} GFLOP/s FMA, {peak['copy_gbs']:.1f} GB/s copy, "
          f"{peak['read_gbs']:.1f} GB/s read ({peak['threads']} threads)")
  head = f"{'workload':15s}" + "".join(f"{c + ' ms':>12s}" for c in cols)
  if args.kiln: head += f"{'kiln rate':>16s}{'%peak':>7s}" + "".join(f"{'k/' + p:>11s}" for p in peers) + f"{'k/best':>8s}"
  pair = args.kiln and args.interleave and peers
  if pair: head += f"{'paired':>8s}"
  print(head)
  fmt = lambda v, w, d: f"{v:{w}.{d}f}" if v is not None else f"{'-':>{w}s}"
  to_best, to_paired = [], []
  for n in names:
    row = [best.get((c, n)) for c in cols]
    line = f"{n:15s}" + "".join(fmt(v, 12, 3) for v in row)
    if args.kiln:
      k, w = row[0], kiln_rows.get(n)
      rate = f"{w['rate']:.1f} {w['unit']}" if w else "-"
      line += f"{rate:>16s}" + fmt(w and w.get("peak_pct"), 7, 0)
      line += "".join(fmt(k / v if k and v else None, 11, 2) for v in row[1:])
      known = [v for v in row[1:] if v]
      if k and known: to_best.append(k / min(known))
      line += fmt(k / min(known) if k and known else None, 8, 2)
      if pair:
        pr = paired(n)
        if pr: to_paired.append(pr)
        line += fmt(pr, 8, 2)
    print(line)
  geo = lambda v: math.exp(sum(map(math.log, v)) / len(v))
  if to_best:
    print(f"# geometric mean of kiln / best peer over {len(to_best)} workloads: {geo(to_best):.2f}")
  if to_paired:
    print(f"# geometric mean of the paired ratios (kiln / best peer within each round, median over "
          f"{args.rounds} rounds): {geo(to_paired):.2f}")


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--kiln", help="path to the kiln CLI (without it, only the peers run)")
  ap.add_argument("--set", default="extra", help="default, sizes, extra or gpu (default: extra)")
  ap.add_argument("--only", help="comma-separated workloads of the set")
  ap.add_argument("--device", default="cpu:0", help="kiln's device")
  ap.add_argument("--peers", default="numpy,torch,tinygrad")
  ap.add_argument("--rounds", type=int, default=2)
  ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch's threads (default: every CPU)")
  ap.add_argument("--min-time", type=float, default=0.3, help="seconds of timed calls per peer workload, at least")
  ap.add_argument("--tinygrad-device", default="CPU")
  ap.add_argument("--torch-device", default="cpu", help="torch's device, e.g. cuda (TF32 off)")
  ap.add_argument("--check", action="store_true", help="compare each peer's output with numpy in float64")
  ap.add_argument("--kiln-args", default="", help="more `kiln bench` options, e.g. \"--first-runs 1 --iters 5\"")
  ap.add_argument("--interleave", action="store_true",
                  help="run kiln and the peers workload by workload (order reversed every other round) and add paired ratios")
  ap.add_argument("--fresh-kiln-cache", action="store_true", help="give kiln an empty compile cache each round")
  ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one framework in this process
  ap.add_argument("--first-call", action="store_true",  # with --worker: each workload's first eager call
                  help=argparse.SUPPRESS)  # (tinygrad: run with CACHELEVEL=0 for an empty compile cache)
  args = ap.parse_args()
  if args.worker: worker(args)
  else: driver(args)


if __name__ == "__main__":
  main()
