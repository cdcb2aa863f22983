"""Summarize a pytest junit XML of tinygrad's test_ops.py run against kiln (scripts/peer-tests.sh).

Prints the pass/fail/skip counts; with --report FILE also writes a Markdown report: the counts and
every failing test with a one-line reason, grouped by reason (a missing method, a wrong dtype, a
wrong value, an exception kiln raised, ...), so the gaps to tinygrad's Tensor are easy to assign."""
import argparse
import os
import collections
import re
import sys
import xml.etree.ElementTree as ET


def one_line(text: str) -> str:
    text = (text or "").strip()
    # pytest's message is "ExcType: message"; keep the first line that says something
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return "(no message)"


def group_of(reason: str) -> str:
    m = re.search(r"object has no attribute '(\w+)'|type object '\w+' has no attribute '(\w+)'", reason)
    if m or re.search(r"module '[\w.]+' has no attribute", reason):
        return "missing method or attribute"
    if "dtype mismatch" in reason:
        return "wrong result dtype"
    if "shape mismatch" in reason:
        return "wrong result shape"
    if "Not equal to tolerance" in reason or "Arrays are not equal" in reason or "Mismatched elements" in reason:
        return "wrong values"
    if "incompatible function arguments" in reason or "unexpected keyword" in reason or "TypeError" in reason:
        return "calling convention (TypeError)"
    if re.match(r"kiln\.\w*Error\b", reason) or reason.startswith("Error:"):
        return "kiln.Error raised"
    if "not raised" in reason:
        return "expected exception not raised"
    if "PEER_TEST_TIMEOUT" in reason:
        return "timeout"
    m = re.match(r"(\w+(?:\.\w+)*):", reason)
    return f"other: {m.group(1)}" if m else "other"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("junit")
    ap.add_argument("--report")
    ap.add_argument("--title", default="tinygrad test_ops.py against kiln")
    ap.add_argument("--note", default="")
    a = ap.parse_args()

    root = ET.parse(a.junit).getroot()
    passed, failed, skipped = [], [], []
    for tc in root.iter("testcase"):
        name = f"{tc.get('classname', '').split('.')[-1]}.{tc.get('name')}"
        bad = tc.find("failure")
        if bad is None:
            bad = tc.find("error")
        skip = tc.find("skipped")
        if bad is not None:
            failed.append((name, one_line(bad.get("message") or bad.text)))
        elif skip is not None:
            skipped.append((name, one_line(skip.get("message") or skip.text)))
        else:
            passed.append(name)
    total = len(passed) + len(failed) + len(skipped)
    print(f"peer-tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped (of {total})")

    if a.report:
        groups = collections.defaultdict(list)
        for name, reason in failed:
            groups[group_of(reason)].append((name, reason))
        out = [f"# {a.title}", ""]
        if a.note:
            out += [a.note, ""]
        out += [f"**{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped** (of {total}).", ""]
        known = {}
        known_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known.txt")
        if os.path.exists(known_file):
            for line in open(known_file):
                if line.strip() and not line.startswith("#") and "\t" in line:
                    name, why = line.rstrip("\n").split("\t", 1)
                    known[name] = why
        for g in sorted(groups, key=lambda g: (-len(groups[g]), g)):
            out += [f"## {g} ({len(groups[g])})", ""]
            for n, r in sorted(groups[g], key=lambda nr: (nr[1], nr[0])):
                out.append(f"- `{n}`: {r.replace(chr(96), chr(39))}")
                if n in known:
                    out.append(f"  - why: {known[n]}")
            out.append("")
        stale = sorted(set(known) - {n for n, _ in failed})
        if stale:
            out += ["## explained in scripts/peer/known.txt but passing now (remove those lines)", ""]
            out += [f"- `{n}`" for n in stale] + [""]
        if skipped:
            out += [f"## skipped ({len(skipped)})", ""]
            out += [f"- `{n}`: {r}" for n, r in sorted(skipped)]
            out.append("")
        with open(a.report, "w") as f:
            f.write("\n".join(out))
        print(f"peer-tests: report written to {a.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
