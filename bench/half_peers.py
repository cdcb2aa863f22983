#!/usr/bin/env python3
"""kiln's float16/bfloat16 workloads beside torch's, in alternating rounds of one session.

For each workload kiln runs `kiln bench --dtype D --json` (the workload in float32 and in D, the
same process) and torch runs the same shapes in float32 and in D (bfloat16 via torch.matmul on
bfloat16 tensors, as a user would), with torch.set_num_threads(--threads). Printed per workload:
the steady medians, each framework's D-over-float32 throughput ratio (above 1: D is faster), and
kiln's time over torch's in D (below 1: kiln is faster). Rounds alternate kiln and torch so a
neighbouring job slows both; the table takes the median over rounds.

  python3 bench/half_peers.py --kiln build/tools/kiln/kiln --dtype bfloat16 --rounds 3

Workloads (shapes as `kiln bench`): elementwise ((x + 1) * 2).relu() over 16M, sum over 16M,
softmax over the rows of 4096x1024, layernorm of 4096x1024 times a gain plus a bias, matmul 512 and
1024. Needs torch (pip install torch).
"""
import argparse, json, os, statistics, subprocess, sys, time

M = 1 << 20
WORKLOADS = ["elementwise", "sum", "softmax", "layernorm", "matmul512", "matmul1024"]


def torch_fns(torch, dtype, seed=0):
  g = torch.Generator().manual_seed(seed)
  x16m = torch.rand(16 * M, generator=g).to(dtype)
  rows = torch.randn(4096, 1024, generator=g).to(dtype)
  gain, bias = torch.rand(1024, generator=g).to(dtype), torch.rand(1024, generator=g).to(dtype)
  mats = {n: (torch.rand(n, n, generator=g).to(dtype), torch.rand(n, n, generator=g).to(dtype)) for n in (512, 1024)}
  return {
      "elementwise": lambda: torch.relu((x16m + 1) * 2),
      "sum": lambda: x16m.sum(dtype=torch.float32) if dtype != torch.float32 else x16m.sum(),
      "softmax": lambda: torch.softmax(rows, -1),
      "layernorm": lambda: torch.nn.functional.layer_norm(rows, (1024,), eps=1e-5) * gain + bias,
      "matmul512": lambda: torch.matmul(*mats[512]),
      "matmul1024": lambda: torch.matmul(*mats[1024]),
  }


def time_ms(fn, min_time=0.3, iters=10):
  fn()
  ts = []
  start = time.perf_counter()
  while len(ts) < iters or time.perf_counter() - start < min_time:
    t = time.perf_counter()
    fn()
    ts.append((time.perf_counter() - t) * 1e3)
  return statistics.median(ts)


def torch_round(args, only):
  import torch
  torch.set_num_threads(args.threads)
  out = {}
  for dt_name, dt in (("float32", torch.float32), (args.dtype, getattr(torch, args.dtype))):
    fns = torch_fns(torch, dt)
    for w in only:
      out[(w, dt_name)] = time_ms(fns[w])
  return out


def kiln_round(args, only):
  cmd = [args.kiln, "bench", "--dtype", args.dtype, "--only", ",".join(only), "--json", "--no-peak", "--first-runs", "1"]
  p = subprocess.run(cmd, capture_output=True, text=True)
  if p.returncode != 0:
    sys.exit(f"kiln bench failed ({p.returncode}):\n{p.stderr[-2000:]}")
  doc = json.loads(p.stdout)
  out = {}
  for r in doc["workloads"]:
    name = r["name"].split(" ")[0]
    if not r.get("ok", True):
      sys.exit(f"kiln's {r['name']} did not match its reference")
    out[(name, r["dtype"])] = r["steady_ms"]
  return out


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--kiln", required=True, help="path to the kiln CLI")
  ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
  ap.add_argument("--only", help="comma-separated workloads (default: " + ",".join(WORKLOADS) + ")")
  ap.add_argument("--rounds", type=int, default=3)
  ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch's threads (default: every CPU)")
  args = ap.parse_args()
  only = args.only.split(",") if args.only else WORKLOADS
  bad = [w for w in only if w not in WORKLOADS]
  if bad:
    sys.exit(f"unknown workload(s) {bad}; known: {WORKLOADS}")
  rounds = []
  for r in range(args.rounds):
    k = kiln_round(args, only)
    t = torch_round(args, only)
    rounds.append((k, t))
    print(f"# round {r + 1}/{args.rounds} done", file=sys.stderr)
  d = args.dtype
  med = lambda xs: statistics.median(xs)
  print(f"| workload | kiln f32 ms | kiln {d} ms | torch f32 ms | torch {d} ms | kiln {d}/f32 throughput | torch {d}/f32 throughput | kiln / torch in {d} |")
  print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
  for w in only:
    kf, kd = med([k[(w, "float32")] for k, _ in rounds]), med([k[(w, d)] for k, _ in rounds])
    tf, td = med([t[(w, "float32")] for _, t in rounds]), med([t[(w, d)] for _, t in rounds])
    # ratios per round, then the median (paired: the same round's numbers)
    kr = med([k[(w, "float32")] / k[(w, d)] for k, _ in rounds])
    tr = med([t[(w, "float32")] / t[(w, d)] for _, t in rounds])
    vs = med([k[(w, d)] / t[(w, d)] for k, t in rounds])
    print(f"| {w} | {kf:.3g} | {kd:.3g} | {tf:.3g} | {td:.3g} | {kr:.2f}x | {tr:.2f}x | {vs:.2f} |")


if __name__ == "__main__":
  main()
