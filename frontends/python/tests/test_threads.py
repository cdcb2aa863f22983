import threading
import time

import numpy as np

from kiln import Tensor


def test_two_threads_realize_at_once_without_the_gil():
    # Thread A realizes a large matmul; meanwhile this thread runs Python. If realize held the GIL,
    # this thread could not run while A is inside it, so the span it observes would be ~0.
    n = 768
    a = np.random.uniform(-1, 1, (n, n)).astype(np.float32)
    ta = Tensor(a)
    state = {"inside": False, "result": None, "elapsed": 0.0, "error": None}

    def worker():
        try:
            x = ta @ ta + 1.0
            state["inside"] = True
            t0 = time.perf_counter()
            x.realize()
            state["elapsed"] = time.perf_counter() - t0
            state["inside"] = False
            state["result"] = x.numpy()
        except Exception as e:  # reported below
            state["error"] = e
            state["inside"] = False

    other = {}

    def second():  # a second thread realizing something else at the same time
        other["v"] = (Tensor.arange(1000) * 2).sum().item()

    th, th2 = threading.Thread(target=worker), threading.Thread(target=second)
    th.start()
    th2.start()
    first = last = None
    while th.is_alive():
        if state["inside"]:
            now = time.perf_counter()
            first = first if first is not None else now
            last = now
    th.join()
    th2.join()
    assert state["error"] is None, state["error"]
    np.testing.assert_allclose(state["result"], a @ a + 1, rtol=1e-3, atol=1e-3)
    assert other["v"] == 999000
    assert first is not None and state["elapsed"] > 0
    assert last - first > 0.5 * state["elapsed"], (last - first, state["elapsed"])
