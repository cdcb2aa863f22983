"""The convnet the MNIST examples train and load: tinygrad's layers (kiln.nn), NCHW input."""
from kiln import Tensor, nn


class ConvNet:
    def __init__(self):
        self.c1 = nn.Conv2d(1, 8, 3)       # 28 -> 26, pooled to 13
        self.bn1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 3)      # 13 -> 11, pooled to 5
        self.l1 = nn.Linear(16 * 5 * 5, 10)

    def __call__(self, x: Tensor) -> Tensor:
        x = self.bn1(self.c1(x)).relu().max_pool2d(2)
        x = self.c2(x).relu().max_pool2d(2)
        return self.l1(x.flatten(1))

