"""Loads the convnet mnist_train.py saved (safetensors) and predicts fresh synthetic digits,
printing a few predictions and the accuracy (exits 1 below --min-acc).

    PYTHONPATH=build/python python examples/python/mnist_infer.py /tmp/mnist.safetensors
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnist_data import exit_code, make_digits  # noqa: E402
from mnist_model import ConvNet  # noqa: E402

from kiln import Tensor, nn  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("--min-acc", type=float, default=0.9)
    args = ap.parse_args()

    model = ConvNet()
    nn.state.load_state_dict(model, nn.state.safe_load(args.weights))
    images, labels = make_digits(256, seed=3)  # digits neither training nor its test saw
    assert not Tensor.training  # BatchNorm uses the running statistics it saved
    pred = model(Tensor(images)).argmax(axis=1).numpy()
    print("labels     ", " ".join(str(v) for v in labels[:16]))
    print("predictions", " ".join(str(v) for v in pred[:16]))
    acc = float((pred == labels).mean())
    print(f"accuracy {acc * 100:.1f}% on {len(labels)} new digits")
    return exit_code(acc, args.min_acc)


if __name__ == "__main__":
    sys.exit(main())
