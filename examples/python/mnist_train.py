"""Trains a small convnet on synthetic MNIST-like digits (mnist_data.py) with kiln.nn, Adam and a
TinyJit'd training step, prints the accuracy on held-out digits (exits 1 below --min-acc), and
saves the weights as safetensors for mnist_infer.py.

    PYTHONPATH=build/python python examples/python/mnist_train.py --out /tmp/mnist.safetensors
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnist_data import exit_code, make_digits  # noqa: E402
from mnist_model import ConvNet  # noqa: E402

from kiln import Tensor, TinyJit, nn  # noqa: E402


def evaluate(model, images, labels, batch):
    predict = TinyJit(lambda x: model(x).argmax(axis=1))
    correct = 0
    for i in range(0, len(images) - batch + 1, batch):  # (whole batches: one shape for the jit)
        correct += int((predict(Tensor(images[i:i + batch])).numpy() == labels[i:i + batch]).sum())
    return correct / (len(images) // batch * batch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-acc", type=float, default=0.9)
    ap.add_argument("--out", default="mnist.safetensors")
    args = ap.parse_args()

    Tensor.manual_seed(0)
    train_x, train_y = make_digits(4096, seed=1)
    test_x, test_y = make_digits(512, seed=2)
    model = ConvNet()
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=args.lr)

    @TinyJit
    def train_step(x: Tensor, y: Tensor) -> Tensor:
        with Tensor.train():
            opt.zero_grad()
            loss = model(x).sparse_categorical_crossentropy(y)
            loss.backward()
            return loss.realize(*opt.schedule_step())

    rs = np.random.RandomState(0)
    start = time.perf_counter()
    for step in range(args.steps):
        idx = rs.randint(0, len(train_x), args.batch)
        loss = train_step(Tensor(train_x[idx]), Tensor(train_y[idx])).item()
        if step % 25 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss:.4f}  ({time.perf_counter() - start:.1f} s)", flush=True)
    acc = evaluate(model, test_x, test_y, 64)
    print(f"test accuracy {acc * 100:.1f}% after {args.steps} steps of {args.batch} ({time.perf_counter() - start:.1f} s)")
    nn.state.safe_save(nn.state.get_state_dict(model), args.out)
    print(f"saved {args.out}")
    return exit_code(acc, args.min_acc)


if __name__ == "__main__":
    sys.exit(main())
