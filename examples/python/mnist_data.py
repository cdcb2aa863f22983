"""Synthetic MNIST-like digits (no download): each digit 0-9 drawn as the strokes of its
seven-segment form on a 28x28 canvas, at a random position, size, stroke width and brightness, with
noise. The label is the digit whose strokes were drawn, so it follows from the image alone."""
import numpy as np

# segments: (x0, y0, x1, y1) in a unit box (0,0 top-left); a, b, c, d, e, f, g as on a display
_SEGMENTS = {
    "a": (0, 0, 1, 0), "b": (1, 0, 1, 0.5), "c": (1, 0.5, 1, 1), "d": (0, 1, 1, 1),
    "e": (0, 0.5, 0, 1), "f": (0, 0, 0, 0.5), "g": (0, 0.5, 1, 0.5),
}
_DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]
SIZE = 28


def make_digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n images (n, 1, 28, 28) float32 in [0, 1] and their labels (n,) int32."""
    rs = np.random.RandomState(seed)
    labels = rs.randint(0, 10, n).astype(np.int32)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    images = np.zeros((n, 1, SIZE, SIZE), np.float32)
    for i, label in enumerate(labels):
        w, h = rs.uniform(8, 14), rs.uniform(14, 20)
        x0, y0 = rs.uniform(3, SIZE - 3 - w), rs.uniform(3, SIZE - 3 - h)
        slant, width = rs.uniform(-0.2, 0.2), rs.uniform(1.0, 2.0)
        img = np.zeros((SIZE, SIZE), np.float32)
        for s in _DIGITS[label]:
            ax, ay, bx, by = _SEGMENTS[s]
            # the segment's end points on the canvas (slanted), and each pixel's distance to it
            p = np.array([x0 + ax * w + slant * (h - ay * h), y0 + ay * h])
            q = np.array([x0 + bx * w + slant * (h - by * h), y0 + by * h])
            d = q - p
            t = np.clip(((xx - p[0]) * d[0] + (yy - p[1]) * d[1]) / (d @ d), 0, 1)
            dist = np.hypot(xx - (p[0] + t * d[0]), yy - (p[1] + t * d[1]))
            img = np.maximum(img, np.clip(width + 0.5 - dist, 0, 1))
        images[i, 0] = img * rs.uniform(0.6, 1.0) + rs.normal(0, 0.1, (SIZE, SIZE))
    return np.clip(images, 0, 1), labels


def exit_code(acc, min_acc):
    """0 when the accuracy reaches min_acc, else 1 after saying so (the examples' pass/fail)."""
    if acc < min_acc:
        print(f"FAIL: accuracy {acc:.3f} is below {min_acc}")
        return 1
    return 0
