"""pytest plugin for scripts/onnx-suite.sh: each test's outcome is appended to ONNX_SUITE_RESULTS
(one line per event, written as it happens) so that a run that crashes or hangs inside kiln's C++
loses nothing: the script records the test that was running as crashed and starts pytest again,
which skips every test the file already has an outcome for.

Lines: "<test>\\tstarted", then "<test>\\t<passed|failed|skipped>\\t<one-line reason>" (the test
name without the runner's "_cpu" suffix). A hang in C++ that the per-test SIGALRM limit of
scripts/peer/kiln_peer_plugin.py cannot interrupt is ended by faulthandler after twice the limit:
the process exits after writing the stacks to ONNX_SUITE_RESULTS + ".hang" (not to stderr, which
pytest captures), and the script records the test as hung."""
import faulthandler
import os
import sys

import pytest

_results = None
_hang = None  # where faulthandler writes on a hang


def _name(nodeid: str) -> str:
    n = nodeid.rsplit("::", 1)[-1]
    return n[:-4] if n.endswith("_cpu") else n


def _one_line(text: str) -> str:
    # the exception's first line, and for numpy's multi-line assertions ("AssertionError:" then
    # "Not equal to tolerance ...", "Mismatched elements ...") its summary lines, without the
    # per-element listing and the arrays
    keep = []
    for line in (text or "").strip().splitlines():
        line = " ".join(line.split())
        if not line or line.startswith("[") or line.startswith(("Mismatch at", "First ")):
            continue
        if line.startswith(("ACTUAL:", "DESIRED:")) and ("array(" in line or len(line) > 80):
            break  # the arrays (two dtypes or counts are the message of those mismatches)
        keep.append(line)
        if not keep[0].endswith(":") or len(keep) == 6:
            break
    if len(keep) > 1 and keep[0].endswith(":"):
        keep[:2] = [keep[0] + " " + keep[1]]
    return " | ".join(keep)[:400] if keep else "(no message)"


def _write(*fields: str) -> None:
    _results.write("\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields) + "\n")
    _results.flush()


def _done(path: str) -> set:
    done = set()
    if os.path.exists(path):
        for line in open(path):
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[1] != "started":
                done.add(parts[0])
    return done


def pytest_configure(config):
    global _results
    path = os.environ.get("ONNX_SUITE_RESULTS")
    if path:
        _results = open(path, "a")
        global _hang
        _hang = open(path + ".hang", "a")


def pytest_collection_modifyitems(config, items):
    if _results is None:
        return
    done = _done(_results.name)
    keep = [i for i in items if _name(i.nodeid) not in done]
    dropped = [i for i in items if _name(i.nodeid) in done]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    if _results is not None:
        _write(_name(nodeid), "started")
    limit = int(os.environ.get("PEER_TEST_TIMEOUT", "0"))
    if limit > 0:
        faulthandler.dump_traceback_later(2 * limit, exit=True, file=_hang or sys.stderr)


def pytest_runtest_logfinish(nodeid, location):
    faulthandler.cancel_dump_traceback_later()


def pytest_runtest_logreport(report):
    if _results is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            _write(_name(report.nodeid), "skipped", _one_line(reason))
        elif report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            _write(_name(report.nodeid), "failed", _one_line(crash.message if crash else str(report.longrepr)))
        else:
            _write(_name(report.nodeid), "passed", "")
