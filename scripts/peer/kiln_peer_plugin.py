"""pytest plugin for scripts/peer-tests.sh: a per-test time limit (PEER_TEST_TIMEOUT seconds, default
300, 0 = none), so one slow or stuck test fails with a clear reason instead of holding the whole run.

The limit is a SIGALRM raised in the test's thread: it interrupts Python code, and C++ code as soon as
it returns to Python (a kernel that never returns still needs the outer `timeout`)."""
import os
import signal

import pytest


class PeerTestTimeout(Exception):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = int(os.environ.get("PEER_TEST_TIMEOUT", "300"))
    if limit <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise PeerTestTimeout(f"{item.name} ran past PEER_TEST_TIMEOUT={limit}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
