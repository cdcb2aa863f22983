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
    state = {"inside": False, "result": None, "t0": 0.0, "elapsed": 0.0, "error": None}

    def worker():
        try:
            x = ta @ ta + 1.0
            state["inside"] = True
            t0 = state["t0"] = time.perf_counter()
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
    seen = [0.0]  # when this thread ran while A was inside (about once a millisecond)
    while th.is_alive():
        if state["inside"] and time.perf_counter() - seen[-1] > 1e-3:
            seen.append(time.perf_counter())
    th.join()
    th2.join()
    assert state["error"] is None, state["error"]
    np.testing.assert_allclose(state["result"], a @ a + 1, rtol=1e-3, atol=1e-3)
    assert other["v"] == 999000
    # This thread ran Python while A was inside realize: at least one of its observations falls in
    # the middle of A's realize. (Not a share of the time: on a loaded machine the OS may run this
    # thread for only a few slices of it, which asserting a share made a flaky test.)
    start, end = state["t0"], state["t0"] + state["elapsed"]
    middle = [t for t in seen if start + 0.1 * state["elapsed"] < t < end - 0.1 * state["elapsed"]]
    assert state["elapsed"] > 0 and middle, (state["elapsed"], len(seen))
