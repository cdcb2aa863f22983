"""The Python twin of examples/train_mlp_dist.cpp: the three-arm spiral classifier (MLP 2-64-64-3,
Adam) trained data-parallel with kiln.dist. Every rank holds the whole model and takes its share of
each batch; the ranks average their gradients (dist.all_reduce_grads) before every rank's Adam takes
the same step, so the loss curve is one rank's on the whole batch and every rank ends with the same
weights, bit for bit (checked at the end against rank 0's). mpi4py is not needed.

    mpirun -np 2 python examples/python/train_mlp_dist.py [--steps N]
    PYTHONPATH=build/python python examples/python/train_mlp_dist.py      (one rank)
"""
import argparse
import math
import sys

import numpy as np

import kiln.dist as dist
from kiln import Tensor, dtypes, nn

PER_CLASS, CLASSES, HIDDEN, BATCH = 300, 3, 64, 128


def spiral():
    """train_mlp.cpp's points: a 64-bit LCG, so every rank (and the C++ example) draws the same."""
    state = [42]

    def uniform():
        state[0] = (state[0] * 6364136223846793005 + 1442695040888963407) % 2**64
        return (state[0] >> 11) * 2.0**-53

    train, test = ([], []), ([], [])
    for c in range(CLASSES):
        for i in range(PER_CLASS):
            r = i / PER_CLASS
            t = 4.0 * c + 4.0 * r + 0.2 * (uniform() - 0.5) * 2
            d = test if i % 5 == 0 else train
            d[0].append((r * math.sin(t), r * math.cos(t)))
            d[1].append(c)
    x, y = train
    for i in range(len(y) - 1, 0, -1):  # Fisher-Yates, as train_mlp.cpp
        j = int(uniform() * (i + 1))
        x[i], x[j] = x[j], x[i]
        y[i], y[j] = y[j], y[i]
    as_np = lambda d: (np.array(d[0], np.float32), np.array(d[1], np.int32))  # noqa: E731
    return as_np(train), as_np(test), state


class MLP:
    def __init__(self):
        self.l1, self.l2, self.l3 = nn.Linear(2, HIDDEN), nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, CLASSES)

    def __call__(self, x: Tensor) -> Tensor:
        return self.l3(self.l2(self.l1(x).relu()).relu())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args()
    dist.init()
    ws, me = dist.world_size(), dist.rank()
    # this rank's rows of each batch: torch.tensor_split's shares (the first BATCH % ws get one more)
    lo = sum(BATCH // ws + (r < BATCH % ws) for r in range(me))
    rows = BATCH // ws + (me < BATCH % ws)

    (train_x, train_y), (test_x, test_y), _ = spiral()
    n = len(train_y)
    onehot = np.eye(CLASSES, dtype=np.float32)[train_y]
    Tensor.manual_seed(7)
    model = MLP()
    params = nn.state.get_parameters(model)
    for p in params:  # every rank starts from rank 0's weights
        p.assign(dist.broadcast(p.contiguous().realize(), 0)).realize()
    opt = nn.optim.Adam(params, lr=0.01)

    order = [3]

    def uniform():
        order[0] = (order[0] * 6364136223846793005 + 1442695040888963407) % 2**64
        return (order[0] >> 11) * 2.0**-53

    if me == 0:
        print(f"training a 2-{HIDDEN}-{HIDDEN}-{CLASSES} MLP on {n} spiral points data-parallel over {ws} rank(s) "
              f"(Adam, batch {BATCH})", flush=True)
    with Tensor.train():
        for step in range(args.steps):
            start = int(uniform() * (n - BATCH)) + lo
            xb, yb = Tensor(train_x[start:start + rows]), Tensor(onehot[start:start + rows])
            opt.zero_grad()
            summed = -(model(xb).log_softmax(1) * yb).sum()
            (summed * (ws / BATCH)).backward()  # the mean of the ranks' gradients is the batch's
            dist.all_reduce_grads(params, also=[summed])  # the backward pass and the loss, the transfers overlapped
            opt.step()
            if step % 50 == 0 or step == args.steps - 1:
                whole = dist.all_reduce(summed, "sum").item() / BATCH
                if me == 0:
                    print(f"step {step:4d}  loss {whole:.9g}", flush=True)
    differs = 0
    for p in params:
        differs |= int(not np.array_equal(p.numpy(), dist.broadcast(p, 0).numpy()))
    differs = dist.all_reduce(Tensor([differs], dtype=dtypes.int32), "max").item()
    acc = float((model(Tensor(test_x)).argmax(1).numpy() == test_y).mean())
    if me == 0:
        print(f"held-out accuracy: {acc * 100:.1f}% ({int(round(acc * len(test_y)))} of {len(test_y)})")
        print("FAILED: the ranks' weights differ" if differs else f"weights: bit-identical on all {ws} rank(s)")
    ok = not differs and (args.steps < 400 or acc >= 0.9)
    dist.finalize()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
