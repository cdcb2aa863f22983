#!/usr/bin/env python3
"""train_peers.py - the `train_step` workload of `kiln bench` (one SGD step of the MLP 784-512-512-10,
batch 256: forward, cross-entropy, backward, update; learning rate 0 so every call is the same) in
tinygrad (TinyJit) and torch (2 threads), for the ratios in the issue notes. Median of 21 calls.

  TRAINING=1 DEV=CPU python bench/train_peers.py tinygrad     # DEV=CL for tinygrad's OpenCL
  python bench/train_peers.py torch
  build/tools/kiln/kiln bench --device cpu:0 --only train_step --jit   # kiln, same workload
"""
import sys, time, statistics
import numpy as np
B, D0, D1, D2, D3 = 256, 784, 512, 512, 10
rng = np.random.default_rng(0)
x = rng.random((B, D0), dtype=np.float32); lab = rng.integers(0, D3, B)
y = np.eye(D3, dtype=np.float32)[lab]
ws = [((rng.random((o, i), dtype=np.float32) - 0.5) * 2 / np.sqrt(i)).astype(np.float32) for i, o in [(D0, D1), (D1, D2), (D2, D3)]]
bs = [np.zeros(o, np.float32) for o in (D1, D2, D3)]
def med(f, n=21):
  for _ in range(3): f()
  t = []
  for _ in range(n):
    t0 = time.perf_counter(); f(); t.append((time.perf_counter() - t0) * 1e3)
  return statistics.median(t)
which = sys.argv[1]
if which == "torch":
  import torch
  torch.set_num_threads(2)
  P = [torch.tensor(a, requires_grad=True) for a in (ws[0], bs[0], ws[1], bs[1], ws[2], bs[2])]
  X, Y = torch.tensor(x), torch.tensor(y)
  opt = torch.optim.SGD(P, lr=0.0)
  def step():
    opt.zero_grad()
    h = torch.relu(X @ P[0].T + P[1]); h = torch.relu(h @ P[2].T + P[3]); o = h @ P[4].T + P[5]
    loss = -(torch.log_softmax(o, 1) * Y).sum() / B
    loss.backward(); opt.step(); return loss.item()
  print(f"torch step {med(step):.3f} ms")
else:
  from tinygrad import Tensor, TinyJit, nn
  from tinygrad.helpers import Context
  P = [Tensor(a).realize() for a in (ws[0], bs[0], ws[1], bs[1], ws[2], bs[2])]
  X, Y = Tensor(x).realize(), Tensor(y).realize()
  for p in P: p.requires_grad = True
  opt = nn.optim.SGD(P, lr=0.0)
  @TinyJit
  def step():
    opt.zero_grad()
    h = (X @ P[0].T + P[1]).relu(); h = (h @ P[2].T + P[3]).relu(); o = h @ P[4].T + P[5]
    loss = -(o.log_softmax(1) * Y).sum() / B
    loss.backward(); opt.step(); return loss.realize()
  print(f"tinygrad jitted step {med(lambda: step().item()):.3f} ms")
